"""What the CSV readers share: records with line numbers (surviving malformed quoting),
the plan a CSV sniffer makes, ``--map`` over guessed columns, and the row reader.

Used by the nvidia-smi ``--query-gpu`` CSV, the generic CSV and the compute-apps
log; none of them imports another.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._gpu_polls import PollShape
from gputop_hints.sources.files._table import (
    Assembler,
    Column,
    Row,
    assemble,
    bad,
    note_bad_cells,
    parse_row,
)
from gputop_hints.sources.files._text import TextSource
from gputop_hints.sources.files.mapping import constant_size, normalise, resolve
from gputop_hints.streams import ReadCounters
from gputop_hints.units import MIB

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


@dataclass
class CsvPlan:
    columns: list[Column]
    ncols: int
    header: list[str] | None
    delimiter: str = ","
    notes: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    units: bool = False
    inferred: dict[int, str] = field(default_factory=dict)
    """A headerless file's columns told by their values: 1-based column -> the
    nvidia-smi field it was taken for (--map entries left out)."""
    polls: PollShape | None = None
    """Rows grouped in polls of several GPUs without an index column (see
    ``_gpu_polls``); None otherwise."""


def split_simple(line: str, delimiter: str = ",") -> list[str]:
    return [c.strip() for c in line.split(delimiter)]


def trim_trailing(cells: list[str], ncols: int) -> list[str]:
    while len(cells) > ncols and not cells[-1].strip():
        cells.pop()
    return cells


def apply_mapping(
    columns: list[Column],
    mapping: Mapping[str, str] | None,
    header: list[str] | None,
    ncols: int,
    unit_scale: Mapping[str, float],
) -> tuple[list[Column], list[str]]:
    """Put --map entries over the guessed columns. Returns (columns, notes)."""
    notes: list[str] = []
    for role, spec in normalise(mapping).items():
        if role == "vram_total" and constant_size(spec) is not None:
            continue  # a constant, applied by the stream
        found = resolve(spec, header, ncols)
        if found is None:
            raise KeyError(f"--map {role}={spec}: no such column")
        pos, unit = found
        scale: float = MIB
        if unit is not None:
            scale = unit_scale.get(unit, v.BYTE_UNITS.get(unit, v.RATE_UNITS.get(unit, MIB)))
        label = header[pos] if header is not None and pos < len(header) else f"column {pos + 1}"
        columns = [c for c in columns if c.role != role and c.position != pos]
        columns.append(Column(pos, role, scale, label))
        notes.append(f"--map {role}={spec}")
    return columns, notes


def parse_sample(data: list[list[str]], columns: list[Column], first_line: int) -> list[Row]:
    """Rows of the sniffed head that parse (for the interval and GPU count)."""
    parsed = (_try_row(cells, columns, n) for n, cells in enumerate(data, start=first_line))
    return [row for row in parsed if row is not None]


def _try_row(cells: list[str], columns: list[Column], line: int) -> Row | None:
    try:
        return parse_row(cells, columns, line)
    except v.CellError:
        return None


def read_rows(
    source: TextSource,
    plan: CsvPlan,
    counters: ReadCounters,
    assembler: Assembler,
    vram_total: int | None = None,
    reheader: Callable[[list[str]], list[Column] | None] | None = None,
) -> Iterator[Snapshot]:
    def rows() -> Iterator[Row]:
        columns = plan.columns
        ncols = plan.ncols
        header_norm = [h.lower() for h in plan.header] if plan.header else None
        skipped_header = plan.header is None
        for line, cells in records(source.lines(), plan.delimiter, counters.note_bad_line):
            cells = [c.strip() for c in cells]
            if len(cells) > ncols:
                trim_trailing(cells, ncols)
            if not any(cells):
                continue
            if not skipped_header:
                skipped_header = True
                if [c.lower() for c in cells] == header_norm:
                    continue
            if (
                header_norm is not None
                and cells[0].lower() == header_norm[0]
                and [c.lower() for c in cells] == header_norm
            ):
                continue  # the header repeated mid-file (logs appended with >>)
            again = reheader(cells) if reheader is not None else None
            if again is not None:
                if plan.header is not None:  # a different query appended: follow it
                    columns = again
                    ncols = len(cells)
                    header_norm = [c.lower() for c in cells]
                continue
            if len(cells) != ncols:
                bad(counters, line, f"expected {ncols} fields, found {len(cells)}")
                continue
            try:
                row = parse_row(cells, columns, line)
            except v.CellError as exc:
                bad(counters, line, str(exc))
                continue
            if row.bad_cells:
                note_bad_cells(counters, row)
            if vram_total is not None and row.fields.get("vram_total") is None:
                row.fields["vram_total"] = vram_total
            yield row

    yield from assemble(rows(), assembler)
