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
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice, pairwise
from typing import cast

from gputop_hints.model import (
    PROFILING_FIELDS,
    GpuProcess,
    GpuSample,
    Snapshot,
    UtilizationSample,
)

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


_NAN = math.nan
_UNKNOWN_DOUBLE = (_NAN,)
_PEAKS_SLACK = 16
"""How many expired numbers a :class:`PeakSeries` keeps at the front of its queue before
it drops them in one go (a series that holds steady expires one a tick)."""


class Series:
    """A ring of ``float | None`` with a fixed capacity.

    Stored compactly (issue 49): one ``array('d')`` of ``capacity`` doubles, NaN standing
    for an unknown entry (None), so that a value costs 8 bytes instead of a float object
    and a deque slot. A NaN appended reads back as None (no source reports one as a
    measurement). Reads build the lists they return afresh, oldest first.

    Summaries of the newest ``n`` entries (known count, mean, max, min) are kept until the
    next append: the hints ask the same ones of one tick many times."""

    __slots__ = ("_buf", "_cache", "_capacity", "_end", "_size", "_unknown")

    def __init__(self, capacity: int, prefill: int = 0) -> None:
        if capacity < 1:
            raise ValueError("a series needs a capacity of at least 1")
        self._capacity = capacity
        self._buf = array("d", _UNKNOWN_DOUBLE) * capacity
        """The ring: entry number ``k`` (counting every append, prefill first) lives at
        ``k % capacity``; ``_end`` is where the next one goes."""
        self._end = 0
        self._size = 0
        self._cache: dict[tuple[int, int | None], float | int | None] | None = None
        self._unknown = 0
        """How many entries are unknown (kept on append: a ring without any needs no filtering)."""
        if prefill:
            filled = min(prefill, capacity)
            self._size = self._unknown = filled
            self._end = filled % capacity

    @property
    def capacity(self) -> int:
        return self._capacity

    def append(self, value: float | None) -> None:
        buf = self._buf
        end = self._end
        if self._size == self._capacity:
            old = buf[end]
            if old != old:
                self._unknown -= 1  # the entry the append pushes out
        else:
            self._size += 1
        if value is None or value != value:
            buf[end] = _NAN
            self._unknown += 1
        else:
            buf[end] = value
        end += 1
        self._end = 0 if end == self._capacity else end
        self._cache = None

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[float | None]:
        return iter(self.last())

    @property
    def latest(self) -> float | None:
        if not self._size:
            return None
        value = self._buf[self._end - 1]
        return None if value != value else value

    def _raw(self, n: int | None) -> list[float]:
        """The newest ``n`` entries (all when ``n`` is None) as stored: NaN for unknown."""
        size = self._size
        m = size if n is None or n >= size else n
        if m <= 0:
            return []
        buf = self._buf
        end = self._end
        start = end - m
        if start >= 0:
            return buf[start:end].tolist()
        out = buf[start + self._capacity :].tolist()
        if end:
            out.extend(buf[:end].tolist())
        return out

    def last(self, n: int | None = None) -> list[float | None]:
        """The newest ``n`` entries (all when ``n`` is None), oldest first."""
        size = self._size
        m = size if n is None or n >= size else n
        start = self._end - m
        # No wrap: _raw's slice without its call (the hints' hottest read).
        out = self._buf[start : self._end].tolist() if m > 0 and start >= 0 else self._raw(m)
        if self._unknown:
            return [None if v != v else v for v in out]
        # No cast() here: a call a read, on the hints' hottest read (the list is the same).
        return out  # type: ignore[return-value]

    def known(self, n: int | None = None) -> list[float]:
        """The newest ``n`` entries with the unknowns left out."""
        out = self._raw(n)
        if self._unknown:
            return [v for v in out if v == v]
        return out

    def count_known(self, n: int | None = None) -> int:
        """How many of the newest ``n`` entries are known (no copy of them kept)."""
        if not self._unknown:
            size = self._size
            return size if n is None or n >= size else max(n, 0)
        return cast("int", self._summary(0, n))

    def _summary(self, kind: int, n: int | None) -> float | int | None:
        cache = self._cache
        if cache is None:
            cache = self._cache = {}
        else:
            key = (kind, n)
            if key in cache:
                return cache[key]
        values = self.known(n)
        result: float | int | None
        if kind == 0:
            result = len(values)
        elif not values:
            result = None
        elif kind == 1:
            result = math.fsum(values) / len(values)
        elif kind == 2:
            result = max(values)
        else:
            result = min(values)
        cache[(kind, n)] = result
        return result

    def mean(self, n: int | None = None) -> float | None:
        # The hints' most asked summary: _summary's work, without its calls.
        key = (1, n)
        cache = self._cache
        if cache is None:
            cache = self._cache = {}
        elif key in cache:
            return cache[key]
        size = self._size
        m = size if n is None or n >= size else n
        start = self._end - m
        # No wrap: _raw's slice without its call (as in last).
        values = self._buf[start : self._end].tolist() if m > 0 and start >= 0 else self._raw(m)
        if self._unknown:
            values = [v for v in values if v == v]
        result = math.fsum(values) / len(values) if values else None
        cache[key] = result
        return result

    def max(self, n: int | None = None) -> float | None:
        return cast("float | None", self._summary(2, n))

    def min(self, n: int | None = None) -> float | None:
        return cast("float | None", self._summary(3, n))

    def any_unknown(self) -> bool:
        """Whether any entry in the ring is None (then any of its newest ``n`` may be)."""
        return self._unknown > 0

    def all_unknown(self) -> bool:
        return self._unknown == self._size

    def resized(self, capacity: int) -> Series:
        out = Series(capacity)
        for value in self.last(capacity):
            out.append(value)
        return out


class PeakSeries(Series):
    """A :class:`Series` that also keeps the maximum of its whole ring up to date on
    append (a monotonic queue: O(1) amortized), so that the hints' slow window, which
    spans the ring, reads a process's SM peak without a pass over it."""

    __slots__ = ("_appended", "_head", "_peaks")

    def __init__(self, capacity: int, prefill: int = 0) -> None:
        super().__init__(capacity, prefill)
        self._appended = self._size
        """How many entries were ever appended: entry ``i`` of the ring is number
        ``_appended - len + i``, stored at ``number % capacity``."""
        self._peaks = array("q")
        """From ``_head`` on, the numbers of the known entries no later entry exceeds,
        oldest first: the first is the ring's maximum (the oldest of equal ones, as
        ``max`` picks). Their values are read from the ring."""
        self._head = 0

    def append(self, value: float | None) -> None:
        super().append(value)
        number = self._appended
        self._appended = number + 1
        peaks = self._peaks
        head = self._head
        if value is not None and value == value:
            buf = self._buf
            capacity = self._capacity
            while len(peaks) > head and buf[peaks[-1] % capacity] < value:
                peaks.pop()
            peaks.append(number)
        oldest = number + 1 - self._size
        while len(peaks) > head and peaks[head] < oldest:
            head += 1
        if head >= _PEAKS_SLACK:  # drop the expired front now and then, not each tick
            del peaks[:head]
            head = 0
        self._head = head

    def peak(self, n: int | None = None) -> float | None:
        """``max`` of the known entries among the newest ``n`` (None when none is): the
        oldest kept peak inside them. Cheap when they are most of the ring."""
        size = self._size
        oldest = self._appended - (size if n is None else min(n, size))
        peaks = self._peaks
        for i in range(self._head, len(peaks)):
            number = peaks[i]
            if number >= oldest:
                return self._buf[number % self._capacity]
        return None

    def resized(self, capacity: int) -> PeakSeries:
        out = PeakSeries(capacity)
        for value in self.last(capacity):
            out.append(value)
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
    sm_active_percent: Series
    """GPM/DCGM profiling (:data:`~gputop_hints.model.PROFILING_FIELDS`): None where the
    source does not profile or the GPU has no GPM."""
    sm_occupancy_percent: Series
    tensor_active_percent: Series
    dram_active_percent: Series
    sm_samples: deque[UtilizationSample] = field(default_factory=deque)
    """Sub-second SM readings (NVML buffered samples) inside the window."""
    sm_samples_ordered: bool = True
    """Whether ``sm_samples`` are in time order (every source's are; a tick whose batch
    was not keeps this False), so that the newest ones can be read from the end."""
    phases: object | None = None
    """The hints' record of this GPU's phases since the first tick (hints.phases, kept
    by the rules that trim a log's start-up): it reaches back further than the ring."""

    SERIES = (
        "sm_percent",
        "memory_access_percent",
        "vram_used_bytes",
        "pcie_rx_bytes_per_s",
        "pcie_tx_bytes_per_s",
        "temperature_c",
        "power_watts",
        *PROFILING_FIELDS,
    )

    @classmethod
    def empty(cls, index: int, capacity: int, prefill: int) -> GpuHistory:
        gh = cls.__new__(cls)
        gh.index = index
        for name in cls.SERIES:
            setattr(gh, name, _series(capacity, prefill))
        gh.sm_samples = deque()
        gh.sm_samples_ordered = True
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
        self.sm_active_percent.append(gpu.sm_active_percent)
        self.sm_occupancy_percent.append(gpu.sm_occupancy_percent)
        self.tensor_active_percent.append(gpu.tensor_active_percent)
        self.dram_active_percent.append(gpu.dram_active_percent)
        last = self.sm_samples[-1].timestamp if self.sm_samples else -math.inf
        new = [s for s in gpu.sm_samples if s.timestamp > last]
        if not new:
            return
        if self.sm_samples_ordered and any(b.timestamp < a.timestamp for a, b in pairwise(new)):
            self.sm_samples_ordered = False
        self.sm_samples.extend(new)

    def prune_samples(self, oldest: float) -> None:
        while self.sm_samples and self.sm_samples[0].timestamp < oldest:
            self.sm_samples.popleft()

    def resized(self, capacity: int) -> GpuHistory:
        gh = GpuHistory.empty(self.index, capacity, 0)
        for name in self.SERIES:
            setattr(gh, name, getattr(self, name).resized(capacity))
        gh.sm_samples = self.sm_samples
        gh.sm_samples_ordered = self.sm_samples_ordered
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
    toolchain_seen: float | None = field(default=None, init=False)
    """When a compiler or linker last ran among its children (``WorkerProcess.is_toolchain``):
    a job compiling, read by ``signals.compiling`` for minutes after, since each ``ptxas`` or
    ``cc1plus`` lives for seconds and a tick may fall between two."""

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
        series["sm_percent"] = PeakSeries(capacity, prefill)
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
        if any(w.is_toolchain for w in proc.workers):
            self.toolchain_seen = timestamp

    def resized(self, capacity: int) -> ProcessHistory:
        series = {name: getattr(self, name).resized(capacity) for name in self.SERIES}
        out = ProcessHistory(
            self.pid,
            self.gpu_index,
            **series,
            first_seen=self.first_seen,
            last_seen=self.last_seen,
            latest=self.latest,
        )
        out.toolchain_seen = self.toolchain_seen
        return out


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
        self._by_key: dict[int, tuple[Snapshot, dict[tuple[int, int], GpuProcess]]] = {}
        """Kept snapshot (by id) -> it and its processes by (pid, gpu): see
        :meth:`processes_by_key` (the snapshot is kept so that a reused id is never
        mistaken for it)."""

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

    def processes_by_key(self, snap: Snapshot) -> dict[tuple[int, int], GpuProcess]:
        """``snap``'s processes by (pid, gpu), the last of a duplicated key winning; built
        once per kept snapshot (the hints look a snapshot's processes up every tick it
        stays in their window). Callers do not change the dict."""
        entry = self._by_key.get(id(snap))
        if entry is None or entry[0] is not snap:
            if len(self._by_key) > 2 * len(self.snapshots) + 8:
                live = {id(s) for s in self.snapshots}
                self._by_key = {k: v for k, v in self._by_key.items() if k in live}
            entry = self._by_key[id(snap)] = (snap, {p.key: p for p in snap.processes})
        return entry[1]

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
