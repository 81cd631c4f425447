"""Statistics over the recent window that several rules share, computed once a tick.

:class:`Window` wraps a :class:`~gputop_hints.history.History` and answers the
questions rules ask ("mean SM of GPU 0 over the last 10 s", "share of that time
spent in idle gaps", "mean busy % of the allowed cores"), caching each answer
for the tick so that ten rules asking the same thing cost one computation.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import cached_property
from itertools import islice, pairwise
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, cast

from gputop_hints.hints.running import HostTallies
from gputop_hints.hints.traces import (
    GIB,
    VRAM_JUMP_S,
    VRAM_STEADY_SHARE,
    Gaps,
    idle_gaps,
    ring_idle_for_s,
    vram_rise,
)
from gputop_hints.history import History, PeakSeries, ProcessHistory, Series
from gputop_hints.model import GpuProcess, GpuSample, Snapshot

if TYPE_CHECKING:  # the stack readings' package: imported only where one is read
    from gputop_hints.stacks import StackReading

T = TypeVar("T")

__all__ = [
    "GIB",
    "VRAM_JUMP_S",
    "VRAM_STEADY_SHARE",
    "Gaps",
    "Window",
    "idle_gaps",
    "ring_idle_for_s",
    "vram_rise",
]


_timestamp = attrgetter("timestamp")
_percent = attrgetter("percent")


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def median_of(values: Sequence[float]) -> float:
    """The median (the mean of the middle two of an even count), as ``statistics.median``
    gives it, without importing ``statistics`` (and ``fractions``, ``decimal``), ~4 ms of
    every start-up. Raises ValueError for no values."""
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def _any_throttle_reasons(snaps: list[Snapshot]) -> bool:
    """Whether any GPU of ``snaps`` gives its throttle reasons (an nvidia-smi CSV
    without the column gives none: one pass instead of one per GPU)."""
    return any(g.throttle_reasons is not None for snap in snaps for g in snap.gpus)


STACK_FRESH_S = 600.0
"""A stack reading older than this (ten minutes) no longer speaks for the process: a
training loop changes phase (evaluation, checkpointing) on that scale."""


class Window:
    """The last ``window_s`` seconds of a history, with cached statistics."""

    def __init__(
        self,
        history: History,
        window_s: float,
        *,
        worker_busy_percent: float = 20.0,
        gpu_active_at: dict[int, float] | None = None,
        process_active_at: dict[tuple[int, int], float] | None = None,
        vram_steady_since: dict[tuple[int, int], tuple[float, float, float]] | None = None,
        stacks: dict[int, tuple[float, StackReading]] | None = None,
        host_tallies: HostTallies | None = None,
    ) -> None:
        latest = history.latest
        if latest is None:
            raise ValueError("an empty history has no window")
        self.history = history
        self.window_s = window_s
        self.latest: Snapshot = latest
        self.now = latest.timestamp
        self.interval_s = latest.interval_s
        self.ticks = max(1, min(len(history), round(window_s / latest.interval_s)))
        self.worker_busy_percent = worker_busy_percent
        self.gpu_active_at = gpu_active_at
        """Engine-kept time each GPU was last seen running kernels (beyond the ring)."""
        self.process_active_at = process_active_at
        """Engine-kept time each process last ran kernels of its own (or was first seen)."""
        self.vram_steady_since = vram_steady_since
        """Engine-kept (level, since, rise) of each process's VRAM."""
        self.stacks = stacks
        """Engine-kept stack readings by pid, with when they were taken (issue 45)."""
        self.host_tallies = (
            host_tallies
            if host_tallies is not None
            and host_tallies.worker_busy_percent == worker_busy_percent
            and host_tallies.covers(history)
            else None
        )
        """Engine-kept running host-side tallies of the ring (:mod:`.running`), where they
        are of this history as it is now: a window's host side is then read off them."""
        self.memo: dict[object, Any] = {}
        """What :meth:`derived` keeps. The hottest askers (a few hundred a tick) read and fill
        it themselves, with no lambda and no method call: the same key, the same value."""
        self._host_cache: dict[tuple[int, int], tuple[int, int, int, int]] = {}
        self._significant: dict[float, dict[int, list[GpuProcess]]] = {}
        self._longer: dict[float, Window] = {}
        self._most_of_ring = 2 * self.ticks > len(history)
        """Whether the window spans most of the ring (the slow window does): then a peak
        is read from what the ring keeps (:class:`~gputop_hints.history.PeakSeries`)."""
        self._sm_raw: dict[tuple[int, int], list[float | None] | None] = {}
        self._sm_gappy: set[tuple[int, int]] = set()
        self._sm_mean: dict[tuple[int, int], float | None] = {}
        self._sm_peak: dict[tuple[int, int], float | None] = {}
        self._sm_batched = False
        self._gpu_by_index: dict[int, GpuSample] | None = None
        self._reported: dict[int, bool] | None = None
        self._fine_sm: dict[int, tuple[list[float], list[float], float] | None] = {}
        self._others: dict[tuple[int, int, float], list[GpuProcess]] = {}
        self._profiling: dict[tuple[int, str], float | None] = {}

    def longer(self, window_s: float) -> Window:
        """The same history over a longer window (cached): slow patterns -- a 10-30 s
        fetch-then-compute cycle, a level judged over a minute -- need more than the few
        seconds the fast rules look at. Never longer than the history holds."""
        window_s = max(self.window_s, min(window_s, self.history.window_s))
        if window_s == self.window_s:
            return self
        win = self._longer.get(window_s)
        if win is None:
            win = self._longer[window_s] = Window(
                self.history,
                window_s,
                worker_busy_percent=self.worker_busy_percent,
                gpu_active_at=self.gpu_active_at,
                process_active_at=self.process_active_at,
                vram_steady_since=self.vram_steady_since,
                host_tallies=self.host_tallies,
            )
            # Which processes share a GPU is the newest snapshot's, whatever the span:
            # the longer window reads the lists this one made (and adds to them).
            win._significant = self._significant
            win._others = self._others
        return win

    # --- sizes ----------------------------------------------------------------

    @property
    def covered_s(self) -> float:
        """How much time the window actually covers (less than window_s at start-up)."""
        return self.ticks * self.interval_s

    # --- host -------------------------------------------------------------------

    def derived(self, key: object, compute: Callable[[], T]) -> T:
        """``compute()``, once per window: several rules ask the same question of one
        tick (idle gaps, which ranks hang or straggle); the answer is worked out once."""
        derived = self.memo
        if key in derived:
            found: T = derived[key]
            return found
        value = derived[key] = compute()
        return value

    def once(self, key: object, compute: Callable[..., T], *args: Any) -> T:
        """``compute(*args)``, once per window: :meth:`derived` without a lambda made at
        each ask (the per-process questions several rules ask every tick)."""
        derived = self.memo
        if key in derived:
            found: T = derived[key]
            return found
        value = derived[key] = compute(*args)
        return value

    @cached_property
    def allowed_cores_busy_percent(self) -> float | None:
        cores = self.history.cores
        means = [
            cores[i].mean(self.ticks) for i in self.latest.host.allowed_cores if i < len(cores)
        ]
        known = [m for m in means if m is not None]
        return _mean(known)

    def allowed_cores_busy_latest(self, ticks: int) -> float | None:
        """Mean busy % of the allowed cores over just the latest ``ticks`` ticks (once
        per window: it does not depend on the process asking)."""
        n = max(1, min(ticks, self.ticks))

        def compute() -> float | None:
            cores = self.history.cores
            allowed = self.latest.host.allowed_cores
            means = [cores[i].mean(n) for i in allowed if i < len(cores)]
            return _mean([m for m in means if m is not None])

        return self.derived(("cores_busy_latest", n), compute)

    @cached_property
    def iowait_percent(self) -> float | None:
        return self.history.iowait_percent.mean(self.ticks)

    @property
    def allowed_core_count(self) -> int:
        return len(self.latest.host.allowed_cores) or self.latest.host.core_count

    # --- GPUs -------------------------------------------------------------------

    def gpu(self, index: int) -> GpuSample | None:
        """``latest.gpu(index)``, from an index of the newest snapshot's GPUs made once
        per window (the first listed with an index, as ``Snapshot.gpu`` finds it)."""
        by_index = self._gpu_by_index
        if by_index is None:
            by_index = self._gpu_by_index = {}
            for g in reversed(self.latest.gpus):
                by_index[g.index] = g
        return by_index.get(index)

    def gpu_sm_mean(self, index: int) -> float | None:
        gh = self.history.gpus.get(index)
        return gh.sm_percent.mean(self.ticks) if gh else None

    def gpu_sm_min(self, index: int) -> float | None:
        gh = self.history.gpus.get(index)
        return gh.sm_percent.min(self.ticks) if gh else None

    def gpu_mem_mean(self, index: int) -> float | None:
        gh = self.history.gpus.get(index)
        return gh.memory_access_percent.mean(self.ticks) if gh else None

    def gpu_profiling_mean(self, index: int, name: str) -> float | None:
        """Mean of a GPM/DCGM profiling percentage (``name``: one of
        :data:`~gputop_hints.model.PROFILING_FIELDS`) over the window, when the GPU gave
        it in at least half the window's ticks (None otherwise: a rule then falls back to
        utilization, power and the host side)."""
        key = (index, name)
        cache = self._profiling
        if key in cache:
            return cache[key]
        mean: float | None = None
        gh = self.history.gpus.get(index)
        if gh is not None:
            series: Series = getattr(gh, name)
            if 2 * series.count_known(self.ticks) >= min(self.ticks, len(series)):
                mean = series.mean(self.ticks)
        cache[key] = mean
        return mean

    def gpu_pcie_mean(self, index: int) -> float | None:
        """Mean rx + tx in bytes/s (None when either direction is never known)."""
        means = self.gpu_pcie_means(index)
        return None if means is None else means[0] + means[1]

    def gpu_pcie_means(self, index: int) -> tuple[float, float] | None:
        """Mean (rx, tx) in bytes/s (None when either direction is never known)."""
        gh = self.history.gpus.get(index)
        if gh is None:
            return None
        rx = gh.pcie_rx_bytes_per_s.mean(self.ticks)
        tx = gh.pcie_tx_bytes_per_s.mean(self.ticks)
        if rx is None or tx is None:
            return None
        return rx, tx

    def gpu_pcie_busy_fraction(self, index: int, limit_bytes_per_s: float) -> float | None:
        """Share of window ticks whose rx + tx reading reached ``limit_bytes_per_s``.

        NVML measures PCIe over ~20 ms per query, so single readings are all or
        nothing; the share of readings that catch heavy traffic estimates how much
        of the time the link is busy, more steadily than their mean does.
        """
        gh = self.history.gpus.get(index)
        if gh is None:
            return None
        rx = gh.pcie_rx_bytes_per_s.last(self.ticks)
        tx = gh.pcie_tx_bytes_per_s.last(self.ticks)
        known = [a + b for a, b in zip(rx, tx, strict=True) if a is not None and b is not None]
        if not known:
            return None
        return sum(1 for v in known if v >= limit_bytes_per_s) / len(known)

    def gpu_fine_sm(self, index: int) -> tuple[list[float], list[float], float] | None:
        """NVML buffered SM samples inside the window: (times, values, period), if any."""
        fine = self._fine_sm
        if index in fine:
            return fine[index]
        found = fine[index] = self._gpu_fine_sm(index)
        return found

    def _gpu_fine_sm(self, index: int) -> tuple[list[float], list[float], float] | None:
        gh = self.history.gpus.get(index)
        if gh is None or len(gh.sm_samples) < 4:
            return None
        start = self.now - self.covered_s
        samples = gh.sm_samples
        if gh.sm_samples_ordered:  # in time order: the window's are the newest, one slice
            first = bisect_right(samples, start, key=_timestamp)
            pts = list(islice(samples, first, len(samples)))
        else:
            pts = [s for s in samples if s.timestamp > start]
        if len(pts) < 4:
            return None
        times = list(map(_timestamp, pts))
        spacing = [b - a for a, b in pairwise(times) if b > a]
        if not spacing:
            return None
        period = median_of(spacing)
        # Fewer than ~2 samples a tick is no finer than the tick itself.
        if period > self.interval_s / 2:
            return None
        return times, list(map(_percent, pts)), period

    def gpu_gaps(self, index: int, below: float, min_gap_s: float) -> Gaps | None:
        """Idle gaps of a GPU, from sub-second samples where NVML has them."""
        return self.derived(
            ("gaps", index, below, min_gap_s), lambda: self._gpu_gaps(index, below, min_gap_s)
        )

    def _gpu_gaps(self, index: int, below: float, min_gap_s: float) -> Gaps | None:
        fine = self.gpu_fine_sm(index)
        if fine is not None:
            _times, values, period = fine
            return idle_gaps(values, period, below, min_gap_s, fine=True)
        gh = self.history.gpus.get(index)
        values = gh.sm_percent.known(self.ticks) if gh else []
        return idle_gaps(values, self.interval_s, below, min_gap_s, fine=False)

    def gpu_idle_for_s(self, index: int, below: float) -> float:
        """How long (up to now) the GPU's SM % has stayed below ``below``.

        Uses the engine's record of when the GPU last ran kernels where there is
        one (it reaches back further than the history ring), else the ring.
        """
        if self.gpu_active_at is not None and index in self.gpu_active_at:
            return max(0.0, self.now - self.gpu_active_at[index])
        gh = self.history.gpus.get(index)
        return 0.0 if gh is None else ring_idle_for_s(gh, self.now, self.interval_s, below)

    def gpu_power_mean(self, index: int) -> float | None:
        """Mean power draw over the window, W."""
        gh = self.history.gpus.get(index)
        return gh.power_watts.mean(self.ticks) if gh else None

    def gpu_temperature_peak(self, index: int) -> float | None:
        """Hottest reading of the window, C: evidence for the episode, not its first tick."""
        gh = self.history.gpus.get(index)
        return gh.temperature_c.max(self.ticks) if gh else None

    def throttle_fraction(self, index: int, reasons: frozenset[str]) -> tuple[float, set[str]]:
        """Share of window ticks with one of ``reasons`` active, and which were seen."""
        snaps = self.derived("snapshots", lambda: list(self.history.snapshots)[-self.ticks :])
        if not self.derived("throttle-known", lambda: _any_throttle_reasons(snaps)):
            return 0.0, set()  # a source without throttle reasons: no GPU has any
        hits = 0
        known = 0
        seen: set[str] = set()
        for snap in snaps:
            g = snap.gpu(index)
            if g is None or g.throttle_reasons is None:
                continue
            known += 1
            active = reasons.intersection(g.throttle_reasons)
            if active:
                hits += 1
                seen |= active
        return (hits / known if known else 0.0), seen

    # --- processes --------------------------------------------------------------

    def stack_reading(
        self, proc: GpuProcess, fresh_s: float = STACK_FRESH_S
    ) -> StackReading | None:
        """``proc``'s stack reading if one was taken in the last ``fresh_s`` seconds (by
        the snapshots' clock) and has samples; None otherwise -- the rules then read
        what they always read."""
        if not self.stacks:
            return None
        got = self.stacks.get(proc.pid)
        if got is None:
            return None
        at, reading = got
        if reading.samples == 0 or self.now - at > fresh_s:
            return None
        return reading

    def processes(self) -> tuple[GpuProcess, ...]:
        return self.latest.processes

    def process_idle_for_s(self, proc: GpuProcess, below: float) -> float:
        """How long the process itself has run no kernel, bounded by when it was first seen.

        From the engine's record where there is one; else the process's own ring
        (no sample = ran nothing), else the device's idle time.
        """
        key = (proc.pid, proc.gpu_index)  # GpuProcess.key, without its call
        if self.process_active_at is not None and key in self.process_active_at:
            return max(0.0, self.now - self.process_active_at[key])
        values = self.process_sm_values(proc, ticks=len(self.history))
        if values is None:
            ph = self.process_history(proc)
            seen = self.now - ph.first_seen if ph else 0.0
            return min(seen, self.gpu_idle_for_s(proc.gpu_index, below))
        run = 0
        for v in reversed(values):
            if v >= below:
                break
            run += 1
        return run * self.interval_s

    def vram_steady(
        self, proc: GpuProcess, tolerance_bytes: float
    ) -> tuple[float, float, float] | None:
        """(level, since, rise): the process's VRAM now, since when it has held that level
        (within ``tolerance_bytes``), and how much it rose in the seconds before reaching
        it -- from its ring, or the engine's longer record."""
        ph = self.process_history(proc)
        if ph is None or proc.vram_bytes is None:
            return None
        level = float(proc.vram_bytes)
        values = ph.vram_bytes.last()
        run = 0
        for v in reversed(values):
            if v is None or abs(v - level) > tolerance_bytes:
                break
            run += 1
        since = max(ph.first_seen, self.now - (run - 1) * self.interval_s)
        rise = vram_rise(values, len(values) - max(1, run), self.interval_s)
        tracked = self.vram_steady_since.get(proc.key) if self.vram_steady_since else None
        if (
            tracked is not None
            and abs(tracked[0] - level) <= tolerance_bytes
            and tracked[1] < since
        ):
            since, rise = tracked[1], tracked[2]
        return level, since, rise

    def process_history(self, proc: GpuProcess) -> ProcessHistory | None:
        # History.process and GpuProcess.key inline: asked ~450 times a tick at 8 x 64.
        return self.history.processes.get((proc.pid, proc.gpu_index))

    def process_samples_reported(self, index: int) -> bool:
        """Whether NVML gives per-process SM samples on GPU ``index`` (any process, any tick).

        NVML keeps a per-process sample only for a process that ran kernels in the
        period (``nvmlDeviceGetProcessUtilization``). Where it reports any, a process
        without one ran nothing; where it never reports any (unsupported, vGPU,
        containers), a missing sample is unknown.
        """
        reported = self._reported
        if reported is None:
            # One pass over the processes answers it for every GPU.
            reported = self._reported = {}
            for ph in self.history.processes.values():
                if not reported.get(ph.gpu_index):
                    reported[ph.gpu_index] = ph.sm_percent.max() is not None
        return reported.get(index, False)

    def process_sm_values(self, proc: GpuProcess, ticks: int | None = None) -> list[float] | None:
        """The process's own SM % per tick since it was first seen, None when unknown.

        A tick without a sample reads 0 where the device reports per-process samples
        (see :meth:`process_samples_reported`), so a mean covers idle ticks too.
        """
        return self.derived(
            ("process-sm", proc.pid, proc.gpu_index, ticks),
            lambda: self._process_sm_values(proc, ticks),
        )

    def _process_sm_values(self, proc: GpuProcess, ticks: int | None) -> list[float] | None:
        ph = self.process_history(proc)
        if ph is None:
            return None
        if ticks is None:
            # The window's own span: the list :meth:`_process_sm_window` read serves as it
            # is where none of it is unknown (no second copy of the ring).
            raw = self._process_sm_window(proc)
            if raw is not None and proc.key not in self._sm_gappy:
                return cast("list[float]", raw)
        seen = int((self.now - ph.first_seen) / self.interval_s + 1e-6) + 1
        n = max(1, min(ticks or self.ticks, seen))
        if not self.process_samples_reported(proc.gpu_index):
            return None
        return [0.0 if v is None else v for v in ph.sm_percent.last(n)]

    def _process_sm_window(self, proc: GpuProcess) -> list[float | None] | None:
        """The newest entries of ``proc``'s own SM series that :meth:`process_sm_values`
        covers, unknowns not yet read as 0 (once per window and process; None where that
        is None or empty)."""
        key = (proc.pid, proc.gpu_index)  # GpuProcess.key, without its call
        raw = self._sm_raw
        if key in raw:
            return raw[key]
        values: list[float | None] | None = None
        ph = self.history.processes.get(key)
        if ph is not None and self.process_samples_reported(proc.gpu_index):
            values = ph.sm_percent.last(self._sm_ticks(ph)) or None
            if values is not None and ph.sm_percent.any_unknown() and None in values:
                # A process seen for the whole ring usually has no gap: no filtering then.
                self._sm_gappy.add(key)
        raw[key] = values
        return values

    def _sm_batch(self) -> None:
        """Every listed process's own SM window, mean and peak in one pass (once per
        window): :meth:`process_sm_mean` and :meth:`process_sm_peak` are asked of each
        process several times a tick, and this is each one's first answer without the
        per-process calls. The same values as :meth:`_process_sm_window`, the mean and
        the peak work out one process at a time (the same lists, the same fsum)."""
        self._sm_batched = True
        if not self.latest.processes:
            return
        self.process_samples_reported(0)  # fills self._reported for every GPU
        reported = self._reported or {}
        histories = self.history.processes
        raw, gappy, means, peaks = self._sm_raw, self._sm_gappy, self._sm_mean, self._sm_peak
        now, interval, ticks = self.now, self.interval_s, self.ticks
        most = self._most_of_ring
        fsum = math.fsum
        for proc in self.latest.processes:
            key = (proc.pid, proc.gpu_index)
            if key in raw or key in means or key in peaks:
                continue  # asked one at a time already: left to those paths
            ph = histories.get(key)
            if ph is None or not reported.get(proc.gpu_index, False):
                raw[key] = None
                continue
            series = ph.sm_percent
            seen = int((now - ph.first_seen) / interval + 1e-6) + 1
            n = ticks if ticks < seen else seen
            if n < 1:
                n = 1
            values = series.last(n) or None
            raw[key] = values
            if values is None:
                means[key] = peaks[key] = None
                continue
            unknown = series.any_unknown()
            if unknown and None in values:
                gappy.add(key)
                known = [v for v in values if v is not None]
                means[key] = fsum(known) / len(values)
                found = max(known, default=0.0)
                peaks[key] = found if found > 0.0 else 0.0
                continue
            known_values: list[float] = values  # type: ignore[assignment]  # none unknown
            means[key] = fsum(known_values) / len(known_values)
            if most and not unknown and isinstance(series, PeakSeries):
                peaks[key] = series.peak(n)
            else:
                peaks[key] = max(known_values)

    def _sm_ticks(self, ph: ProcessHistory) -> int:
        """How many of the newest entries of a process's own SM series the window covers:
        never more than since it was first seen (as :meth:`_process_sm_values`)."""
        seen = int((self.now - ph.first_seen) / self.interval_s + 1e-6) + 1
        return max(1, min(self.ticks, seen))

    def process_sm_mean(self, proc: GpuProcess) -> float | None:
        """The process's own SM % mean over the window (no sample = ran nothing = 0),
        without building :meth:`process_sm_values`: a missing sample reads 0 there, which
        adds nothing to the (exact) sum."""
        key = (proc.pid, proc.gpu_index)  # GpuProcess.key, without its call
        means = self._sm_mean
        if key in means:
            return means[key]
        if not self._sm_batched:
            self._sm_batch()
            if key in means:
                return means[key]
        values = self._process_sm_window(proc)
        mean: float | None = None
        if values is not None:
            if key in self._sm_gappy:
                mean = math.fsum([v for v in values if v is not None]) / len(values)
            else:
                mean = math.fsum(cast("list[float]", values)) / len(values)
        means[key] = mean
        return mean

    def process_sm_peak(self, proc: GpuProcess) -> float | None:
        """The process's own SM % peak over the window (no sample = ran nothing = 0);
        None where :meth:`process_sm_values` is None or empty. A missing sample lowers no
        maximum of percentages."""
        key = (proc.pid, proc.gpu_index)  # GpuProcess.key, without its call
        peaks = self._sm_peak
        if key in peaks:
            return peaks[key]
        if not self._sm_batched:
            self._sm_batch()
            if key in peaks:
                return peaks[key]
        peak: float | None = None
        ph = self.history.processes.get(key) if self._most_of_ring else None
        series = ph.sm_percent if ph is not None else None
        if (
            ph is not None
            and isinstance(series, PeakSeries)
            and not series.any_unknown()
            and self.process_samples_reported(proc.gpu_index)
        ):
            # The window spans most of the ring (the slow window), none of it unknown:
            # its peak is kept on append.
            peak = series.peak(self._sm_ticks(ph))
            peaks[key] = peak
            return peak
        values = self._process_sm_window(proc)
        if values is not None:
            if key in self._sm_gappy:
                found = max([v for v in values if v is not None], default=0.0)
                peak = found if found > 0.0 else 0.0
            else:
                peak = max(cast("list[float]", values))
        peaks[key] = peak
        return peak

    def process_gaps(self, proc: GpuProcess, below: float, min_gap_s: float) -> Gaps | None:
        """Idle gaps in the process's own SM % (one value per tick, where NVML reports it)."""
        values = self.process_sm_values(proc)
        if not values:
            return None
        return idle_gaps(values, self.interval_s, below, min_gap_s, fine=False)

    def process_cpu_mean(self, proc: GpuProcess) -> float | None:
        ph = self.history.processes.get((proc.pid, proc.gpu_index))
        return ph.cpu_percent.mean(self.ticks) if ph else proc.cpu_percent

    def process_workers_cpu_mean(self, proc: GpuProcess) -> float | None:
        ph = self.history.processes.get((proc.pid, proc.gpu_index))
        return ph.workers_cpu_percent.mean(self.ticks) if ph else proc.workers_cpu_percent

    @cached_property
    def _window_index(self) -> list[dict[tuple[int, int], GpuProcess]]:
        """Each window snapshot's processes by (pid, gpu): one pass serves every lookup."""
        index = self.history.processes_by_key
        return [index(snap) for snap in list(self.history.snapshots)[-self.ticks :]]

    def _host_side(self, proc: GpuProcess) -> tuple[int, int, int, int]:
        """Ticks present, busy workers summed, and (D-state, known) state counts, for one
        process over the window's snapshots.

        Read off the engine's running tallies where it keeps them (a window of any length
        costs the same); else counted, only for processes a rule gets far enough to ask
        about.
        """
        key = (proc.pid, proc.gpu_index)  # GpuProcess.key, without its call
        cached = self._host_cache.get(key)
        if cached is not None:
            return cached
        tallies = self.host_tallies
        if tallies is not None:
            result = tallies.window(key, min(self.ticks, len(self.history.snapshots)))
        else:
            result = self._host_side_counted(key)
        self._host_cache[key] = result
        return result

    def _host_side_counted(self, key: tuple[int, int]) -> tuple[int, int, int, int]:
        threshold = self.worker_busy_percent
        n = busy = d = known = 0
        for index in self._window_index:
            p = index.get(key)
            if p is None:
                continue
            n += 1
            busy += p.busy_workers(threshold)
            for state in (p.state, *(w.state for w in p.workers)):
                if state is not None:
                    known += 1
                    d += state == "D"
        return n, busy, d, known

    def process_busy_workers_mean(self, proc: GpuProcess) -> float | None:
        """Mean number of workers above ``worker_busy_percent`` of a core, over the window."""
        n, busy, _, _ = self._host_side(proc)
        return busy / n if n else None

    def process_d_state_fraction(self, proc: GpuProcess) -> float:
        """Share of (process or worker, tick) pairs in D state, main process included."""
        _, _, d, known = self._host_side(proc)
        return d / known if known else 0.0

    def significant_processes_on(self, index: int, min_vram_bytes: float) -> list[GpuProcess]:
        """Processes on GPU ``index`` holding at least ``min_vram_bytes`` (cached per tick)."""
        by_gpu = self._significant.get(min_vram_bytes)
        if by_gpu is None:
            by_gpu = {}
            for p in self.latest.processes:
                if (p.vram_bytes or 0) >= min_vram_bytes:
                    by_gpu.setdefault(p.gpu_index, []).append(p)
            self._significant[min_vram_bytes] = by_gpu
        return by_gpu.get(index, [])

    def others_on_gpu(self, proc: GpuProcess, min_vram_bytes: float) -> list[GpuProcess]:
        """The other processes on ``proc``'s GPU holding at least ``min_vram_bytes``
        (cached per tick; callers do not change the list)."""
        key = (proc.gpu_index, proc.pid, min_vram_bytes)
        found = self._others.get(key)
        if found is None:
            pid = proc.pid
            found = self._others[key] = [
                p
                for p in self.significant_processes_on(proc.gpu_index, min_vram_bytes)
                if p.pid != pid
            ]
        return found
