"""Piecewise-constant activity of one simulated process, integrated exactly.

A simulated process is described by *lanes* -- how many kernels-worth of GPU
time, bytes per second of PCIe traffic, cores of CPU, tasks in D state ... it
has at each instant -- as a list of :class:`Segment` (a duration and one level
per lane). A :class:`Timeline` is a one-off prefix (model loading, warm-up)
followed by a period that repeats forever.

Everything a snapshot reports is an average of a lane over some window: SM %
over the tick, PCIe over NVML's ~20 ms window, SM % over each 1/6 s buffered
sample. Because the lanes are piecewise constant, their running integral is
piecewise linear, and the average over any ``[a, b)`` is
``(F(b) - F(a)) / (b - a)`` -- exact for any tick interval (0.25 s or 60 s),
and O(log segments) to evaluate with a bisection over precomputed breakpoints.
That is what keeps ``sample()`` cheap at 8 GPUs x 64 processes.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

KERNEL = 0
"""Share of time at least one kernel of this process runs (0-1)."""
MEM = 1
"""Share of time device memory is read or written on this process's behalf (0-1)."""
RX = 2
"""Host -> device bytes per second."""
TX = 3
"""Device -> host bytes per second."""
MAIN_CPU = 4
"""Cores the main process keeps busy (0-1)."""
MAIN_IO = 5
"""Share of time the main process sleeps uninterruptibly on I/O (D state, 0-1)."""
WORKERS_CPU = 6
"""Cores the DataLoader workers keep busy, summed (0-num_workers)."""
WORKERS_IO = 7
"""Workers in D state, summed (0-num_workers)."""
WORKERS_RUNQ = 8
"""Workers runnable but waiting for a core, summed (0-num_workers)."""
CHECKPOINT = 9
"""1 while the job saves a checkpoint: an annotation for ground-truth labels."""
NCCL = 10
"""Share of time an NCCL collective kernel runs (0-1; part of :data:`KERNEL`): it holds
only NCCL's channel blocks on the SMs, which GPM profiling tells apart from compute."""
LANE_COUNT = 11

_LANE_NAMES = (
    "kernel",
    "mem",
    "rx",
    "tx",
    "main_cpu",
    "main_io",
    "workers_cpu",
    "workers_io",
    "workers_runq",
    "checkpoint",
    "nccl",
)


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of time during which every lane holds a constant level."""

    duration: float
    levels: tuple[float, ...]

    def level(self, lane: int) -> float:
        return self.levels[lane]


def segment(duration: float, **levels: float) -> Segment:
    """A :class:`Segment` with the named lanes set (``kernel=1.0, main_cpu=0.3``), others 0."""
    values = [0.0] * LANE_COUNT
    for name, value in levels.items():
        values[_LANE_NAMES.index(name)] = float(value)
    return Segment(max(0.0, duration), tuple(values))


def total_duration(segments: Sequence[Segment]) -> float:
    return math.fsum(s.duration for s in segments)


def average(segments: Sequence[Segment]) -> Segment:
    """One segment with the time-weighted mean levels of ``segments``.

    Used to collapse structure finer than anything a reading can resolve (a
    10 ms training step is invisible at NVML's 1/6 s sample period).
    """
    duration = total_duration(segments)
    if duration <= 0:
        return Segment(0.0, (0.0,) * LANE_COUNT)
    sums = [0.0] * LANE_COUNT
    for s in segments:
        for lane in range(LANE_COUNT):
            sums[lane] += s.levels[lane] * s.duration
    return Segment(duration, tuple(v / duration for v in sums))


def with_levels(segments: Sequence[Segment], **levels: float) -> list[Segment]:
    """``segments`` with the named lanes added to every segment (a constant background)."""
    extra = segment(0.0, **levels).levels
    return [
        Segment(s.duration, tuple(a + b for a, b in zip(s.levels, extra, strict=True)))
        for s in segments
    ]


def overlay(a: Sequence[Segment], b: Sequence[Segment]) -> list[Segment]:
    """Two activities happening at once, summed lane by lane over merged breakpoints.

    Where one list is shorter, it contributes nothing past its end.
    """
    out: list[Segment] = []
    ia = ib = 0
    left_a = a[0].duration if a else 0.0
    left_b = b[0].duration if b else 0.0
    zero = (0.0,) * LANE_COUNT
    while ia < len(a) or ib < len(b):
        la = a[ia].levels if ia < len(a) else zero
        lb = b[ib].levels if ib < len(b) else zero
        if ia >= len(a):
            step = left_b
        elif ib >= len(b):
            step = left_a
        else:
            step = min(left_a, left_b)
        if step > 0:
            out.append(Segment(step, tuple(x + y for x, y in zip(la, lb, strict=True))))
        if ia < len(a):
            left_a -= step
            if left_a <= 1e-12:
                ia += 1
                left_a = a[ia].duration if ia < len(a) else 0.0
        if ib < len(b):
            left_b -= step
            if left_b <= 1e-12:
                ib += 1
                left_b = b[ib].duration if ib < len(b) else 0.0
    return out


class _Table:
    """Breakpoints and running integrals of a segment list, for bisection."""

    __slots__ = ("cum", "duration", "levels", "starts", "totals")

    def __init__(self, segments: Sequence[Segment]) -> None:
        self.starts: list[float] = []
        self.cum: list[list[float]] = [[] for _ in range(LANE_COUNT)]
        self.levels: list[list[float]] = [[] for _ in range(LANE_COUNT)]
        acc = [0.0] * LANE_COUNT
        t = 0.0
        for s in segments:
            if s.duration <= 0:
                continue
            self.starts.append(t)
            for lane in range(LANE_COUNT):
                self.cum[lane].append(acc[lane])
                self.levels[lane].append(s.levels[lane])
                acc[lane] += s.levels[lane] * s.duration
            t += s.duration
        self.duration = t
        self.totals = acc

    def at(self, x: float, lane: int) -> float:
        i = bisect_right(self.starts, x) - 1
        if i < 0:
            return 0.0
        return self.cum[lane][i] + self.levels[lane][i] * (x - self.starts[i])

    def at_all(self, x: float) -> list[float]:
        i = bisect_right(self.starts, x) - 1
        if i < 0:
            return [0.0] * LANE_COUNT
        dx = x - self.starts[i]
        return [c[i] + lv[i] * dx for c, lv in zip(self.cum, self.levels, strict=True)]


class Timeline:
    """A process's lanes over its whole life: a prefix, then a period repeated forever.

    Time is local to the process: 0 is when it started; before that every lane
    is 0. ``cumulative(t, lane)`` is the integral of the lane from 0 to ``t``.
    """

    __slots__ = ("_period", "_prefix", "onset_s", "period_segments", "prefix_segments")

    def __init__(self, prefix: Sequence[Segment], period: Sequence[Segment]) -> None:
        if total_duration(period) <= 0:
            raise ValueError("a timeline's period must have a positive duration")
        self.prefix_segments: tuple[Segment, ...] = tuple(prefix)
        self.period_segments: tuple[Segment, ...] = tuple(period)
        self._prefix = _Table(prefix)
        self._period = _Table(period)
        self.onset_s = self._prefix.duration
        """When the prefix ends and the steady behaviour (the modelled condition) begins."""

    @property
    def period_s(self) -> float:
        return self._period.duration

    def cumulative(self, t: float, lane: int) -> float:
        if t <= 0.0:
            return 0.0
        prefix = self._prefix
        if t < prefix.duration:
            return prefix.at(t, lane)
        period = self._period
        x = t - prefix.duration
        n = math.floor(x / period.duration)
        r = x - n * period.duration
        return prefix.totals[lane] + n * period.totals[lane] + period.at(r, lane)

    def cumulative_all(self, t: float) -> list[float]:
        if t <= 0.0:
            return [0.0] * LANE_COUNT
        prefix = self._prefix
        if t < prefix.duration:
            return prefix.at_all(t)
        period = self._period
        x = t - prefix.duration
        n = math.floor(x / period.duration)
        r = x - n * period.duration
        i = bisect_right(period.starts, r) - 1
        if i < 0:
            i = 0
        dx = r - period.starts[i]
        return [
            p + n * q + c[i] + lv[i] * dx
            for p, q, c, lv in zip(
                prefix.totals, period.totals, period.cum, period.levels, strict=True
            )
        ]

    def increments(
        self, lane: int, times: Sequence[float], offset: float
    ) -> tuple[list[float], float]:
        """``cumulative(t - offset) - cumulative(previous t - offset)`` for consecutive
        ``times`` (one entry fewer than ``times``), and the last cumulative value.

        The hot path of sub-second samples, so the bisection is inlined."""
        prefix = self._prefix
        period = self._period
        p_end = prefix.duration
        p_total = prefix.totals[lane]
        q_len = period.duration
        q_total = period.totals[lane]
        q_starts = period.starts
        q_cum = period.cum[lane]
        q_lvl = period.levels[lane]
        floor = math.floor
        out: list[float] = []
        prev = -1.0
        for t in times:
            x = t - offset
            if x <= 0.0:
                c = 0.0
            elif x < p_end:
                c = prefix.at(x, lane)
            else:
                x -= p_end
                n = floor(x / q_len)
                r = x - n * q_len
                i = bisect_right(q_starts, r) - 1
                if i < 0:
                    i = 0
                c = p_total + n * q_total + q_cum[i] + q_lvl[i] * (r - q_starts[i])
            if prev >= 0.0:
                out.append(c - prev)
            prev = c
        return out, prev

    def mean(self, a: float, b: float, lane: int) -> float:
        """Average level of ``lane`` over ``[a, b)`` (local time)."""
        if b <= a:
            raise ValueError("empty window")
        return (self.cumulative(b, lane) - self.cumulative(a, lane)) / (b - a)
