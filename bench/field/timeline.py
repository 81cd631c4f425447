"""What one process does over time, as a piecewise-constant timeline.

A workload (a training loop, an inference server, a hung rank) is written as a
sequence of segments -- "load a batch for 0.31 s, then run kernels for 0.12 s"
-- each with an :class:`Activity`. The simulator then reads the timeline the
way the instruments do: NVML's utilization as the share of a sample period
with a kernel running (a time integral), psutil's CPU % as the mean over the
tick, NVML's PCIe counter at one ~20 ms instant. Integrals are O(log n) from
cumulative sums, so long runs stay cheap.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

NUMERIC = ("kernel", "memory", "power", "h2d", "d2h", "main_cpu", "worker_cpu", "iowait")
"""The Activity fields that are integrated over time."""


@dataclass(frozen=True, slots=True)
class Activity:
    """What a process does during one segment."""

    kernel: float = 0.0
    """Share of the time at least one of its kernels runs (0-1): NVML's definition."""
    memory: float = 0.0
    """Share of the time its kernels (or copies) read or write device memory (0-1)."""
    power: float = 0.0
    """Power its kernels draw above the P0 floor, as a share of (default limit - P0 floor).
    Dense tensor-core GEMMs demand about 1.0 or a little more; a spinning NCCL kernel or a
    tiny elementwise kernel far less."""
    h2d: float = 0.0
    """Host -> device copy rate while copying, bytes/s."""
    d2h: float = 0.0
    main_cpu: float = 0.0
    """CPU of the main process, % of one core."""
    worker_cpu: float = 0.0
    """CPU of EACH child process, % of one core."""
    iowait: float = 0.0
    """Host iowait this process causes, % of all CPU time."""
    main_state: str = "S"
    worker_state: str = "S"


IDLE = Activity()


@dataclass(frozen=True, slots=True)
class VramPoint:
    """Device memory held at a time; linear between points, flat after the last."""

    at_s: float
    bytes: int


class Timeline:
    """A process's activity from 0 to ``duration_s``; immutable once built."""

    def __init__(
        self, segments: Sequence[tuple[float, float, Activity]], vram: Sequence[VramPoint]
    ):
        if not segments:
            raise ValueError("a timeline needs at least one segment")
        self.starts = [s for s, _, _ in segments]
        self.ends = [e for _, e, _ in segments]
        self.activities = [a for _, _, a in segments]
        self.duration_s = self.ends[-1]
        self.vram = sorted(vram, key=lambda p: p.at_s)
        self._cum: dict[str, list[float]] = {}
        for name in NUMERIC:
            cum = [0.0]
            for start, end, act in segments:
                cum.append(cum[-1] + (end - start) * getattr(act, name))
            self._cum[name] = cum

    def _index(self, t: float) -> int:
        i = bisect.bisect_right(self.starts, t) - 1
        return min(max(i, 0), len(self.starts) - 1)

    def _value(self, index: int, name: str) -> float:
        return float(getattr(self.activities[index], name))

    def _integral(self, name: str, t: float) -> float:
        if t <= 0:
            return 0.0
        if t >= self.duration_s:
            return self._cum[name][-1] + (t - self.duration_s) * self._value(-1, name)
        i = self._index(t)
        return self._cum[name][i] + (t - self.starts[i]) * self._value(i, name)

    def mean(self, name: str, start: float, end: float) -> float:
        """Time-weighted mean of a numeric field over [start, end]."""
        if end <= start:
            return self._value(self._index(end), name)
        return (self._integral(name, end) - self._integral(name, start)) / (end - start)

    def at(self, t: float) -> Activity:
        """The activity at one instant."""
        if t >= self.duration_s:
            return self.activities[-1]
        return self.activities[self._index(t)]

    def vram_at(self, t: float) -> int:
        """Bytes held at ``t`` (0 before the first point)."""
        points = self.vram
        if not points or t < points[0].at_s:
            return 0
        for a, b in itertools.pairwise(points):
            if a.at_s <= t < b.at_s:
                share = (t - a.at_s) / (b.at_s - a.at_s)
                return int(a.bytes + share * (b.bytes - a.bytes))
        return points[-1].bytes


class TimelineBuilder:
    """Appends segments back to back; merges neighbours with the same activity."""

    def __init__(self) -> None:
        self.segments: list[tuple[float, float, Activity]] = []
        self.now = 0.0

    def add(self, duration_s: float, activity: Activity) -> None:
        if duration_s <= 0:
            return
        end = self.now + duration_s
        if self.segments and self.segments[-1][2] == activity:
            start, _, _ = self.segments[-1]
            self.segments[-1] = (start, end, activity)
        else:
            self.segments.append((self.now, end, activity))
        self.now = end

    def build(self, vram: Sequence[VramPoint]) -> Timeline:
        return Timeline(self.segments, vram)
