"""Constant-memory statistics for the report: mean, peak and quantiles from bins.

A day-long recording of a big machine holds millions of values per metric; the
report keeps fixed histograms instead -- 0.5-point bins for percentages (exact
to within 0.5 points, rounded down), 2 %-wide log bins for rates -- while means
and peaks stay exact. No Textual here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gputop_hints.model import PROFILING_FIELDS, GpuSample, Snapshot
from gputop_hints.recording.format import (
    G_INDEX,
    G_MEM,
    G_POWER,
    G_PROFILING,
    G_RX,
    G_SAMPLES,
    G_SM,
    G_TEMPERATURE,
    G_THROTTLE,
    G_TX,
    G_VRAM_USED,
    profiling_columns,
)
from gputop_hints.recording.lazy import LazyTick
from gputop_hints.streams import (
    METRIC_MEMORY_ACCESS,
    METRIC_PCIE,
    METRIC_POWER,
    METRIC_SM,
    METRIC_SUBSECOND,
    METRIC_TEMPERATURE,
    METRIC_THROTTLE,
    METRIC_VRAM,
    TickView,
)

_PRESENCE_METRICS = (METRIC_THROTTLE, METRIC_POWER, METRIC_TEMPERATURE, METRIC_SUBSECOND)
"""Metrics a GPU's tick only shows the presence of (their figures come from elsewhere)."""


class _BinnedStats:
    """Count, mean and peak of a quantity, and quantiles from bins (subclasses bin)."""

    __slots__ = ("_peak", "count", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self._peak = -math.inf

    @property
    def peak(self) -> float | None:
        return self._peak if self.count else None

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        raise NotImplementedError

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "mean": self.mean,
            "p50": self.quantile(0.5),
            "p95": self.quantile(0.95),
            "max": self.peak,
            "samples": self.count,
        }


class PercentStats(_BinnedStats):
    """Mean, peak and quantiles of a 0-100 quantity, from 0.5-point bins."""

    __slots__ = ("bins",)

    def __init__(self) -> None:
        super().__init__()
        self.bins = [0] * 201

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        if value > self._peak:
            self._peak = value
        i = int(value * 2.0)
        self.bins[0 if i < 0 else 200 if i > 200 else i] += 1

    def quantile(self, q: float) -> float | None:
        """Lower edge of the bin holding the q-quantile (within 0.5 points)."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for i, n in enumerate(self.bins):
            seen += n
            if seen >= rank:
                return i / 2.0
        return 100.0


_LOG_RATIO = math.log(1.02)
_INV_LOG_RATIO = 1.0 / _LOG_RATIO


class RateStats(_BinnedStats):
    """Mean, peak and quantiles of a non-negative rate (bytes/s), from 2 %-wide log bins."""

    __slots__ = ("bins",)

    def __init__(self) -> None:
        super().__init__()
        self.bins: dict[int, int] = {}

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        if value > self._peak:
            self._peak = value
        i = -1 if value < 1.0 else int(math.log(value) * _INV_LOG_RATIO)
        bins = self.bins
        bins[i] = bins.get(i, 0) + 1

    def quantile(self, q: float) -> float | None:
        """Lower edge of the bin holding the q-quantile (within 2 %; 0 below 1 B/s)."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for i in sorted(self.bins):
            seen += self.bins[i]
            if seen >= rank:
                return 0.0 if i < 0 else math.exp(i * _LOG_RATIO)
        return self.peak


@dataclass
class GpuStats:
    """One GPU's statistics over a recording."""

    index: int
    name: str | None = None
    vram_total_bytes: int | None = None
    ticks: int = 0
    sm: PercentStats = field(default_factory=PercentStats)
    memory_access: PercentStats = field(default_factory=PercentStats)
    vram_percent: PercentStats = field(default_factory=PercentStats)
    vram_peak_bytes: int | None = None
    pcie_rx: RateStats = field(default_factory=RateStats)
    pcie_tx: RateStats = field(default_factory=RateStats)
    profiling: dict[str, PercentStats] = field(
        default_factory=lambda: {name: PercentStats() for name in PROFILING_FIELDS}
    )
    """DCGM profiling percentages (SM active, occupancy, tensor, DRAM active) by the
    model's field name; counted only where a source has them."""

    @property
    def profiled(self) -> bool:
        return any(s.count for s in self.profiling.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "ticks": self.ticks,
            "sm_percent": self.sm.to_dict(),
            "memory_access_percent": self.memory_access.to_dict(),
            "vram_used_percent": self.vram_percent.to_dict(),
            "vram_peak_bytes": self.vram_peak_bytes,
            "vram_total_bytes": self.vram_total_bytes,
            "pcie_rx_bytes_per_s": self.pcie_rx.to_dict(),
            "pcie_tx_bytes_per_s": self.pcie_tx.to_dict(),
            "profiling": {name: s.to_dict() for name, s in self.profiling.items()},
        }


class GpuTable:
    """Statistics of every GPU, taken from the GPU samples of each tick, named and
    sized from the recording header's ``gpus`` where the file has one; an imported
    log has no such header, so there a GPU's VRAM total is its samples' (nvidia-smi's
    ``memory.total``, the first one given), which gives its VRAM used a percent."""

    def __init__(self, listed: Any) -> None:
        self._header_gpus = {
            int(g["index"]): g
            for g in (listed if isinstance(listed, list) else ())
            if isinstance(g, dict)
        }
        self.gpus: dict[int, GpuStats] = {}
        self._replay: dict[
            int, tuple[GpuSample, GpuStats, list[tuple[Callable[[float], None], float]]]
        ] = {}
        """By GPU index, its last sample, statistics and adds (see :meth:`_add_gpu`)."""

    @property
    def header_records(self) -> dict[int, Any]:
        """Each GPU's static record from the recording's header (name, totals, limits)."""
        return self._header_gpus

    def add(self, tick: TickView, seen: dict[str, bool]) -> None:
        """Count one tick's GPUs; mark in ``seen`` each metric that has a value."""
        if tick.__class__ is LazyTick:
            # A recording's tick: its checked GPU columns, without building GpuSamples.
            self._add_columns(tick.gpus, seen)
            return
        try:
            for g in tick.gpu_samples():
                self._add_gpu(g, seen)
        except (IndexError, KeyError, TypeError, ValueError):
            pass  # a malformed GPU column: the rest of the tick still counts

    def _add_gpu(self, g: GpuSample, seen: dict[str, bool]) -> None:
        last = self._replay.get(g.index)
        if last is not None and last[0] is g:
            # The GPU's sample of its last tick again (an imported log whose values did
            # not change): the same values into the same statistics.
            st, adds = last[1], last[2]
        else:
            st, adds = self._adds(g, seen)
            self._replay[g.index] = (g, st, adds)
        st.ticks += 1
        for add, value in adds:
            add(value)

    def _adds(
        self, g: GpuSample, seen: dict[str, bool]
    ) -> tuple[GpuStats, list[tuple[Callable[[float], None], float]]]:
        """One GPU sample's statistics, the values it adds to them (each with the add
        that takes it), and what it changes besides: the VRAM total and peak, and in
        ``seen`` each metric that has a value."""
        st = self._stats_for(g.index)
        if g.vram_total_bytes and not st.vram_total_bytes:
            st.vram_total_bytes = g.vram_total_bytes
        adds: list[tuple[Callable[[float], None], float]] = []
        sm, mem, used = g.sm_percent, g.memory_access_percent, g.vram_used_bytes
        if sm is not None:
            adds.append((st.sm.add, sm))
            seen[METRIC_SM] = True
        if mem is not None:
            adds.append((st.memory_access.add, mem))
            seen[METRIC_MEMORY_ACCESS] = True
        if used is not None:
            seen[METRIC_VRAM] = True
            if st.vram_peak_bytes is None or used > st.vram_peak_bytes:
                st.vram_peak_bytes = used
            if st.vram_total_bytes:
                adds.append((st.vram_percent.add, used / st.vram_total_bytes * 100.0))
        rx, tx = g.pcie_rx_bytes_per_s, g.pcie_tx_bytes_per_s
        if rx is not None:
            adds.append((st.pcie_rx.add, rx))
            seen[METRIC_PCIE] = True
        if tx is not None:
            adds.append((st.pcie_tx.add, tx))
            seen[METRIC_PCIE] = True
        present = (g.throttle_reasons, g.power_watts, g.temperature_c, g.sm_samples or None)
        for metric, value in zip(_PRESENCE_METRICS, present, strict=True):
            if value is not None:
                seen[metric] = True
        for name, stats in st.profiling.items():
            value = getattr(g, name)
            if value is not None:
                adds.append((stats.add, value))
        return st, adds

    def _add_columns(self, gpus: list[Any], seen: dict[str, bool]) -> None:
        """:meth:`_add_gpu` for a recording's GPU columns (checked by
        :func:`~gputop_hints.recording.values.clean_gpu_columns`): the same counts,
        read from the columns :func:`~gputop_hints.recording.format.decode_gpu` reads."""
        # _count inlined (the same steps): this runs for every GPU of every tick.
        table = self.gpus
        for g in gpus:
            st = table.get(g[G_INDEX])
            if st is None:
                st = self._stats_for(g[G_INDEX])
            st.ticks += 1
            sm = g[G_SM]
            if sm is not None:
                st.sm.add(sm)
                seen[METRIC_SM] = True
            mem = g[G_MEM]
            if mem is not None:
                st.memory_access.add(mem)
                seen[METRIC_MEMORY_ACCESS] = True
            used = g[G_VRAM_USED]
            if used is not None:
                seen[METRIC_VRAM] = True
                if st.vram_peak_bytes is None or used > st.vram_peak_bytes:
                    st.vram_peak_bytes = used
                if st.vram_total_bytes:
                    st.vram_percent.add(used / st.vram_total_bytes * 100.0)
            rx = g[G_RX]
            if rx is not None:
                st.pcie_rx.add(rx)
                seen[METRIC_PCIE] = True
            tx = g[G_TX]
            if tx is not None:
                st.pcie_tx.add(tx)
                seen[METRIC_PCIE] = True
            if g[G_THROTTLE] is not None:
                seen[METRIC_THROTTLE] = True
            if g[G_POWER] is not None:
                seen[METRIC_POWER] = True
            if g[G_TEMPERATURE] is not None:
                seen[METRIC_TEMPERATURE] = True
            if g[G_SAMPLES]:
                seen[METRIC_SUBSECOND] = True
            if len(g) > G_PROFILING:
                for stats, value in zip(st.profiling.values(), profiling_columns(g), strict=True):
                    if value is not None:
                        stats.add(value)

    def _stats_for(self, index: int) -> GpuStats:
        st = self.gpus.get(index)
        if st is None:
            static = self._header_gpus.get(index, {})
            st = GpuStats(int(index), static.get("name"), static.get("vram_total_bytes"))
            self.gpus[index] = st
        return st

    def in_order(self) -> list[GpuStats]:
        return [self.gpus[k] for k in sorted(self.gpus)]


class _Running(_BinnedStats):
    """Count, mean and peak without bins or quantiles (a process table may hold
    thousands)."""

    __slots__ = ()

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        if value > self._peak:
            self._peak = value

    def to_dict(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "max": self.peak, "samples": self.count}


@dataclass
class ProcessStats:
    """One GPU process (a pid on a GPU) over the ticks the report decoded in full."""

    pid: int
    gpu_index: int
    name: str | None = None
    user: str | None = None
    container: str | None = None
    """The container, pod or batch job it ran in (GpuProcess.container), where recorded."""
    first_seen: float = 0.0
    last_seen: float = 0.0
    ticks: int = 0
    sm: _Running = field(default_factory=_Running)
    memory_access: _Running = field(default_factory=_Running)
    cpu: _Running = field(default_factory=_Running)
    vram_peak_bytes: int | None = None

    @property
    def weight(self) -> tuple[float, int, int]:
        """What ranks a process first: GPU time, then memory held, then how long seen."""
        return (self.sm.total, self.vram_peak_bytes or 0, self.ticks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "gpu_index": self.gpu_index,
            "name": self.name,
            "user": self.user,
            "container": self.container,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "ticks": self.ticks,
            "sm_percent": self.sm.to_dict(),
            "memory_access_percent": self.memory_access.to_dict(),
            "cpu_percent": self.cpu.to_dict(),
            "vram_peak_bytes": self.vram_peak_bytes,
        }


class ProcessTable:
    """Per-process statistics from the fully decoded ticks, in bounded memory: past
    ``limit`` processes (churn: thousands of short-lived ones) the lightest are
    dropped, and counted."""

    def __init__(self, limit: int = 1000) -> None:
        self.limit = limit
        self.processes: dict[tuple[int, int], ProcessStats] = {}
        self.dropped = 0

    def add(self, snap: Snapshot) -> None:
        ts = snap.timestamp
        table = self.processes
        for p in snap.processes:
            key = (p.pid, p.gpu_index)
            st = table.get(key)
            if st is None:
                st = table[key] = ProcessStats(p.pid, p.gpu_index, first_seen=ts)
            st.ticks += 1
            st.last_seen = ts
            if p.name:
                st.name = p.name
            if p.user:
                st.user = p.user
            if p.container:
                st.container = p.container
            if p.sm_percent is not None:
                st.sm.add(p.sm_percent)
            if p.memory_access_percent is not None:
                st.memory_access.add(p.memory_access_percent)
            if p.cpu_percent is not None:
                st.cpu.add(p.cpu_percent)
            vram = p.vram_bytes
            if vram is not None and (st.vram_peak_bytes is None or vram > st.vram_peak_bytes):
                st.vram_peak_bytes = vram
        if len(table) > 2 * self.limit:
            self._shrink()

    def _shrink(self) -> None:
        kept = sorted(self.processes.values(), key=lambda s: s.weight, reverse=True)
        self.dropped += len(kept) - self.limit
        self.processes = {(s.pid, s.gpu_index): s for s in kept[: self.limit]}

    def ranked(self) -> list[ProcessStats]:
        """Heaviest first (GPU time, then VRAM, then time seen)."""
        return sorted(self.processes.values(), key=lambda s: s.weight, reverse=True)
