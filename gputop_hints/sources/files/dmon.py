"""``nvidia-smi dmon`` output, for any ``-s`` selection and ``-o D/T/DT``.

The column names come from the ``# gpu pwr gtemp ...`` line (and units from the
``# Idx W C ...`` line under it); dmon prints that pair again every so often, so
header lines may appear anywhere. ``-`` means the value is not available.
``--format csv`` (newer drivers) prints the same lines with commas between the
fields (``#gpu,pwr,gtemp,...``): the header's separator is the file's.
dmon says "MB" for fb/bar1 and "MB/s" for rxpci/txpci; NVML counts those in
binary units, so we read them as MiB and MiB/s.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._table import (
    Assembler,
    Column,
    Row,
    assemble,
    bad,
    note_bad_cells,
    parse_row,
)
from gputop_hints.sources.files._tabular import table_stream
from gputop_hints.sources.files._text import Head, HeaderMemo, TextSource
from gputop_hints.sources.files.spec import GPU_COLUMNS, FormatSpec
from gputop_hints.streams import (
    METRIC_THROTTLE,
    ReadCounters,
)
from gputop_hints.units import MIB

FORMAT = "nvidia-smi-dmon"
LABEL = "nvidia-smi dmon"

DMON_COLUMNS: dict[str, tuple[str, float]] = {
    "date": ("date", 1.0),
    "time": ("time", 1.0),
    "gpu": ("gpu", 1.0),
    "pwr": ("power", 1.0),
    "gtemp": ("temp", 1.0),
    "sm": ("sm", 1.0),
    "mem": ("mem", 1.0),
    "pclk": ("sm_clock", 1.0),
    "pviol": ("throttle_pct:sw_power_cap", 1.0),
    "tviol": ("throttle_pct:sw_thermal", 1.0),
    "fb": ("vram_used", MIB),
    "rxpci": ("pcie_rx", MIB),
    "txpci": ("pcie_tx", MIB),
}
KNOWN_DMON = {
    *DMON_COLUMNS,
    "mtemp",
    "enc",
    "dec",
    "jpg",
    "ofa",
    "mclk",
    "bar1",
    "ccpm",
    "sbecc",
    "dbecc",
    "pci",
    "nvlink",
}


@dataclass
class DmonPlan:
    columns: list[Column]
    ncols: int
    names: list[str]
    rows: list[Row] = field(default_factory=list)
    comma: bool = False
    """``--format csv``: fields are separated by commas (and maybe spaces), not blanks."""


def header_names(line: str) -> list[str] | None:
    """'# gpu pwr sm' (or '#gpu,pwr,sm') -> ['gpu', 'pwr', 'sm']; None for a units
    line or anything else."""
    stripped = line.strip()
    if not stripped.startswith("#"):
        return None
    body = stripped[1:]
    names = [t.strip().lower() for t in (body.split(",") if "," in body else body.split())]
    if "gpu" not in names or names.count("gpu") != 1 or "" in names:
        return None
    return names


def _header_columns(text: str) -> tuple[list[Column], int, bool] | None:
    """What a '#' line means: the columns of the values under it -- the plan's own
    header too, which brings them back after another header -- or None (a units line,
    a comment)."""
    names = header_names(text)
    return None if names is None else (columns_for(names), len(names), "," in text)


def cells_of(text: str, comma: bool) -> list[str]:
    """One values line's fields: split on commas (``--format csv``) or on blanks."""
    return [c.strip() for c in text.split(",")] if comma else text.split()


def columns_for(names: list[str]) -> list[Column]:
    return [
        Column(i, DMON_COLUMNS[n][0], DMON_COLUMNS[n][1], n)
        for i, n in enumerate(names)
        if n in DMON_COLUMNS
    ]


def sniff(head: Head, mapping: Mapping[str, str] | None) -> DmonPlan | str:
    lines = head.nonblank
    if not lines:
        return "empty file"
    names = header_names(lines[0])
    if names is None:
        return "first line is not a '# gpu ...' dmon header"
    if "pid" in names:
        return "this is nvidia-smi pmon (per-process) output, not dmon"
    unknown = [n for n in names if n not in KNOWN_DMON]
    if len(unknown) * 2 > len(names):
        return f"unknown dmon columns: {', '.join(unknown[:5])}"
    columns = columns_for(names)
    if not any(c.role not in ("gpu", "date", "time") for c in columns):
        return "no dmon column we can use (need one of sm, mem, fb, pwr, gtemp, rxpci ...)"
    plan = DmonPlan(columns, len(names), names, comma="," in lines[0])
    for number, line in enumerate(lines[1:80], start=2):
        if line.lstrip().startswith("#"):
            continue
        cells = cells_of(line, plan.comma)
        if len(cells) != plan.ncols:
            continue
        try:
            plan.rows.append(parse_row(cells, columns, number))
        except v.CellError:
            continue
    if len(lines) > 2 and not plan.rows:
        return "no line parses as dmon values"
    return plan


def read(
    source: TextSource, plan: DmonPlan, counters: ReadCounters, assembler: Assembler
) -> Iterator[Snapshot]:
    def rows() -> Iterator[Row]:
        columns = plan.columns
        ncols = plan.ncols
        comma = plan.comma
        header = HeaderMemo(_header_columns)
        for line, text in source.lines():
            first = text[:1]
            if first == "#" or first.isspace() or not first:
                stripped = text.lstrip()
                if not stripped:
                    continue
                if stripped[0] == "#":
                    switch = header(text)
                    if switch is not None:
                        columns, ncols, comma = switch
                    continue  # header, units line or comment
            cells = cells_of(text, comma)
            if len(cells) != ncols:
                bad(counters, line, f"expected {ncols} fields, found {len(cells)}")
                continue
            try:
                row = parse_row(cells, columns, line)
            except v.CellError as exc:
                bad(counters, line, str(exc))
                continue
            note_bad_cells(counters, row)
            yield row

    yield from assemble(rows(), assembler)


def open_dmon(
    path: Path, plan: DmonPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of a dmon log: one snapshot per tick of rows."""
    shape = " (--format csv)" if plan.comma else ""
    notes = [f"{LABEL}{shape} with columns {' '.join(plan.names)}"]
    if mapping:
        notes.append("--map is not used for dmon (its header names every column)")

    def rows(
        source: TextSource, counters: ReadCounters, assembler: Assembler, _vram: int | None
    ) -> Iterator[Snapshot]:
        return read(source, plan, counters, assembler)

    return table_stream(
        path, FORMAT, LABEL, plan.columns, plan.rows, notes, interval_s, mapping, rows
    )


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_dmon,
    metrics=GPU_COLUMNS | {METRIC_THROTTLE},
    docs="nvidia-smi dmon",
)
