"""What the CSV readers share: records with line numbers (surviving malformed quoting),
the plan a CSV sniffer makes, ``--map`` over guessed columns, and the row reader.

Used by the nvidia-smi ``--query-gpu`` CSV, the generic CSV and the compute-apps
log; none of them imports another.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._gpu_polls import PollShape
from gputop_hints.sources.files._table import (
    Assembler,
    Column,
    Row,
    Samples,
    assemble,
    bad,
    note_bad_cells,
    parse_row,
    row_time,
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
    for start, text, cells in raw_records(lines, delimiter, on_bad):
        yield start, split_plain(text, delimiter) if cells is None else cells


def split_plain(text: str, delimiter: str) -> list[str]:
    """The cells ``csv.reader(skipinitialspace=True)`` reads from a line without quotes."""
    return [c.lstrip(" ") for c in text.split(delimiter)] if text else []


def raw_records(
    lines: Iterable[tuple[int, str]],
    delimiter: str,
    on_bad: BadLine,
    counted: dict[str, object] | None = None,
) -> Iterator[tuple[int, str, list[str] | None]]:
    """:func:`records` with each record's text: (first line number, the line, None)
    for a line csv reads as it splits (no quote, no CR, shorter than csv's field size
    limit: see :func:`split_plain`), (first line number, "", cells) for the others,
    read by ``csv.reader``. ``counted``: where a quoted cell of two lines read as its
    first (:func:`first_line`) is counted, as ``["multiline_cells"]``."""
    source = iter(lines)
    records = _Records(source, delimiter, on_bad, counted)
    limit = records.limit
    for number, text in source:
        if '"' not in text and "\r" not in text and len(text) < limit:
            yield records.plain(number), text, None
            continue
        found = records.read(number, text)
        if found is None:
            return
        if found is not False:
            yield found[0], "", found[1]


class _QuotedRecords:
    """``csv.reader`` over lines, for the records that need it: started at one line,
    it reads on from the lines while a quoted field spans them."""

    def __init__(self, lines: Iterator[tuple[int, str]], delimiter: str) -> None:
        self._lines = lines
        self._first: tuple[int, str] | None = None
        self.last = 0
        """The number of the last line read."""
        self._reader = csv.reader(self._feed(), delimiter=delimiter, skipinitialspace=True)

    def _feed(self) -> Iterator[str]:
        while True:
            if self._first is not None:
                number, line = self._first
                self._first = None
            else:
                following = next(self._lines, None)
                if following is None:
                    return
                number, line = following
            self.last = number
            yield line + "\n"

    def record(self, number: int, line: str) -> list[str] | None:
        """The record that starts with this line (None: the lines ran out); raises
        csv.Error for a malformed one."""
        self._first = (number, line)
        return next(self._reader, None)


def first_line(cell: str) -> str:
    """A quoted cell of two lines whose first is a decimal reading (``"26.11\n0"``: a
    script's captured output with a trailing line) read as that line; any other cell
    as it is -- ``"4\n5"`` may be a 45 broken in two, and stays a bad cell."""
    parts = cell.split("\n")
    if len(parts) == 2 and _DECIMAL.match(parts[0].strip()) and len(parts[1].strip()) <= 8:
        return parts[0]
    return cell


_DECIMAL = re.compile(r"^[-+]?\d+\.\d+$")


def multiline_note(header: list[str], rows: list[list[str]]) -> str | None:
    """The detail's note on quoted cells of several lines in the head (``"26.11\n0"``),
    which are read as their first line; None when there are none."""
    labels = sorted({i for r in rows for i, c in enumerate(r) if "\n" in c and first_line(c) != c})
    if not labels:
        return None
    names = ", ".join(header[i] if i < len(header) else f"column {i + 1}" for i in labels)
    return f"quoted cells of several lines ({names}): their first line read"


class _Records:
    """Record numbering over lines: a plain line is a record of its own; a line that
    needs ``csv.reader`` (a quote, a CR, a field past csv's limit) starts a record that
    may run on over the next lines (:class:`_QuotedRecords`). A record's number is the
    line after the previous record's last."""

    def __init__(
        self,
        lines: Iterator[tuple[int, str]],
        delimiter: str,
        on_bad: BadLine,
        found: dict[str, object] | None = None,
    ):
        self.quoted = _QuotedRecords(lines, delimiter)
        self.on_bad = on_bad
        self.found = found
        """Where cells of several lines are counted (``found["multiline_cells"]``:
        [records, first line]), when given."""
        self.limit = csv.field_size_limit()
        self.end = 0
        """The last line of the previous record."""

    def plain(self, number: int) -> int:
        """The number of a plain line's record (the line read as it splits)."""
        start, self.end = self.end + 1, number
        return start

    def read(self, number: int, text: str) -> tuple[int, list[str]] | Literal[False] | None:
        """The (number, cells) of the record that starts with a line csv must read;
        False when it is malformed (counted as a bad line), None when the lines ran out."""
        quoted = self.quoted
        try:
            cells = quoted.record(number, text)
        except csv.Error as exc:
            self.on_bad(quoted.last, f"malformed CSV: {exc}")
            self.end = quoted.last
            return False
        if cells is None:
            return None
        # A record spanning k physical lines started k-1 lines before its end.
        start, self.end = self.end + 1, quoted.last
        if start != self.end and any("\n" in c for c in cells):
            read = [first_line(c) if "\n" in c else c for c in cells]
            if read != cells and self.found is not None:
                seen = self.found.get("multiline_cells")
                self.found["multiline_cells"] = (
                    [seen[0] + 1, seen[1]] if isinstance(seen, list) else [1, start]
                )
            cells = read
        return start, cells


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
    """The snapshots of the rows after the sniffed plan. ``reheader`` is asked about
    records whose first cell starts with a letter: the columns of a header there
    (None: not a header)."""
    reader = _RowReader(plan, counters, vram_total, reheader)
    if type(assembler) is not Assembler:  # a PollAssembler: rows grouped in polls
        return assemble(reader.rows(source.lines()), assembler)
    return reader.snapshots(source.lines(), assembler)  # no generator around it


_NOT_METRIC = frozenset({"time", "date", "gpu", "name", "uuid", "bus_id", "driver"})

_KNOWN_ROWS = 1024
_KNOWN_CHARS = 128 * 1024
"""Rows :class:`_RowReader` remembers by their text after the time, and the most text
they may hold (cleared when either is reached)."""

_Known = tuple[dict[str, Any], "int | str | None", list[tuple[str, str]], "Samples | None"]
"""What a row read besides its time: fields, key, bad cells, the samples it shares."""


class _RowReader:
    """Records -> rows. A row whose text after its time (the first cell) is that of
    a row read before takes what that row read: only its time is read (parse_row
    reads the cells but the time of such a row alike, see there)."""

    def __init__(
        self,
        plan: CsvPlan,
        counters: ReadCounters,
        vram_total: int | None,
        reheader: Callable[[list[str]], list[Column] | None] | None,
    ) -> None:
        self.plan = plan
        self.counters = counters
        self.vram_total = vram_total
        self.reheader = reheader
        self.columns = plan.columns
        self.ncols = plan.ncols
        self.header_norm = [h.lower() for h in plan.header] if plan.header else None
        self.header0 = self.header_norm[0] if self.header_norm else None
        self.skipped_header = plan.header is None
        self.known: dict[str, _Known] = {}
        self.known_chars = 0
        self.time_first = _time_first(self.columns)
        self.metric_positions = [c.position for c in self.columns if c.role not in _NOT_METRIC]
        """Where the metric cells are: a row with all of them empty is no sample."""

    def rows(self, lines: Iterable[tuple[int, str]]) -> Iterator[Row]:
        """The rows of the lines. A plain line whose text after the time is known reads
        only its time, unless that cell is empty (a blank row), reads as the header's
        first name or starts with a letter (a header, with a ``reheader``): those are
        read whole (:meth:`_row`), as every other record."""
        delimiter = self.plan.delimiter
        counters = self.counters
        for line, text, cells in raw_records(
            lines, delimiter, counters.note_bad_line, counters.found
        ):
            rest: str | None = None
            if cells is None:
                try:
                    rest, hit, ts, absolute = self._known_row(text)
                except v.CellError as exc:
                    bad(counters, line, str(exc))
                    continue
                if hit is not None:
                    again = Row(line, ts, absolute, hit[1], hit[0], hit[2], hit[3])
                    if hit[2]:
                        note_bad_cells(counters, again)
                    yield again
                    continue
                cells = text.split(delimiter)
            row = self._row(line, cells, rest)
            if row is not None:
                yield row

    def snapshots(
        self, lines: Iterable[tuple[int, str]], assembler: Assembler
    ) -> Iterator[Snapshot]:
        """``assemble(self.rows(lines), assembler)`` in one loop (records, rows, ticks):
        :func:`raw_records`, :meth:`rows` and :func:`assemble` as they read, a known
        row without a GPU key nor bad cells handed to :meth:`Assembler.add_keyless`
        (no Row made). A known row whose time cell reads as a plain number
        (:func:`_plain_time`) takes the short way past :meth:`_known_row`: such a cell
        is neither empty, nor a header's first name (unless that name is a number
        too), nor starts with a letter."""
        delimiter = self.plan.delimiter
        counters = self.counters
        add = assembler.add
        add_keyless = assembler.add_keyless
        source = iter(lines)
        records = _Records(source, delimiter, counters.note_bad_line, counters.found)
        limit = records.limit
        known = self.known
        short = self.time_first and _plain_time(self.header0) is None
        end = 0  # records.end, kept here between plain lines (synced around read)
        ts: float | None  # the row's time: the short way's, or _known_row's
        for number, text in source:
            if '"' not in text and "\r" not in text and len(text) < limit:
                line, end = end + 1, number
                hit = None
                if short:
                    time_cell, sep, tail = text.partition(delimiter)
                    hit = known.get(tail) if sep else None
                    if hit is not None:
                        try:  # _plain_time, inline
                            ts = float(time_cell)
                        except ValueError:
                            ts = 0.0
                        absolute = True
                        if not (1e8 <= ts < 1e11 and "_" not in time_cell):
                            hit = None
                if hit is None:
                    try:
                        rest, hit, ts, absolute = self._known_row(text)
                    except v.CellError as exc:
                        bad(counters, line, str(exc))
                        continue
                if hit is not None:
                    if hit[1] is None and not hit[2]:
                        snap = add_keyless(ts, hit[0], hit[3])
                    else:
                        again = Row(line, ts, absolute, hit[1], hit[0], hit[2], hit[3])
                        if hit[2]:
                            note_bad_cells(counters, again)
                        snap = add(again)
                    if snap is not None:
                        yield snap
                    continue
                row = self._row(line, text.split(delimiter), rest)
            else:
                records.end = end
                found = records.read(number, text)
                end = records.end
                if found is None:
                    break
                if found is False:
                    continue
                row = self._row(found[0], found[1], None)
            if row is not None:
                snap = add(row)
                if snap is not None:
                    yield snap
            short = self.time_first and _plain_time(self.header0) is None  # after _follow
            known = self.known
        last = assembler.flush()
        if last is not None:
            yield last

    def _known_row(self, text: str) -> tuple[str | None, _Known | None, float | None, bool]:
        """A plain line as :meth:`rows` reads it first: (its text after the time, to
        remember its row by, or None; what a row of that text read before, or None;
        the time and whether it is absolute, when that row is known). A known row whose
        time cell is empty, reads as the header's first name or starts with a letter
        (a header, with a ``reheader``) is read whole. Raises CellError for a known
        row's unreadable time."""
        if not self.time_first:
            return None, None, None, False
        time_cell, found, rest = text.partition(self.plan.delimiter)
        if not found:
            return None, None, None, False
        hit = self.known.get(rest)
        if hit is not None:
            time_cell = time_cell.strip()
            if (
                time_cell
                and time_cell.lower() != self.header0
                and not (self.reheader is not None and time_cell[:1].isalpha())
            ):
                ts, absolute = row_time(time_cell)
                return rest, hit, ts, absolute
        return rest, None, None, False

    def _row(self, line: int, cells: list[str], rest: str | None) -> Row | None:
        """The row of a record (None: skipped, or counted bad); ``rest``: the text after
        its time, remembered with what the row read."""
        cells = [c.strip() for c in cells]
        ncols = self.ncols
        if len(cells) > ncols:
            trim_trailing(cells, ncols)
        if not any(cells):
            return None
        header_norm = self.header_norm
        if not self.skipped_header:
            self.skipped_header = True
            if [c.lower() for c in cells] == header_norm:
                return None
        if (
            header_norm is not None
            and cells[0].lower() == header_norm[0]
            and [c.lower() for c in cells] == header_norm
        ):
            return None  # the header repeated mid-file (logs appended with >>)
        again = (
            self.reheader(cells)
            if self.reheader is not None and cells[0][:1].isalpha()
            else None
        )
        if again is not None:
            if self.plan.header is not None:  # a different query appended: follow it
                self._follow(again, cells)
            return None
        if len(cells) != ncols:
            bad(self.counters, line, f"expected {ncols} fields, found {len(cells)}")
            return None
        if self.metric_positions and not any(cells[p] for p in self.metric_positions):
            return None  # a row of a logger's other metrics (a loss), no GPU sample
        try:
            row = parse_row(cells, self.columns, line)
        except v.CellError as exc:
            bad(self.counters, line, str(exc))
            return None
        if row.bad_cells:
            note_bad_cells(self.counters, row)
        if self.vram_total is not None and row.fields.get("vram_total") is None:
            row.fields["vram_total"] = self.vram_total
        if rest is not None:
            self._remember(rest, (row.fields, row.key, row.bad_cells, row.samples))
        return row

    def _remember(self, rest: str, known: _Known) -> None:
        self.known_chars += len(rest)
        if len(self.known) >= _KNOWN_ROWS or self.known_chars > _KNOWN_CHARS:
            self.known.clear()
            self.known_chars = len(rest)
        self.known[rest] = known

    def _follow(self, columns: list[Column], header: list[str]) -> None:
        """Read on with the columns of a new header."""
        self.columns = columns
        self.ncols = len(header)
        self.header_norm = [c.lower() for c in header]
        self.header0 = self.header_norm[0]
        self.known.clear()
        self.known_chars = 0
        self.time_first = _time_first(columns)
        self.metric_positions = [c.position for c in columns if c.role not in _NOT_METRIC]


def _time_first(columns: Sequence[Column]) -> bool:
    """Whether the time is the first cell, and the only time column (no dmon date)."""
    times = [c.position for c in columns if c.role in ("time", "date")]
    return times == [0]


def _plain_time(cell: str | None) -> float | None:
    """The time of a cell that reads as an absolute epoch number in seconds (what
    :func:`row_time` makes of it, absolute), else None (the cell is read the long
    way). ``float`` reads no "/" nor ":" (no date nor time of day), ignores the
    spaces around the number, and reads no word but inf and nan, left out here."""
    if cell is None:
        return None
    try:
        value = float(cell)
    except ValueError:
        return None
    if 1e8 <= value < 1e11 and "_" not in cell:
        return value
    return None
