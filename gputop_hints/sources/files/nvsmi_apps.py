"""``nvidia-smi --query-compute-apps=... --format=csv -l 10``: one row per process.

Fields read: ``pid``, ``process_name`` (``name``), ``gpu_uuid``, ``gpu_bus_id``,
``used_gpu_memory`` (``used_memory``), ``timestamp``. The GPUs are named by UUID
or bus id only, so alone such a log gives per-process VRAM on GPUs numbered in
order of appearance; given together with a ``--query-gpu`` log of the same run
(:func:`gputop_hints.sources.files.merge.open_streams`), the processes join the
GPU samples by UUID and time. A log written with ``noheader`` is recognised when
its rows have the default field order (pid, name, UUID, memory).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gputop_hints.model import GpuProcess, Snapshot
from gputop_hints.sources.files import _polls
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._csvio import records
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._polls import ProcessRow
from gputop_hints.sources.files._table import median_interval
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import (
    ALL_METRICS,
    METRIC_PROCESSES,
    ReadCounters,
    StreamInfo,
    note_bad_line,
)
from gputop_hints.units import MIB

FORMAT = "nvidia-smi-apps"
LABEL = "nvidia-smi --query-compute-apps CSV"

FIELDS = {
    "timestamp": "time",
    "pid": "pid",
    "process_name": "name",
    "name": "name",
    "gpu_uuid": "gpu",
    "gpu_bus_id": "bus",
    "used_gpu_memory": "vram",
    "used_memory": "vram",
    "gpu_name": "",
    "gpu_serial": "",
}
DEFAULT_ORDER = ("pid", "name", "gpu", "vram")
_CELL = re.compile(r"^\s*([a-z_.]+)\s*(?:\[[^\]]*\])?\s*$")
_UUID = re.compile(r"^(GPU|MIG)-[0-9a-fA-F-]{8,}$")


@dataclass
class AppsPlan:
    roles: dict[str, int]
    header: bool
    rows: list[ProcessRow] = field(default_factory=list)


def _header(cells: list[str]) -> dict[str, int] | None:
    roles: dict[str, int] = {}
    for i, cell in enumerate(cells):
        m = _CELL.match(cell)
        if m is None or m.group(1) not in FIELDS:
            return None
        role = FIELDS[m.group(1)]
        if role and role not in roles:
            roles[role] = i
    if "pid" not in roles or not ({"vram", "name"} & roles.keys()):
        return None
    return roles


def _row(cells: list[str], roles: dict[str, int], line: int) -> ProcessRow:
    def cell(role: str) -> str | None:
        i = roles.get(role)
        return cells[i].strip() if i is not None and i < len(cells) else None

    pid = v.integer(cell("pid") or "", 0, 2**31)
    if pid is None:
        raise v.CellError("no pid")
    gpu = cell("gpu") or cell("bus")
    if not gpu or v.is_unknown(gpu):
        raise v.CellError("no GPU UUID or bus id")
    stamp = None
    raw_time = cell("time")
    if raw_time is not None:
        parsed = v.timestamp(raw_time)
        stamp = parsed[0] if parsed is not None else None
    vram_cell = cell("vram")
    name = v.text(cell("name") or "")
    proc = GpuProcess(
        pid=pid,
        gpu_index=0,
        vram_bytes=None if vram_cell is None else v.byte_count(vram_cell, MIB),
        name=name,
        command=name or "",
    )
    return ProcessRow(line, stamp, gpu, proc)


_MEMO_ROWS = 256
"""Rows remembered by their cells but the time (cleared when full)."""


class _RowMemo:
    """_row remembering the rows that read: a row whose cells but the time equal an
    earlier one's (a process polled again with the same figures) takes its GPU and
    GpuProcess, and only its time is read. Rows that raise are not remembered, so
    errors read as before."""

    def __init__(self, roles: dict[str, int]) -> None:
        self.roles = roles
        self.time_at = roles.get("time")
        self.memo: dict[tuple[str, ...], tuple[int | str, GpuProcess | None]] = {}

    def _key(self, cells: list[str]) -> tuple[str, ...]:
        t = self.time_at
        return tuple(cells) if t is None else (*cells[:t], *cells[t + 1 :])

    def known(self, cells: list[str], line: int) -> ProcessRow | None:
        """The row of cells remembered but for the time, None for others. Such a row
        is neither blank nor a header: its pid cell read as a number."""
        hit = self.memo.get(self._key(cells))
        if hit is None:
            return None
        t = self.time_at
        stamp = None
        if t is not None and t < len(cells):
            parsed = v.timestamp(cells[t].strip())
            stamp = parsed[0] if parsed is not None else None
        return ProcessRow(line, stamp, hit[0], hit[1])

    def row(self, cells: list[str], line: int) -> ProcessRow:
        row = _row(cells, self.roles, line)
        if len(self.memo) >= _MEMO_ROWS:
            self.memo.clear()
        self.memo[self._key(cells)] = (row.gpu, row.process)
        return row


def _try_row(cells: list[str], roles: dict[str, int], line: int) -> ProcessRow | None:
    try:
        return _row(cells, roles, line)
    except v.CellError:
        return None


def sniff(head: Head, mapping: Mapping[str, str] | None) -> AppsPlan | str:
    lines = head.nonblank
    if not lines:
        return "empty file"
    cells = [c.strip() for c in lines[0].split(",")]
    roles = _header(cells)
    data = lines[1:]
    plan: AppsPlan
    if roles is not None:
        plan = AppsPlan(roles, header=True)
    else:
        shapes = [c.strip() for c in cells]
        if not (
            len(shapes) == 4
            and shapes[0].isdigit()
            and _UUID.match(shapes[2])
            and (shapes[3].endswith("MiB") or shapes[3].isdigit() or v.is_unknown(shapes[3]))
        ):
            return "no 'pid, process_name, gpu_uuid, used_gpu_memory' header or rows"
        plan = AppsPlan({role: i for i, role in enumerate(DEFAULT_ORDER)}, header=False)
        data = lines
    for n, line in enumerate(data[:64], start=2 if plan.header else 1):
        row = _try_row(line.split(","), plan.roles, n)
        if row is not None:
            plan.rows.append(row)
    if data and not plan.rows:
        return "no row reads as a compute process"
    return plan


def stream_info(
    path: Path,
    fmt: str,
    label: str,
    times: list[float],
    interval_s: float | None,
    notes: list[str],
    present: tuple[str, ...] = (),
) -> tuple[StreamInfo, float]:
    """StreamInfo for a per-process log: everything but processes (and ``present``,
    GPU metrics taken from a GPU's only process) is missing."""
    interval = choose_interval(median_interval(times), interval_s, notes, bool(times))
    info = StreamInfo(
        path=str(path),
        format=fmt,
        interval_s=interval,
        missing=tuple(m for m in ALL_METRICS if m != METRIC_PROCESSES and m not in present),
        detail="; ".join([label, *notes]),
        header={},
    )
    return info, interval


def open_apps(
    path: Path, plan: AppsPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """Per-process rows of a compute-apps log, as snapshots of identity-only GPUs."""
    notes = ["with header" if plan.header else "without header (default field order)"]
    if "gpu" in plan.roles or "bus" in plan.roles:
        notes.append("GPUs named by UUID/bus id, numbered in order of appearance")
    first_gpu = plan.rows[0].gpu if plan.rows else None
    times = [r.timestamp for r in plan.rows if r.timestamp is not None and r.gpu == first_gpu]
    info, interval = stream_info(path, FORMAT, LABEL, sorted(set(times)), interval_s, notes)
    detail = f"{LABEL}: {path.name}"

    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        def rows() -> Iterator[ProcessRow]:
            memo = _RowMemo(plan.roles)
            for line, cells in records(source.lines(), ",", counters.note_bad_line):
                try:
                    row = memo.known(cells, line)
                    if row is None:
                        if not any(c.strip() for c in cells) or _header(
                            [c.strip() for c in cells]
                        ):
                            continue
                        row = memo.row(cells, line)
                except v.CellError as exc:
                    note_bad_line(counters, line, str(exc))
                    continue
                yield row

        tolerance = min(max(0.5 * interval, 0.002), 5.0)
        yield from _polls.snapshots(_polls.polls(rows(), tolerance), counters, interval, detail)

    return ImportedStream(path, info, reader, counters=counters)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_apps,
    metrics=frozenset({METRIC_PROCESSES}),
    docs="Per-process logs: --query-compute-apps and pmon",
    per_process=True,
)
