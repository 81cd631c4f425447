"""The stream of a tabular log (dmon, nvidia-smi CSV, generic CSV) from its plan.

The front ends say what the file is (the first notes) and how to read its rows
(``read``); this module works out the interval, the GPU count and what is
missing, and hands out the :class:`~._base.ImportedStream`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._bursts import BurstAssembler, find_bursts
from gputop_hints.sources.files._gpu_polls import PollAssembler, PollShape
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._table import Assembler, Column, Row, missing_for, probe_interval
from gputop_hints.sources.files._text import TextSource
from gputop_hints.sources.files.mapping import vram_constant
from gputop_hints.streams import ReadCounters, StreamInfo

RowReader = Callable[[TextSource, ReadCounters, Assembler, int | None], Iterator[Snapshot]]
"""(source, the counters of what reading finds, assembler, the --map vram_total constant)
-> snapshots."""


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
    each, the GPUs by position), kept in ``header["polls"]``."""
    roles = [c.role for c in columns]
    timed = "time" in roles
    vram_total = vram_constant(mapping)
    if vram_total is not None:
        roles.append("vram_total")
        notes.append(f"VRAM total {vram_total} bytes (given)")
    bursts = None if polls is not None else find_bursts(rows)
    gpu_count: int | None
    if bursts is not None:
        interval = choose_interval(
            bursts.interval_s, interval_s, notes, timed,
            f"the stamps' {bursts.resolution_s:g} s over {bursts.typical} rows a stamp",
        )  # fmt: skip
        notes.append(bursts.note())
        gpu_count = 1
    elif polls is None:
        interval = choose_interval(probe_interval(rows), interval_s, notes, timed)
        keys = {r.key for r in rows}
        gpu_count = max(1, len(keys)) if rows else None
    else:
        interval = choose_interval(
            polls.period_s, interval_s, notes, timed, "median spacing of polls"
        )
        notes.append(polls.note())
        gpu_count = polls.gpus
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
            **(
                {"polls": {"gpus": polls.gpus, "period_s": polls.period_s}}
                if polls is not None
                else {}
            ),
            **(
                {
                    "bursts": {
                        "resolution_s": bursts.resolution_s,
                        "most_rows": bursts.most,
                        "typical_rows": bursts.typical,
                    }
                }
                if bursts is not None
                else {}
            ),
        },
    )
    detail = f"{label}: {path.name}"
    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        assembler: Assembler
        if bursts is not None:
            assembler = BurstAssembler(counters, interval, "unknown", detail, bursts)
        elif polls is not None:
            assembler = PollAssembler(counters, interval, "unknown", detail, polls)
        else:
            assembler = Assembler(counters, interval, "unknown", detail)
        return read(source, counters, assembler, vram_total)

    return ImportedStream(path, info, reader, counters=counters)
