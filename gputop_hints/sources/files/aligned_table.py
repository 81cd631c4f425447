"""Whitespace-aligned tables printed by people's own monitoring scripts.

A header line naming the columns (``Time  GPU%  Mem Used  Mem Total  Temp  Power``;
a name may hold single spaces, columns are 2+ spaces apart or aligned), possibly
after a banner (``==== GPU monitor started 2024-10-31 23:04:10 ====``,
``Monitoring GPU 0 (NVIDIA A100-SXM4-40GB)``), then one row per sample:
``23:04:10   99%   812MiB   6144MiB   65C   210.5W`` or
``2024-10-31 23:04:10  99  812  6144  65  210.5``. The names are read as the
generic CSV reads its header (:mod:`._header_names`); units in the cells or the
header are honoured. A time of day alone takes its date from the last banner
that has one (rolling over at midnight); without one, times are relative.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._csvio import apply_mapping
from gputop_hints.sources.files._datelines import date_line
from gputop_hints.sources.files._header_names import SIZE_SUFFIX, header_columns, is_number
from gputop_hints.sources.files._table import (
    Assembler,
    Column,
    Row,
    assemble,
    note_bad_cells,
    parse_row,
)
from gputop_hints.sources.files._tabular import table_stream
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.spec import GPU_COLUMNS, FormatSpec
from gputop_hints.streams import ReadCounters

FORMAT = "aligned-table"
LABEL = "whitespace-aligned table"

HEADER_SEARCH_LINES = 10
"""The header is looked for in this many nonblank lines (the rest is a banner)."""

_GAP = re.compile(r"\s{2,}|\t")
_DATE_TOKEN = re.compile(r"^\d{4}[-/]\d{2}[-/]\d{2}$")
_TIME_TOKEN = re.compile(r"^\d{1,2}:\d{2}:\d{2}(?:\.\d+)?$")
_UNIT_TOKEN = re.compile(r"^(?:%|[KMGT]i?B|B|C|°C|W|MHz)$", re.IGNORECASE)
_HMS = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(\.\d+)?$")
_BANNER_START = ("=", "-", "#", "*", "~", "+")
_ROLLOVER_S = 12 * 3600
"""A time of day this much earlier than the last is the next day's."""


def _header_name(raw: str) -> str:
    """'GPU%' -> 'GPU %' (so it reads as ``gpu_percent``); other names as they are."""
    return re.sub(r"(?<=[A-Za-z])%", " %", raw)


def split_cells(line: str) -> list[str]:
    """Cells 2+ spaces (or a tab) apart."""
    return [c for c in _GAP.split(line.strip()) if c]


def _tokens(line: str) -> list[str]:
    """Cells one space apart: a date and its time kept together, a unit with its number."""
    out: list[str] = []
    for tok in line.split():
        if out and _TIME_TOKEN.match(tok) and _DATE_TOKEN.match(out[-1]):
            out[-1] += " " + tok
        elif out and _UNIT_TOKEN.match(tok) and is_number(out[-1]):
            out[-1] += tok.lstrip("°")
        else:
            out.append(tok)
    return out


def cells_of(line: str, ncols: int) -> list[str]:
    """A row's cells: 2+ spaces apart, else single-space tokens when those fit the header."""
    cells = split_cells(line)
    if len(cells) == ncols:
        return cells
    alt = _tokens(line)
    return alt if len(alt) == ncols else cells


@dataclass
class AlignedPlan:
    header_line: int
    """1-based line number of the header."""
    header: list[str]
    columns: list[Column]
    date: dt.date | None
    """The banner's date, for rows that give a time of day alone."""
    notes: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)


class _Dates:
    """Puts a date in front of time-of-day cells: the banner's, one more after midnight."""

    def __init__(self, date: dt.date | None) -> None:
        self.date = date
        self.last: float | None = None

    def banner(self, line: str) -> bool:
        """Take the date of a banner line; whether the line is one."""
        stamp = date_line(line)
        if stamp is None:
            return False
        moment = dt.datetime.fromtimestamp(stamp)
        self.date = moment.date()
        self.last = moment.hour * 3600 + moment.minute * 60 + moment.second
        return True

    def stamp(self, cell: str) -> str:
        m = _HMS.match(cell.strip())
        if m is None or self.date is None:
            return cell
        hh, mm, ss, frac = m.groups()
        of_day = int(hh) * 3600 + int(mm) * 60 + int(ss)
        if self.last is not None and of_day < self.last - _ROLLOVER_S:
            self.date += dt.timedelta(days=1)  # past midnight (a small step back is not)
        self.last = of_day
        return f"{self.date.isoformat()} {int(hh):02d}:{mm}:{ss}{frac or ''}"


def _find_header(lines: list[str]) -> tuple[int, list[str]] | str:
    for i, line in enumerate(lines[:HEADER_SEARCH_LINES]):
        stripped = line.strip()
        if stripped.startswith(_BANNER_START) or date_line(stripped) is not None:
            continue
        cells = split_cells(stripped)
        if len(cells) < 2 or any(is_number(c) for c in cells):
            continue
        if "," in stripped or "|" in stripped or ";" in stripped:
            continue
        columns, _ = header_columns([_header_name(c) for c in cells], [])
        if any(c.role not in ("time", "gpu", "name", "uuid") for c in columns):
            return i, cells
    return "no header line naming GPU metrics in columns 2+ spaces apart"


def _rows(
    lines: Iterable[tuple[int, str]],
    plan: AlignedPlan,
    columns: list[Column],
    counters: ReadCounters,
    vram_total: int | None,
) -> Iterator[Row]:
    ncols = len(plan.header)
    header_norm = [h.lower() for h in plan.header]
    dates = _Dates(plan.date)
    times = [c.position for c in columns if c.role == "time"]
    for number, line in lines:
        if number <= plan.header_line:
            if number < plan.header_line:
                dates.banner(line)
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(_BANNER_START):
            dates.banner(stripped)  # the script restarted: its date, when it has one
            continue
        cells = cells_of(stripped, ncols)
        if [c.lower() for c in cells] == header_norm:
            continue  # the header printed again
        if len(cells) != ncols:
            if dates.banner(stripped):
                continue
            counters.note_bad_line(number, f"expected {ncols} columns, found {len(cells)}")
            continue
        for pos in times:
            cells[pos] = dates.stamp(cells[pos])
        try:
            row = parse_row(cells, columns, number)
        except v.CellError as exc:
            counters.note_bad_line(number, str(exc))
            continue
        note_bad_cells(counters, row)
        if vram_total is not None and row.fields.get("vram_total") is None:
            row.fields["vram_total"] = vram_total
        yield row


def sniff(head: Head, mapping: Mapping[str, str] | None) -> AlignedPlan | str:
    lines = head.lines
    nonblank = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    found = _find_header([line for _n, line in nonblank])
    if isinstance(found, str):
        return found
    index, header = found
    header_line = nonblank[index][0]
    data = [
        cells_of(line, len(header))
        for n, line in nonblank[index + 1 : index + 51]
        if not line.strip().startswith(_BANNER_START)
    ]
    fitting = [cells for cells in data if len(cells) == len(header)]
    if not fitting or len(fitting) * 2 < len(data):
        return f"rows do not line up with the {len(header)} columns of the header"
    columns, notes = header_columns([_header_name(c) for c in header], fitting)
    for column in columns:
        column.label = header[column.position]  # as the file writes it, for messages
    try:
        columns, mapped = apply_mapping(columns, mapping, header, len(header), SIZE_SUFFIX)
    except KeyError as exc:
        return str(exc.args[0])
    dates = _Dates(None)
    for _n, line in nonblank[:index]:
        dates.banner(line)
    plan = AlignedPlan(header_line, header, columns, dates.date, [*notes, *mapped])
    plan.rows = list(
        _rows(enumerate(lines[: nonblank[-1][0]], start=1), plan, columns, ReadCounters(), None)
    )
    if not plan.rows:
        return "no row under the header reads"
    if plan.rows[0].timestamp is not None and not plan.rows[0].absolute:
        plan.notes.append("times of day without a dated banner: relative times")
    return plan


def open_aligned(
    path: Path, plan: AlignedPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of a whitespace-aligned table: one snapshot per tick of rows."""
    notes = [f"{LABEL}, {len(plan.header)} column(s)", *plan.notes]
    if plan.date is not None:
        notes.append(f"times of day dated from the banner ({plan.date.isoformat()})")

    def rows(
        source: TextSource, counters: ReadCounters, assembler: Assembler, vram_total: int | None
    ) -> Iterator[Snapshot]:
        read = _rows(source.lines(), plan, plan.columns, counters, vram_total)
        return assemble(read, assembler)

    return table_stream(
        path, FORMAT, LABEL, plan.columns, plan.rows, notes, interval_s, mapping, rows
    )


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_aligned,
    metrics=GPU_COLUMNS,
    docs="Whitespace-aligned tables",
)
