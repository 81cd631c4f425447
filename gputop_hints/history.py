"""Rolling history: fixed-size ring buffers per metric per GPU, process and core.

Every :class:`Series` in a :class:`History` is aligned with the history's own
tick timestamps: entry ``i`` of any series belongs to ``history.timestamps[i]``.
A process that appears mid-window is pre-filled with ``None`` (so a sparkline
starts at the right place instead of jumping), and a process that is absent
from a tick gets ``None`` for it until it has been gone for a whole window,
when it is dropped. Appending is O(metrics); reading the last ``n`` values is
O(n).

This module must not import Textual.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from gputop_hints.model import GpuProcess, GpuSample, Snapshot, UtilizationSample

DEFAULT_WINDOW_S = 120.0
DEFAULT_SNAPSHOTS_S = 15.0
"""Whole snapshots are kept for this long only (the hints look back a few seconds);
the per-metric series cover the full window at a fraction of the memory."""

MAX_GONE_PROCESSES = 256
"""How many processes that have left keep their history (for up to a window).

A process that ends stays visible to the hints and the detail view for a
window, so a crash or an exit can still be explained. Jobs that start many
short-lived GPU processes (a test suite, a hyper-parameter sweep, a server
forking per request) would otherwise keep thousands of histories alive: past
this many, the ones gone longest are dropped first. Live processes are never
dropped."""


class Series:
    """A ring of ``float | None`` with a fixed capacity."""

    __slots__ = ("_values",)

    def __init__(self, capacity: int, prefill: int = 0) -> None:
        self._values: deque[float | None] = deque(maxlen=capacity)
        if prefill:
            self._values.extend([None] * min(prefill, capacity))

    @property
    def capacity(self) -> int:
        maxlen = self._values.maxlen
        assert maxlen is not None
        return maxlen

    def append(self, value: float | None) -> None:
        self._values.append(value)

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[float | None]:
        return iter(self._values)

    @property
    def latest(self) -> float | None:
        return self._values[-1] if self._values else None

    def last(self, n: int | None = None) -> list[float | None]:
        """The newest ``n`` entries (all when ``n`` is None), oldest first."""
        size = len(self._values)
        if n is None or n >= size:
            return list(self._values)
        if n <= 0:
            return []
        if n > size // 2:
            return list(islice(self._values, size - n, size))
        # From the newest end: a deque is walked from whichever end the slice starts at.
        newest = list(islice(reversed(self._values), n))
        newest.reverse()
        return newest

    def known(self, n: int | None = None) -> list[float]:
        """The newest ``n`` entries with the unknowns left out."""
        return [v for v in self.last(n) if v is not None]

    def mean(self, n: int | None = None) -> float | None:
        values = self.known(n)
        return math.fsum(values) / len(values) if values else None

    def max(self, n: int | None = None) -> float | None:
        values = self.known(n)
        return max(values) if values else None

    def min(self, n: int | None = None) -> float | None:
        values = self.known(n)
        return min(values) if values else None

    def all_unknown(self) -> bool:
        return all(v is None for v in self._values)

    def resized(self, capacity: int) -> Series:
        out = Series(capacity)
        out._values.extend(self._values)
        return out


def _series(capacity: int, prefill: int) -> Series:
    return Series(capacity, prefill)


@dataclass
class GpuHistory:
    """Per-GPU series."""

    index: int
    sm_percent: Series
    memory_access_percent: Series
    vram_used_bytes: Series
    pcie_rx_bytes_per_s: Series
    pcie_tx_bytes_per_s: Series
    temperature_c: Series
    power_watts: Series
    sm_samples: deque[UtilizationSample] = field(default_factory=deque)
    """Sub-second SM readings (NVML buffered samples) inside the window."""

    SERIES = (
        "sm_percent",
        "memory_access_percent",
        "vram_used_bytes",
        "pcie_rx_bytes_per_s",
        "pcie_tx_bytes_per_s",
        "temperature_c",
        "power_watts",
    )

    @classmethod
    def empty(cls, index: int, capacity: int, prefill: int) -> GpuHistory:
        gh = cls.__new__(cls)
        gh.index = index
        for name in cls.SERIES:
            setattr(gh, name, _series(capacity, prefill))
        gh.sm_samples = deque()
        return gh

    def _all(self) -> tuple[Series, ...]:
        return tuple(getattr(self, name) for name in self.SERIES)

    def append(self, gpu: GpuSample | None) -> None:
        if gpu is None:
            for s in self._all():
                s.append(None)
            return
        self.sm_percent.append(gpu.sm_percent)
        self.memory_access_percent.append(gpu.memory_access_percent)
        self.vram_used_bytes.append(None if gpu.vram_used_bytes is None else gpu.vram_used_bytes)
        self.pcie_rx_bytes_per_s.append(gpu.pcie_rx_bytes_per_s)
        self.pcie_tx_bytes_per_s.append(gpu.pcie_tx_bytes_per_s)
        self.temperature_c.append(gpu.temperature_c)
        self.power_watts.append(gpu.power_watts)
        last = self.sm_samples[-1].timestamp if self.sm_samples else -math.inf
        self.sm_samples.extend(s for s in gpu.sm_samples if s.timestamp > last)

    def prune_samples(self, oldest: float) -> None:
        while self.sm_samples and self.sm_samples[0].timestamp < oldest:
            self.sm_samples.popleft()

    def resized(self, capacity: int) -> GpuHistory:
        gh = GpuHistory.empty(self.index, capacity, 0)
        for name in self.SERIES:
            setattr(gh, name, getattr(self, name).resized(capacity))
        gh.sm_samples = self.sm_samples
        return gh


@dataclass
class ProcessHistory:
    """Per GPU-process series, keyed by ``(pid, gpu_index)``."""

    pid: int
    gpu_index: int
    sm_percent: Series
    cpu_percent: Series
    workers_cpu_percent: Series
    busy_workers: Series
    vram_bytes: Series
    rss_bytes: Series
    first_seen: float
    last_seen: float
    latest: GpuProcess

    SERIES = (
        "sm_percent",
        "cpu_percent",
        "workers_cpu_percent",
        "busy_workers",
        "vram_bytes",
        "rss_bytes",
    )

    @classmethod
    def empty(
        cls, proc: GpuProcess, capacity: int, prefill: int, timestamp: float
    ) -> ProcessHistory:
        series = {name: _series(capacity, prefill) for name in cls.SERIES}
        return cls(
            proc.pid,
            proc.gpu_index,
            **series,
            first_seen=timestamp,
            last_seen=timestamp,
            latest=proc,
        )

    def _all(self) -> tuple[Series, ...]:
        return tuple(getattr(self, name) for name in self.SERIES)

    def append(self, proc: GpuProcess | None, timestamp: float, busy_threshold: float) -> None:
        if proc is None:
            for s in self._all():
                s.append(None)
            return
        self.sm_percent.append(proc.sm_percent)
        self.cpu_percent.append(proc.cpu_percent)
        self.workers_cpu_percent.append(proc.workers_cpu_percent)
        self.busy_workers.append(float(proc.busy_workers(busy_threshold)))
        self.vram_bytes.append(None if proc.vram_bytes is None else float(proc.vram_bytes))
        self.rss_bytes.append(None if proc.rss_bytes is None else float(proc.rss_bytes))
        self.last_seen = timestamp
        self.latest = proc

    def resized(self, capacity: int) -> ProcessHistory:
        series = {name: getattr(self, name).resized(capacity) for name in self.SERIES}
        return ProcessHistory(
            self.pid,
            self.gpu_index,
            **series,
            first_seen=self.first_seen,
            last_seen=self.last_seen,
            latest=self.latest,
        )


class History:
    """Rolling window of snapshots, plus per-metric series for graphs and hints."""

    def __init__(
        self,
        window_s: float = DEFAULT_WINDOW_S,
        interval_s: float = 1.0,
        busy_worker_threshold_percent: float = 20.0,
        snapshots_s: float = DEFAULT_SNAPSHOTS_S,
    ) -> None:
        if window_s <= 0 or interval_s <= 0:
            raise ValueError("window and interval must be positive")
        self.window_s = window_s
        self.interval_s = interval_s
        self.snapshots_s = snapshots_s
        self.busy_worker_threshold_percent = busy_worker_threshold_percent
        self.capacity = self.capacity_for(window_s, interval_s)
        self.timestamps = Series(self.capacity)
        self.snapshots: deque[Snapshot] = deque(maxlen=self._snapshot_capacity())
        self.gpus: dict[int, GpuHistory] = {}
        self.processes: dict[tuple[int, int], ProcessHistory] = {}
        self.cores: list[Series] = []
        self.iowait_percent = Series(self.capacity)
        self.memory_used_bytes = Series(self.capacity)
        self.ticks = 0

    def _snapshot_capacity(self) -> int:
        return min(self.capacity, self.capacity_for(self.snapshots_s, self.interval_s))

    @staticmethod
    def capacity_for(window_s: float, interval_s: float) -> int:
        return max(2, math.ceil(window_s / interval_s) + 1)

    @property
    def latest(self) -> Snapshot | None:
        return self.snapshots[-1] if self.snapshots else None

    def __len__(self) -> int:
        return len(self.timestamps)

    def append(self, snapshot: Snapshot) -> None:
        """Add one tick. Cost is proportional to the number of series, not the window."""
        prefill = len(self.timestamps)
        if prefill == self.capacity:
            prefill -= 1  # the oldest tick falls out as this one comes in
        self.timestamps.append(snapshot.timestamp)
        self.snapshots.append(snapshot)
        self.ticks += 1

        host = snapshot.host
        while len(self.cores) < host.core_count:
            self.cores.append(Series(self.capacity, prefill))
        for i, series in enumerate(self.cores):
            series.append(host.cpu_percent_per_core[i] if i < host.core_count else None)
        self.iowait_percent.append(host.iowait_percent)
        self.memory_used_bytes.append(
            None if host.memory_used_bytes is None else float(host.memory_used_bytes)
        )

        seen_gpus: set[int] = set()
        for gpu in snapshot.gpus:
            seen_gpus.add(gpu.index)
            gh = self.gpus.get(gpu.index)
            if gh is None:
                gh = self.gpus[gpu.index] = GpuHistory.empty(gpu.index, self.capacity, prefill)
            gh.append(gpu)
        oldest = snapshot.timestamp - self.window_s
        for index, gh in list(self.gpus.items()):
            if index not in seen_gpus:
                gh.append(None)
                if gh.sm_percent.all_unknown() and gh.memory_access_percent.all_unknown():
                    del self.gpus[index]
                    continue
            gh.prune_samples(oldest)

        seen: set[tuple[int, int]] = set()
        threshold = self.busy_worker_threshold_percent
        for proc in snapshot.processes:
            key = proc.key
            if key in seen:
                continue  # a source listing one pid twice on a GPU: keep the first
            seen.add(key)
            ph = self.processes.get(key)
            if ph is None:
                ph = self.processes[key] = ProcessHistory.empty(
                    proc, self.capacity, prefill, snapshot.timestamp
                )
            ph.append(proc, snapshot.timestamp, threshold)
        gone: list[ProcessHistory] = []
        for key, ph in list(self.processes.items()):
            if key not in seen:
                ph.append(None, snapshot.timestamp, threshold)
                if snapshot.timestamp - ph.last_seen > self.window_s:
                    del self.processes[key]
                else:
                    gone.append(ph)
        if len(gone) > MAX_GONE_PROCESSES:
            gone.sort(key=lambda ph: ph.last_seen)
            for ph in gone[: len(gone) - MAX_GONE_PROCESSES]:
                del self.processes[(ph.pid, ph.gpu_index)]

    def extend(self, snapshots: Iterable[Snapshot]) -> None:
        for s in snapshots:
            self.append(s)

    def ticks_in(self, seconds: float) -> int:
        """How many of the newest kept snapshots fall within the last ``seconds``."""
        if not self.snapshots:
            return 0
        newest = self.snapshots[-1].timestamp
        n = 0
        for ts in reversed(self.snapshots):
            if newest - ts.timestamp > seconds + 1e-9:
                break
            n += 1
        return n

    def window(self, seconds: float | None = None) -> list[Snapshot]:
        """Snapshots from the last ``seconds`` (all that are kept when None), oldest first.

        Whole snapshots are kept for ``snapshots_s`` only; use the series for more.
        """
        if seconds is None:
            return list(self.snapshots)
        n = self.ticks_in(seconds)
        size = len(self.snapshots)
        return list(islice(self.snapshots, size - n, size))

    def process(self, pid: int, gpu_index: int) -> ProcessHistory | None:
        return self.processes.get((pid, gpu_index))

    def set_window(self, window_s: float, interval_s: float | None = None) -> None:
        """Change the window (and interval), keeping the newest data that still fits."""
        if interval_s is not None:
            self.interval_s = interval_s
        self.window_s = window_s
        capacity = self.capacity_for(window_s, self.interval_s)
        if capacity == self.capacity:
            return
        self.capacity = capacity
        self.timestamps = self.timestamps.resized(capacity)
        self.snapshots = deque(self.snapshots, maxlen=self._snapshot_capacity())
        self.cores = [s.resized(capacity) for s in self.cores]
        self.iowait_percent = self.iowait_percent.resized(capacity)
        self.memory_used_bytes = self.memory_used_bytes.resized(capacity)
        self.gpus = {k: g.resized(capacity) for k, g in self.gpus.items()}
        self.processes = {k: p.resized(capacity) for k, p in self.processes.items()}
