"""Date lines between a log's rows: ``while true; do date; nvidia-smi --query-gpu=...
--format=csv[,noheader]; sleep 5; done >> gpu.log``.

Each poll is a line of ``date`` (``Wed Dec  4 10:00:00 UTC 2024``, or any date
:func:`~._datelines.parse_date` reads, alone on its line or in a ``==== ... ====``
banner) and then the rows nvidia-smi printed, one per GPU, without a time of their
own -- with ``--format=csv`` its header again each time. No reader takes that as it
is: the CSV readers see the date line as a header, or lines of differing lengths.

:func:`find_date_blocks` recognises the shape on the head; the readers then see each
row with the time of the date line above it as a last cell, in nvidia-smi's
timestamp form (``2024/12/04 10:00:00.000``, local time: what ``date`` said, in this
machine's zone unless it named one), a header row with ``timestamp`` as its last
name, and each date line as a blank line: line numbers and the file's own column
numbers (for ``--map``) stay as they are. The rows
of one poll share its time, so a poll is one tick and a GPU without an index column
is numbered by its place in the poll, as nvidia-smi prints them. Rows before the
first date line are left as they are (and then do not read as the others do).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._datelines import parse_date

MIN_DATES = 2
"""Date lines the head must hold."""
ROW_SHARE = 0.8
"""Of the other nonblank lines of the head, the share that must be comma-separated rows."""
MAX_DATE_LINE = 64


def _date_only(text: str) -> float | None:
    """The time of a line that holds a date and nothing a row would (no separator)."""
    if len(text) > MAX_DATE_LINE or any(sep in text for sep in ",;\t|"):
        return None
    if not any(ch.isdigit() for ch in text):
        return None
    return parse_date(text)


def _is_header(text: str) -> bool:
    """A row of names (``utilization.gpu [%], memory.used [MiB]``): no cell a number."""
    cells = [c.strip() for c in text.split(",")]
    if not any(any(ch.isalpha() for ch in c) for c in cells):
        return False
    return not any(map(_number, cells))


def _number(cell: str) -> bool:
    try:
        return v.number(cell) is not None
    except v.CellError:
        return False


def _stamp_text(stamp: float) -> str:
    """``stamp`` as nvidia-smi writes its ``timestamp`` field, in local time."""
    whole = int(stamp)
    millis = min(999, round((stamp - whole) * 1000))
    return time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(whole)) + f".{millis:03d}"


@dataclass(frozen=True, slots=True)
class DateBlocks:
    """Rows timed by the date lines above them (see the module's docstring)."""

    label: str = "date lines between the rows"
    note: str = "each row timed by the date line above it"
    """What the detail line says of the reading."""

    def lines(self, numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
        """The rows as the readers see them (a new pass starts with no date known)."""
        stamp: str | None = None
        for number, text in numbered:
            stripped = text.strip()
            if not stripped:
                yield number, text
                continue
            found = _date_only(stripped)
            if found is not None:
                stamp = _stamp_text(found)
                yield number, ""
            elif stamp is None:
                yield number, text
            elif _is_header(stripped):
                yield number, stripped + ", timestamp"
            else:
                yield number, f"{stripped}, {stamp}"


def find_date_blocks(lines: Sequence[str]) -> DateBlocks | None:
    """:class:`DateBlocks` when the head is date lines each followed by rows."""
    dates = rows = others = 0
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if _date_only(text) is not None:
            dates += 1
        elif "," in text:
            rows += 1
        else:
            others += 1
    if dates < MIN_DATES or rows < dates:
        return None
    if rows < ROW_SHARE * (rows + others):
        return None
    return DateBlocks()
