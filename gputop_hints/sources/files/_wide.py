"""CSVs with every GPU's values side by side in one row, the GPU numbered in each
column's name.

Seen in the wild: PyTorch Lightning's ``GPUStatsMonitor`` logged through its
``CSVLogger`` (``metrics.csv``: ``gpu_id: 0/utilization.gpu (%)``,
``gpu_id: 0/memory.used (MB)``, ... beside ``epoch``, ``step`` and the losses,
each logged row filling only its own columns); Grafana's CSV export of one series
a GPU (``"Time","GPU 0 utilization","GPU 1 utilization"``); scripts writing
``gpu0_util,gpu0_mem_used_mb,gpu1_util,...``; W&B's CSV export of system metrics
(``system.gpu.0.gpu``).

A column is a GPU's when its name holds ``gpu``, ``cuda`` or ``device`` and a
number (``gpu_id: 0``, ``GPU 0``, ``gpu0``, ``cuda:1``, ``gpu.3``) and the rest
of the name, before or after it, names a metric as a one-GPU header would
(:mod:`._header_names`). Each row then gives one row per GPU with a value in it,
numbered as the names say; a row with no GPU value (a loss logged on its own) is
no sample and is skipped without counting it bad.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._csvio import records
from gputop_hints.sources.files._header_names import ALIASES, header_columns, normalise_name
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
from gputop_hints.streams import ReadCounters

_GPU_IN_NAME = re.compile(
    r"(?<![a-z0-9])(?:gpu|cuda|device)(?:[\s_.:\-]*id)?[\s_.:\-#]*(\d{1,3})(?![0-9])",
    re.IGNORECASE,
)
"""The GPU's number in a column name: ``gpu_id: 0``, ``GPU 0``, ``gpu0``, ``cuda:1``."""

_BARE: dict[str, str] = {"gpu": "sm", "usage": "sm", "load": "sm", "busy": "sm"}
"""What the rest of a GPU's column name means when it is only one of these words:
``system.gpu.0.gpu`` (W&B) and ``GPU 0 Usage`` / ``GPU 0 Load`` are the GPU's
utilization. (``memory`` alone is left out: W&B means memory-access %, others VRAM.)"""

_NOT_METRICS = frozenset({"time", "gpu", "name", "uuid"})

_CANONICAL = {
    "sm": "utilization.gpu",
    "mem": "utilization.memory",
    "vram_used": "memory.used",
    "vram_total": "memory.total",
    "vram_free": "memory.free",
    "temp": "temperature.gpu",
    "power": "power.draw",
    "power_limit": "power.limit",
    "sm_clock": "clocks.sm",
    "pcie_rx": "pcie_rx",
    "pcie_tx": "pcie_tx",
    "pcie_gen": "pcie.link.gen.current",
    "pcie_width": "pcie.link.width.current",
}
"""A one-GPU header name for each role (what :func:`header_columns` reads back)."""


def gpu_column(raw: str) -> tuple[int, str, str | None] | None:
    """``'gpu_id: 0/utilization.gpu (%)'`` -> ``(0, 'sm', '%')``: the GPU's number,
    the metric's role and the unit the name gives; None when the name numbers no
    GPU or names no metric."""
    m = _GPU_IN_NAME.search(raw)
    if m is None:
        return None
    index = int(m.group(1))
    for part in (raw[m.end() :], raw[: m.start()]):
        # A path (Lightning's 'gpu_id: 0/memory.used (MB)'): the whole rest, then
        # each piece of it from the last.
        pieces = [part, *reversed(part.split("/"))] if "/" in part else [part]
        for piece in pieces:
            text = piece.strip(" _.:/-#")
            if not text:
                continue
            name, unit = normalise_name(text)
            role = _BARE.get(name) or ALIASES.get(name)
            if role is not None and role not in _NOT_METRICS and role in _CANONICAL:
                return index, role, unit
    return None


@dataclass
class WideGpu:
    """One GPU's columns: which cells of a row are its own, and how they read."""

    index: int
    columns: list[Column]
    take: Callable[[Sequence[str]], tuple[str, ...]] = field(repr=False)
    """The row's cells this GPU reads, in :attr:`columns` order (a time column first
    when the file has one); the GPU's number is added after them."""
    metrics_from: int
    """Where this GPU's metric cells start in what :attr:`take` gives."""

    def cells(self, row: Sequence[str]) -> list[str]:
        cells = list(self.take(row))
        cells.append(str(self.index))
        return cells


@dataclass
class WideLayout:
    gpus: list[WideGpu]
    ncols: int
    notes: list[str]


def wide_layout(
    header: Sequence[str], data: Sequence[Sequence[str]], time_position: int | None
) -> WideLayout | None:
    """The GPUs a header names column by column, or None when it names none (or one
    GPU's metric twice over, which a header of one GPU per row cannot do either)."""
    by_gpu: dict[int, list[tuple[int, str, str | None]]] = {}
    for position, raw in enumerate(header):
        found = gpu_column(raw)
        if found is None:
            continue
        index, role, unit = found
        by_gpu.setdefault(index, []).append((position, role, unit))
    if not by_gpu:
        return None
    ncols = len(header)
    gpus: list[WideGpu] = []
    notes: list[str] = []
    for index in sorted(by_gpu):
        own = by_gpu[index]
        lead = [] if time_position is None else [time_position]
        positions = lead + [p for p, _, _ in own]
        names = ([header[time_position]] if time_position is not None else []) + [
            _CANONICAL[role] + (f" [{unit}]" if unit else "") for _, role, unit in own
        ]
        sub_data = [[row[p] for p in positions] for row in data if len(row) >= ncols]
        columns, scale_notes = header_columns(names, sub_data)
        if not any(c.role not in _NOT_METRICS for c in columns):
            continue
        for c in columns:  # the file's own names in messages and the JSON
            c.label = header[positions[c.position]]
        columns.append(Column(len(positions), "gpu", 1.0, f"GPU {index} (from the column names)"))
        gpus.append(WideGpu(index, columns, _taker(positions), len(lead)))
        for note in scale_notes:  # told by the file's own column name
            for k, name in enumerate(names):
                if note.startswith(name + ": "):
                    note = header[positions[k]] + note[len(name) :]
                    break
            notes.append(note)
    if not gpus:
        return None
    return WideLayout(gpus, ncols, notes)


def _taker(positions: list[int]) -> Callable[[Sequence[str]], tuple[str, ...]]:
    """The cells at ``positions`` of a row, as a tuple (one position too)."""
    if len(positions) > 1:
        return operator.itemgetter(*positions)
    only = positions[0]

    def one(row: Sequence[str]) -> tuple[str, ...]:
        return (row[only],)

    return one


def sample_rows(layout: WideLayout, data: Sequence[Sequence[str]], first_line: int) -> list[Row]:
    """The rows of the sniffed head that read (for the interval and the GPU count)."""
    out: list[Row] = []
    for line, cells in enumerate(data, start=first_line):
        found = _rows_of(layout, _padded(cells, layout.ncols), line)
        out.extend(row for row in found if isinstance(row, Row))
    return out


def _padded(cells: Sequence[str], ncols: int) -> list[str]:
    out = [c.strip() for c in cells]
    if len(out) < ncols:
        out += [""] * (ncols - len(out))
    return out


def _rows_of(layout: WideLayout, cells: list[str], line: int) -> Iterator[Row | str]:
    """Each GPU's row of one record, or why it does not read."""
    for gpu in layout.gpus:
        own = gpu.cells(cells)
        if not any(own[gpu.metrics_from : -1]):
            continue  # nothing of this GPU's in this row
        try:
            yield parse_row(own, gpu.columns, line)
        except v.CellError as exc:
            yield str(exc)


def read_wide(
    source: TextSource,
    layout: WideLayout,
    header: Sequence[str],
    delimiter: str,
    counters: ReadCounters,
    assembler: Assembler,
    vram_total: int | None,
) -> Iterator[Snapshot]:
    """The snapshots of a wide CSV: each record's GPUs, one row each."""
    header_norm = [h.strip().lower() for h in header]
    ncols = layout.ncols

    def rows() -> Iterator[Row]:
        for line, raw in records(source.lines(), delimiter, counters.note_bad_line):
            cells = _padded(raw, ncols)
            if not any(cells):
                continue
            if [c.lower() for c in cells[: len(header_norm)]] == header_norm:
                continue  # the header (again, when runs were appended)
            if len(cells) > ncols and any(cells[ncols:]):
                bad(counters, line, f"expected {ncols} fields, found {len(cells)}")
                continue
            found = list(_rows_of(layout, cells, line))
            problems = [r for r in found if isinstance(r, str)]
            if problems:  # the line counted bad once, with its first reason
                bad(counters, line, problems[0])
            for row in found:
                if isinstance(row, str):
                    continue
                if row.bad_cells:
                    note_bad_cells(counters, row)
                if vram_total is not None and row.fields.get("vram_total") is None:
                    row.fields["vram_total"] = vram_total
                yield row

    return assemble(rows(), assembler)
