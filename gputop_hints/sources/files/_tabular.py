"""The stream of a tabular log (dmon, nvidia-smi CSV, generic CSV) from its plan.

The front ends say what the file is (the first notes) and how to read its rows
(``read``); this module works out the interval, the GPU count and what is
missing, and hands out the :class:`~._base.ImportedStream`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from gputop_hints.model import Snapshot
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._bursts import find_bursts
from gputop_hints.sources.files._gpu_polls import PollShape
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._table import Assembler, Column, Row, missing_for, probe_interval
from gputop_hints.sources.files._text import TextSource
from gputop_hints.sources.files.mapping import vram_constant
from gputop_hints.streams import ReadCounters, StreamInfo

RowReader = Callable[[TextSource, ReadCounters, Assembler, int | None], Iterator[Snapshot]]
"""(source, the counters of what reading finds, assembler, the --map vram_total constant)
-> snapshots."""


class RowShape(Protocol):
    """How rows without a GPU column group into snapshots, where they do not one a row
    each: a node's GPUs polled together (:class:`~._gpu_polls.PollShape`), or one GPU
    read faster than its stamps tick (:class:`~._bursts.BurstShape`)."""

    @property
    def gpu_count(self) -> int: ...
    @property
    def interval_s(self) -> float: ...
    @property
    def how(self) -> str: ...
    def note(self) -> str: ...
    def header(self) -> dict[str, object]: ...
    def assembler(self, counters: ReadCounters, interval: float, detail: str) -> Assembler: ...


def table_stream(
    path: Path,
    fmt: str,
    label: str,
    columns: Sequence[Column],
    rows: Sequence[Row],
    notes: list[str],
    interval_s: float | None,
    mapping: Mapping[str, str] | None,
    read: RowReader,
    *,
    inferred: Mapping[str, str] | None = None,
    polls: PollShape | None = None,
) -> ImportedStream:
    """``notes`` start the detail line (what the file is); the rest is added here.
    ``inferred``: the columns of a headerless file told by their values (column ->
    the field it was taken for), kept in ``header["inferred_columns"]``. ``polls``:
    rows of several GPUs without an index column, grouped in polls (one snapshot
    each, the GPUs by position), kept in ``header["polls"]``; without them, rows of one
GPU sharing stamps (:func:`~._bursts.find_bursts`) are ``header["bursts"]``."""
    roles = [c.role for c in columns]
    timed = "time" in roles
    vram_total = vram_constant(mapping)
    if vram_total is not None:
        roles.append("vram_total")
        notes.append(f"VRAM total {vram_total} bytes (given)")
    shape: RowShape | None = polls if polls is not None else find_bursts(rows)
    gpu_count: int | None
    if shape is not None:
        interval = choose_interval(shape.interval_s, interval_s, notes, timed, shape.how)
        notes.append(shape.note())
        gpu_count = shape.gpu_count
    else:
        interval = choose_interval(probe_interval(rows), interval_s, notes, timed)
        keys = {r.key for r in rows}
        gpu_count = max(1, len(keys)) if rows else None
    if "pcie_gen" in roles and "pcie_rx" not in roles:
        notes.append("PCIe link generation/width known, throughput not")
    info = StreamInfo(
        path=str(path),
        format=fmt,
        interval_s=interval,
        hostname=None,
        gpu_count=gpu_count,
        missing=missing_for(roles),
        detail="; ".join(notes),
        header={
            "columns": {c.label: c.role for c in columns},
            **({"inferred_columns": dict(inferred)} if inferred else {}),
            **(shape.header() if shape is not None else {}),
        },
    )
    detail = f"{label}: {path.name}"
    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        assembler = (
            shape.assembler(counters, interval, detail)
            if shape is not None
            else Assembler(counters, interval, "unknown", detail)
        )
        return read(source, counters, assembler, vram_total)

    return ImportedStream(path, info, reader, counters=counters)
