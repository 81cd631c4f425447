"""Hand-made CSVs: a header row naming metrics in the common ways.

Header names are matched case-insensitively after folding separators
(``memory.used``, ``Memory Used``, ``memory_used`` are one name); a unit in the
name (``_mb``, ``_mib``, ``_gb``, ``[MiB]``, ``(GB)``, ``_pct``) sets the scale.
VRAM without a unit is read as MiB (what nvidia-smi and most scripts write)
unless the values are too large for that (then bytes) or fractional and small
(then GiB); the guess is written into ``StreamInfo.detail``.
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._csvio import (
    CsvPlan,
    apply_mapping,
    first_line,
    multiline_note,
    parse_sample,
    read_rows,
    trim_trailing,
)
from gputop_hints.sources.files._header_names import SIZE_SUFFIX, header_columns, is_number
from gputop_hints.sources.files._table import Assembler
from gputop_hints.sources.files._tabular import table_stream
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files._wide import WideLayout, read_wide, sample_rows, wide_layout
from gputop_hints.sources.files.mapping import constant_size
from gputop_hints.sources.files.spec import GPU_COLUMNS, FormatSpec
from gputop_hints.streams import (
    ReadCounters,
)

FORMAT = "csv"
LABEL = "CSV"

@dataclass
class WideCsvPlan(CsvPlan):
    """A CSV with every GPU's values side by side, numbered in the column names."""

    wide: WideLayout | None = None


def _delimiter(line: str) -> str:
    counts = {d: line.count(d) for d in (",", ";", "\t", "|")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def _line_number(head: Head, line: str) -> int:
    """The 1-based number of ``line`` in the head (its first nonblank line)."""
    return next((n for n, text in enumerate(head.lines, start=1) if text == line), 1)


def sniff(head: Head, mapping: Mapping[str, str] | None) -> CsvPlan | str:
    lines = head.nonblank
    if not lines:
        return "empty file"
    first = lines[0]
    if first.lstrip().startswith(("{", "[")):
        return "first line is JSON, not a CSV header"
    delimiter = _delimiter(first)
    try:
        header = [h.strip() for h in next(csv.reader([first], delimiter=delimiter))]
    except (csv.Error, StopIteration):
        return "header line is not CSV"
    header = trim_trailing(header, 1)
    numeric = sum(1 for h in header if is_number(h))
    if numeric * 2 >= len(header):
        return "no header row (the first line holds numbers)"
    if first.lstrip().startswith("#"):
        return "first line is a comment"
    ncols = len(header)
    data: list[list[str]] = []
    try:
        # Each line with its newline: a quoted cell spanning lines keeps its line break
        # (csv.reader joins list items without one: "26.11" and "0" read as "26.110").
        head_lines = [line + "\n" for line in lines[1:51]]
        for cells in csv.reader(head_lines, delimiter=delimiter, skipinitialspace=True):
            cells = trim_trailing([c.strip() for c in cells], ncols)
            if len(cells) == ncols:
                data.append(cells)
    except csv.Error:
        pass
    several = multiline_note(header, data)
    if several is not None:
        data = [[first_line(c) for c in r] for r in data]
    date_rows: list[list[str]] = []
    if any(h.strip().lower() == "date" for h in header):  # its order: the whole head tells
        with contextlib.suppress(csv.Error):
            date_rows = list(csv.reader(lines[51:], delimiter=delimiter, skipinitialspace=True))
    columns, notes = header_columns(header, data, data + date_rows)
    if several is not None:
        notes.append(several)
    try:
        columns, mapped = apply_mapping(columns, mapping, header, ncols, SIZE_SUFFIX)
    except KeyError as exc:
        return str(exc.args[0])
    notes += mapped
    metric_roles = [c for c in columns if c.role not in ("time", "gpu", "name", "uuid")]
    if not mapping:  # GPUs numbered in the column names win over names read one by one
        times = [c.position for c in columns if c.role == "time"]
        wide = wide_layout(header, data, times[0] if times else None)
        if wide is not None:
            wide_plan = WideCsvPlan(columns, ncols, header, delimiter=delimiter, notes=wide.notes)
            wide_plan.wide = wide
            wide_plan.rows = sample_rows(wide, data, 2)
            if data and not wide_plan.rows:
                return "no data row parses"
            return wide_plan
    if not metric_roles:
        has_const = bool(mapping) and any(
            constant_size(str(s)) is not None for s in (mapping or {}).values()
        )
        if not has_const:
            # Never the header itself: a file that is no log (/etc/shadow) has secrets there.
            return (
                f"line {_line_number(head, first)}, read as the header of {ncols} column(s), "
                "names no GPU metric (expected names like utilization.gpu or memory.used); "
                "name them with --map sm=COL,vram_used=COL"
            )
    plan = CsvPlan(columns, ncols, header, delimiter=delimiter, notes=notes)
    plan.rows = parse_sample(data, columns, 2)
    if data and not plan.rows:
        return "no data row parses"
    return plan


def open_generic(
    path: Path, plan: CsvPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of a hand-made CSV: one snapshot per tick of rows."""
    shape = "with header" if plan.header is not None else "without header"
    notes = [f"{LABEL} {shape}, {plan.ncols} column(s)", *plan.notes]
    wide = plan.wide if isinstance(plan, WideCsvPlan) else None
    if wide is not None and plan.header is not None:
        header = plan.header
        gpus = ", ".join(str(g.index) for g in wide.gpus)
        notes.insert(1, f"one column per GPU and metric (GPUs {gpus}, numbered in the names)")

        def wide_rows(
            source: TextSource, counters: ReadCounters, assembler: Assembler, vram: int | None
        ) -> Iterator[Snapshot]:
            return read_wide(source, wide, header, plan.delimiter, counters, assembler, vram)

        columns = [c for c in plan.columns if c.role == "time"]
        columns += [c for g in wide.gpus for c in g.columns if c.role not in ("time", "gpu")]
        return table_stream(
            path, FORMAT, LABEL, columns, plan.rows, notes, interval_s, mapping, wide_rows
        )

    def rows(
        source: TextSource, counters: ReadCounters, assembler: Assembler, vram_total: int | None
    ) -> Iterator[Snapshot]:
        return read_rows(source, plan, counters, assembler, vram_total=vram_total, reheader=None)

    return table_stream(
        path, FORMAT, LABEL, plan.columns, plan.rows, notes, interval_s, mapping, rows
    )


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_generic,
    metrics=GPU_COLUMNS,
    docs="Generic CSV",
)
