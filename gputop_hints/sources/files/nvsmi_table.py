"""Plain ``nvidia-smi`` output appended to a file: the habit most people have.

``while true; do nvidia-smi >> gpu.log; sleep 5; done``, ``nvidia-smi -l 1 >
gpu.log``, a cron job, a pasted screen: any number of tables, with or without
date lines or separators between them, from any driver between 3xx and 58x,
Linux or Windows. Each table becomes one snapshot: per GPU the utilization
(SM %), VRAM used/total, temperature, power and its cap; and from the Processes
box one :class:`~gputop_hints.model.GpuProcess` per row (pid, GPU, VRAM and
name) -- which is what per-process findings such as idle-holding-vram need.

What a table does not show is absent, never zero: memory-access %, PCIe,
clocks and their reasons, host CPU. Fan speed, performance state, process
types (``C``, ``G``, ``C+G``) and MIG devices have no place in a snapshot; they
are summarised in ``StreamInfo.header``.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gputop_hints.model import GpuProcess, GpuSample, HostSample, Snapshot
from gputop_hints.sources.files import _nvsmi_rows as rows
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._bursts import resolution, spread_stamps
from gputop_hints.sources.files._incremental import drive
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._nvsmi_parser import TableReader
from gputop_hints.sources.files._nvsmi_rows import TableGpu, TableProcess, TableSnapshot
from gputop_hints.sources.files._table import Clock, median_interval
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import (
    METRIC_HOST_CPU,
    METRIC_MEMORY_ACCESS,
    METRIC_PCIE,
    METRIC_POWER,
    METRIC_PROCESSES,
    METRIC_SM,
    METRIC_SUBSECOND,
    METRIC_TEMPERATURE,
    METRIC_THROTTLE,
    METRIC_VRAM,
    ReadCounters,
    StreamInfo,
)

FORMAT = "nvidia-smi-table"
_BY_INDEX = operator.attrgetter("index")
LABEL = "nvidia-smi table"


@dataclass
class TablePlan:
    """What the head of the file showed."""

    snapshots: list[TableSnapshot] = field(default_factory=list)
    expect_processes: bool = True
    titles: int = 0


def has_title(line: str) -> bool:
    """``| NVIDIA-SMI 384.130   Driver Version: 384.130   ... |``: the first row of a table."""
    text = line.strip()
    return text.startswith("|") and "NVIDIA-SMI" in text[:24]


def sniff(head: Head, mapping: Mapping[str, str] | None) -> TablePlan | str:
    if "\x1b[" in head.text:
        return "terminal escape sequences (a watch capture, not plain tables)"
    titles = sum(1 for line in head.lines if has_title(line))
    if titles == 0:
        return "no '| NVIDIA-SMI ... Driver Version ...' table title"
    plan = TablePlan(titles=titles)
    plan.expect_processes = any("| Processes:" in line for line in head.lines)
    reader = TableReader(lambda _n, _r: None, expect_processes=plan.expect_processes)
    plan.snapshots = list(drive(reader, enumerate(head.lines, start=1), finish=False))
    return plan


class SnapshotMaker:
    """TableSnapshot -> Snapshot, with a monotonic clock and the header summaries."""

    def __init__(self, counters: ReadCounters, interval: float, detail: str) -> None:
        self.counters = counters
        self.interval = interval
        self.detail = detail
        self.clock = Clock(counters, interval)
        self.host = HostSample(hostname="unknown", cpu_percent_per_core=(), allowed_cores=())
        self.perf_states: dict[str, dict[str, int]] = {}
        self.fan_peak: dict[str, float] = {}
        self.process_kinds: dict[str, int] = {}
        self.mig_devices = 0
        self._last_samples: dict[int, tuple[tuple[object, ...], GpuSample]] = {}
        self._last_gpus: tuple[GpuSample, ...] = ()
        """The last snapshot's GPUs, sorted (reused while the GPUs read the same)."""
        self._last_table_gpus: list[TableGpu] | None = None
        """The GPU rows ``_last_gpus`` were made of, and ``_perf_counts`` the count each
        of them added to (its GPU's ``perf_states`` entry and the state)."""
        self._perf_counts: list[tuple[dict[str, int], str]] = []
        self._last_table_processes: list[TableProcess] | None = None
        self._last_processes: tuple[GpuProcess, ...] = ()
        counters.found.update(
            perf_states=self.perf_states,
            fan_percent_peak=self.fan_peak,
            process_kinds=self.process_kinds,
        )

    def _sample(self, gpu: TableGpu) -> GpuSample:
        """rows.gpu_sample, handing back the GPU's last sample when it read the same
        (a frozen value: equal ones can be shared)."""
        key = (
            gpu.index,
            gpu.name,
            gpu.sm_percent,
            gpu.vram_used_bytes,
            gpu.vram_total_bytes,
            gpu.temperature_c,
            gpu.power_watts,
            gpu.power_limit_watts,
        )
        last = self._last_samples.get(gpu.index)
        if last is not None and last[0] == key:
            return last[1]
        sample = rows.gpu_sample(gpu)
        if len(self._last_samples) >= 4096:
            self._last_samples.clear()
        self._last_samples[gpu.index] = (key, sample)
        return sample

    def make(self, table: TableSnapshot, timestamp: float | None = None) -> Snapshot:
        """The snapshot of ``table``, at ``timestamp`` where given (a table spread
        over its stamp's second), else at the table's own time."""
        if table.gpus is self._last_table_gpus:
            # The very GPU rows of the last table (a redraw that changed only the clock,
            # FrameReader): their samples, performance states and fan peaks as before.
            for counts, state in self._perf_counts:
                counts[state] += 1
            gpus = self._last_gpus
        else:
            rows.note_gpu_states(table.gpus, self.perf_states, self.fan_peak)
            samples = [self._sample(g) for g in table.gpus]
            last = self._last_gpus
            if len(samples) == len(last) and all(map(operator.is_, samples, last)):
                gpus = last  # the same samples as the last snapshot's: already sorted
            else:
                gpus = self._last_gpus = tuple(sorted(samples, key=_BY_INDEX))
            self._last_table_gpus = table.gpus
            perf = self.perf_states
            self._perf_counts = [
                (perf[str(g.index)], g.perf_state) for g in table.gpus if g.perf_state is not None
            ]
        for p in table.processes or ():
            self.process_kinds[p.kind] = self.process_kinds.get(p.kind, 0) + 1
        if table.mig_devices > self.mig_devices:
            self.mig_devices = table.mig_devices
            self.counters.found["mig_devices"] = table.mig_devices
        if table.processes is not self._last_table_processes:
            self._last_table_processes = table.processes
            self._last_processes = tuple(rows.gpu_process(p) for p in table.processes or ())
        self.counters.saw_gpus(len(gpus))
        # By position, as the Assembler passes them (see _table._SNAPSHOT_HEAD).
        return Snapshot(
            self.clock.next(table.timestamp if timestamp is None else timestamp),
            self.interval, self.host, gpus, self._last_processes, "replay", self.detail,
            table.driver, cuda_driver_version=table.cuda,
        )  # fmt: skip


def stream_info(
    path: Path,
    fmt: str,
    label: str,
    heads: list[TableSnapshot],
    has_processes: bool,
    interval_s: float | None,
    notes: list[str],
    stamp_resolution_s: float | None = None,
) -> tuple[StreamInfo, float]:
    """StreamInfo for a log of nvidia-smi tables (plain or watched), from its head.
    ``stamp_resolution_s``: tables sharing a stamp are spread over it (see
    :func:`~._bursts.spread_stamps`) before their spacing is measured."""
    times = [t.timestamp for t in heads if t.timestamp is not None]
    how = "median spacing of timestamps"
    header: dict[str, object] = {}
    if stamp_resolution_s is not None and len(set(times)) < len(times):
        most = max(times.count(t) for t in set(times))
        header["bursts"] = {"resolution_s": stamp_resolution_s, "most_rows": most}
        spread = [t for _, t in spread_stamps(times, lambda t: t, stamp_resolution_s)]
        times = [t for t in spread if t is not None]
        how = (
            "median spacing of the tables, those of one stamp spread over its "
            f"{stamp_resolution_s:g} s"
        )
        notes.append(
            f"up to {most} tables under one {stamp_resolution_s:g} s stamp (nvidia-smi run "
            "in a loop without a sleep): spread evenly over it"
        )
    drivers = sorted({t.driver for t in heads if t.driver})
    if drivers:
        notes.insert(0, f"{label}, driver {', '.join(drivers)}")
    else:
        notes.insert(0, label)
    if heads and not times and interval_s is None:
        notes.append("no date line above the tables")
    interval = choose_interval(median_interval(times), interval_s, notes, bool(times), how)
    missing = [METRIC_MEMORY_ACCESS, METRIC_PCIE, METRIC_HOST_CPU, METRIC_SUBSECOND]
    missing.append(METRIC_THROTTLE)
    if not has_processes:
        missing.append(METRIC_PROCESSES)
        notes.append("no Processes box in the tables: per-process rows unknown")
    info = StreamInfo(
        path=str(path),
        format=fmt,
        interval_s=interval,
        hostname=None,
        gpu_count=max((len(t.gpus) for t in heads), default=None) or None,
        missing=tuple(missing),
        detail="; ".join(notes),
        header=header,
    )
    return info, interval


def open_table(
    path: Path, plan: TablePlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of snapshots of a log of appended nvidia-smi tables."""
    notes: list[str] = []
    if mapping:
        notes.append("--map is not used for nvidia-smi tables (their layout names every value)")
    stamps = [t.timestamp for t in plan.snapshots if t.timestamp is not None]
    # What the date lines are rounded to (1 s: `date`, nvidia-smi's own); judged on a
    # few distinct stamps at least (one on a whole minute is not a minute's resolution).
    step = resolution(stamps) if len(set(stamps)) >= 3 else 1.0
    info, interval = stream_info(
        path, FORMAT, LABEL, plan.snapshots, plan.expect_processes, interval_s, notes, step
    )
    detail = f"{LABEL}: {path.name}"
    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        maker = SnapshotMaker(counters, interval, detail)
        tables = TableReader(counters.note_bad_line, expect_processes=plan.expect_processes)
        for table, at in spread_stamps(drive(tables, source.lines()), _stamp, step):
            yield maker.make(table, at)

    return ImportedStream(path, info, reader, counters=counters)


def _stamp(table: TableSnapshot) -> float | None:
    return table.timestamp


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_table,
    metrics=frozenset({METRIC_SM, METRIC_VRAM, METRIC_TEMPERATURE, METRIC_POWER, METRIC_PROCESSES}),
    docs="Plain nvidia-smi tables",
)
