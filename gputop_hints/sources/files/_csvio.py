"""CSV records from a line stream, with line numbers, surviving malformed quoting."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator

BadLine = Callable[[int, str], None]


def records(
    lines: Iterable[tuple[int, str]], delimiter: str, on_bad: BadLine
) -> Iterator[tuple[int, list[str]]]:
    """(first line number of the record, cells). Quoted fields may span lines;
    an unterminated quote costs at most csv's field size limit (128 KiB) of memory
    before the record is dropped as malformed."""
    numbers: list[int] = []

    def feed() -> Iterator[str]:
        for number, line in lines:
            numbers.append(number)
            if len(numbers) > 4096:
                del numbers[:-2048]
            yield line + "\n"

    reader = csv.reader(feed(), delimiter=delimiter, skipinitialspace=True)
    last_end = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            start = numbers[-1] if numbers else last_end + 1
            on_bad(start, f"malformed CSV: {exc}")
            last_end = numbers[-1] if numbers else last_end
            continue
        end = numbers[-1] if numbers else last_end + 1
        # A record spanning k physical lines started k-1 lines before its end.
        start = last_end + 1
        last_end = end
        yield start, cells
