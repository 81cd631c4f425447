"""Building a :class:`~.model.Report` from a snapshot stream in one streaming pass.

Everything is computed in constant memory:

* **statistics** per GPU (:mod:`.stats`), read from the GPU samples of every
  tick -- for a stream with fast paths (a recording,
  :class:`~gputop_hints.streams.FastPaths`) without decoding the rest of the line;
* **hints "as if live"**: the real hints (a
  :class:`~gputop_hints.hints.diagnoser.Diagnoser`) with their time-based
  hysteresis, fed with full snapshots. On a long recording
  of a big machine it runs every ``k``-th tick (the *hint stride*, see
  :func:`choose_hint_stride`) on a history holding the ticks its window needs;
  each evaluation credits its visible findings with the ticks since the
  previous evaluation, so time-in-finding is exact at stride 1 and within
  ``k`` ticks per episode otherwise;
* **data quality**: gaps, coarse sampling, malformed lines, missing metrics,
  and which rules could not be evaluated for lack of a metric.

No Textual here.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterator
from typing import Any

from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.hints.rules import ALL_RULES, RULE_NEEDS
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.model import Snapshot
from gputop_hints.outputs.report.model import FindingTime, Report
from gputop_hints.outputs.report.quality import GAP_FACTOR, quality_notes
from gputop_hints.outputs.report.stats import GpuTable, ProcessTable
from gputop_hints.recording.reader import open_recording
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
    SnapshotStream,
    StreamInfo,
    TickView,
    read_positions,
    tick_count,
    tick_views,
)

HINT_BUDGET = 50_000
"""Auto stride: about this many (GPU + process) evaluations in all -- ~680 engine
runs (one every ~2 min) on a 24 h 8-GPU, 64-process recording, which keeps that
report near 20 s on 2 cores; every tick on files under ~11 min at that size or
~4.6 h on one GPU with a few processes."""


def choose_hint_stride(ticks: int, entities: int, budget: int = HINT_BUDGET) -> int:
    """Evaluate the hints every k-th tick so that ticks / k * entities stays near ``budget``."""
    if ticks <= 0:
        return 1
    return max(1, math.ceil(ticks * max(1, entities) / budget))


def build_report(
    stream: SnapshotStream,
    thresholds: Thresholds | None = None,
    *,
    hint_stride: int | None = None,
) -> Report:
    """Read ``stream`` once and build its post-mortem.

    ``hint_stride`` = k evaluates the hints every k-th tick (1: every tick, as
    live). None picks it with :func:`choose_hint_stride`: on the tick count of a
    stream that counts its ticks cheaply (a recording); for other streams
    (imported logs) on the count estimated from the first ticks (see
    :func:`_probe_stride`) -- exact, so every tick below the budget, when the
    file ends within them.
    """
    thresholds = thresholds or Thresholds.defaults()
    views: Iterator[TickView] = tick_views(stream)
    if hint_stride is not None:
        stride = hint_stride
    elif tick_count(stream) is not None:
        stride = _auto_stride(stream)
    else:
        stride, views = _probe_stride(stream, views)
    if stride < 1:
        raise ValueError("hint_stride must be >= 1")
    info = stream.info
    timeline = _Timeline(info.interval_s)
    metrics = _MetricsSeen()
    gpus = GpuTable(info.header.get("gpus"))
    hints = _HintsAsIfLive(thresholds, stride, info.interval_s)
    processes = ProcessTable()
    for i, tick in enumerate(views):
        timeline.add(tick.timestamp)
        gpus.add(tick, metrics.seen)
        if not hints.wants(i):
            continue
        snap = tick.snapshot()
        if snap is None:
            continue
        metrics.add_snapshot(snap)
        processes.add(snap)
        hints.add(i, snap)
    truncated = getattr(stream, "truncated", False)
    report = _assemble(info, stream.counters, timeline, gpus, metrics, hints, truncated)
    report.processes = processes.ranked()
    report.processes_dropped = processes.dropped
    return report


def report_file(
    path: str,
    thresholds: Thresholds | None = None,
    *,
    hint_stride: int | None = None,
) -> Report:
    """Open a recording and build its report (closes the file)."""
    stream = open_recording(path)
    try:
        return build_report(stream, thresholds, hint_stride=hint_stride)
    finally:
        stream.close()


# --- reading the stream -------------------------------------------------------------------


def _auto_stride(stream: SnapshotStream) -> int:
    """The hint stride for a stream: by size where it can count its ticks cheaply
    (a recording), every tick otherwise."""
    count = tick_count(stream)
    if not count:
        return 1
    first = next((s for s in (t.snapshot() for t in tick_views(stream)) if s is not None), None)
    entities = 0 if first is None else len(first.processes) + len(first.gpus)
    return choose_hint_stride(count, entities + 1)


PROBE_MIN_TICKS = 256
PROBE_MAX_TICKS = 2048
PROBE_MIN_BYTES = 2_000_000
"""A stream that cannot count its ticks is probed on its first ticks: at least
PROBE_MIN_TICKS and PROBE_MIN_BYTES of the file (so the readers' buffers ahead
of the ticks are a small share), at most PROBE_MAX_TICKS (they are held in memory)."""


def _probe_stride(
    stream: SnapshotStream, views: Iterator[TickView]
) -> tuple[int, Iterator[TickView]]:
    """The hint stride for a stream that cannot count its ticks, and its ticks again.

    Reads the first ticks, holding them, and estimates the count from the bytes
    they took of the file (:func:`~gputop_hints.streams.read_positions`, bytes on
    disk, so a gzip file's ratio holds too): ``ticks * size / position``. The
    readers buffer ahead of the ticks, which can only lower the estimate. A file
    that ends within the probe is counted exactly."""
    path = os.fspath(stream.info.path)
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    held: list[TickView] = []
    position = 0
    exhausted = True
    for view in views:
        held.append(view)
        if len(held) >= PROBE_MIN_TICKS:
            position = read_positions().get(path, 0)
            if position >= PROBE_MIN_BYTES or len(held) >= PROBE_MAX_TICKS:
                exhausted = False
                break
    if exhausted:
        count = len(held)
    elif 0 < position < size:
        count = math.ceil(len(held) * size / position)
    else:
        count = len(held)
    first = next((s for s in (t.snapshot() for t in held) if s is not None), None)
    entities = 0 if first is None else len(first.processes) + len(first.gpus)
    return choose_hint_stride(count, entities + 1, HINT_BUDGET), itertools.chain(held, views)


# --- the steps of the pass ------------------------------------------------------------------


class _Timeline:
    """When the samples were taken: span, interval, gaps and steps back in time."""

    def __init__(self, interval_s: float | None) -> None:
        self.interval_s = interval_s
        """The stream's interval, else the spacing of its first two ticks."""
        self.samples = 0
        self.start: float | None = None
        self.end: float | None = None
        self.gaps = 0
        self.gap_seconds = 0.0
        self.longest_gap_s = 0.0
        self.backwards = 0
        self._last: float | None = None

    def add(self, ts: float) -> None:
        self.samples += 1
        if self.start is None:
            self.start = ts
        self.end = ts if self.end is None or ts > self.end else self.end
        last = self._last
        self._last = ts
        if last is None:
            return
        if self.interval_s is None and ts > last:
            self.interval_s = ts - last
        dt = ts - last
        if dt < 0:
            self.backwards += 1
        elif self.interval_s and dt > GAP_FACTOR * self.interval_s:
            self.gaps += 1
            self.gap_seconds += dt - self.interval_s
            self.longest_gap_s = max(self.longest_gap_s, dt)


PROFILING_NEEDED = "GPM/DCGM profiling"
"""What a report says a file lacks for the rules that judge only on profiling
percentages (SM, tensor and DRAM activity): "not evaluated: tensor-cores-idle (no
GPM/DCGM profiling in this file)"."""

_FULL_ONLY = (METRIC_PROCESSES, METRIC_HOST_CPU)
"""Metrics seen only in fully decoded ticks (the GPU columns are read on every tick)."""


class _MetricsSeen:
    """Which metrics the file holds anywhere, to tell "absent" from "zero"."""

    def __init__(self) -> None:
        self.seen = {
            m: False
            for m in (
                METRIC_SM,
                METRIC_MEMORY_ACCESS,
                METRIC_VRAM,
                METRIC_PCIE,
                METRIC_THROTTLE,
                METRIC_POWER,
                METRIC_TEMPERATURE,
                METRIC_SUBSECOND,
                METRIC_PROCESSES,
                METRIC_HOST_CPU,
            )
        }
        self.full_ticks = 0
        """Ticks decoded in full (the only ones that can show processes and host CPU)."""

    def add_snapshot(self, snap: Snapshot) -> None:
        self.full_ticks += 1
        if snap.processes:
            self.seen[METRIC_PROCESSES] = True
        if any(v is not None for v in snap.host.cpu_percent_per_core):
            self.seen[METRIC_HOST_CPU] = True

    def missing(self, info: StreamInfo, samples: int) -> set[str]:
        """What the stream says it lacks, plus what never showed up in its samples."""
        missing = set(info.missing)
        if samples:
            missing |= {
                m
                for m, ok in self.seen.items()
                if not ok and (m not in _FULL_ONLY or self.full_ticks)
            }
        return missing


class _HintsAsIfLive:
    """The hint engine run every ``stride``-th tick, and the time each finding was shown.

    Before each evaluation it takes in just the ticks a window reads (a *burst*):
    older ones in the history would be from the previous burst, and no rule
    looks at them.
    """

    def __init__(self, thresholds: Thresholds, stride: int, interval_s: float | None) -> None:
        self.stride = stride
        window_ticks = max(1, round(thresholds.general.window_s / (interval_s or 1.0)))
        self._burst_from = max(0, stride - window_ticks)
        self._diagnoser = Diagnoser(thresholds, interval_s=interval_s or 1.0)
        self.times: dict[tuple[str, Any], FindingTime] = {}
        self.rule_seconds: dict[str, float] = {}
        self.evaluations = 0
        self._visible_before: set[tuple[str, Any]] = set()
        self._last_evaluated = -1

    def wants(self, i: int) -> bool:
        """Whether tick ``i`` is in a burst, so is worth decoding in full."""
        return i % self.stride >= self._burst_from

    def add(self, i: int, snap: Snapshot) -> None:
        self._diagnoser.append(snap)
        if i % self.stride == self.stride - 1:
            self._evaluate(i, snap)

    def _evaluate(self, i: int, snap: Snapshot) -> None:
        visible = self._diagnoser.evaluate()
        self.evaluations += 1
        credit = (i - self._last_evaluated) * snap.interval_s
        self._last_evaluated = i
        now_keys: set[tuple[str, Any]] = set()
        rules_now: set[str] = set()
        for f in visible:
            now_keys.add(f.key)
            rules_now.add(f.rule)
            ft = self.times.get(f.key)
            if ft is None:
                ft = self.times[f.key] = FindingTime(f, first_seen=snap.timestamp, worst=f.severity)
            if f.severity > ft.worst:
                ft.worst = f.severity
                ft.finding = f
            ft.seconds += credit
            ft.add_evidence(f)
            ft.last_seen = snap.timestamp
            if f.key not in self._visible_before:
                ft.episodes += 1
        for rule in rules_now:
            self.rule_seconds[rule] = self.rule_seconds.get(rule, 0.0) + credit
        self._visible_before = now_keys

    def findings(self) -> list[FindingTime]:
        """Every finding shown, worst first, then longest, then earliest."""
        return sorted(self.times.values(), key=lambda ft: (-ft.worst, -ft.seconds, ft.first_seen))


def _assemble(
    info: StreamInfo,
    counters: ReadCounters,
    timeline: _Timeline,
    gpus: GpuTable,
    metrics: _MetricsSeen,
    hints: _HintsAsIfLive,
    truncated: bool,
) -> Report:
    samples = timeline.samples
    missing = metrics.missing(info, samples)
    not_evaluated = {
        rule: [m for m in needs if m in missing]
        for rule, needs in RULE_NEEDS.items()
        if any(m in missing for m in needs)
    }
    if not any(st.profiled for st in gpus.gpus.values()):
        # Rules that judge only on GPM/DCGM profiling (no METRIC_* names those).
        for spec in ALL_RULES:
            if spec.needs_profiling:
                not_evaluated.setdefault(spec.id, []).append(PROFILING_NEEDED)
    report = Report(
        info=info,
        counters=counters,
        samples=samples,
        start=timeline.start,
        end=timeline.end,
        interval_s=timeline.interval_s,
        gpus=gpus.in_order(),
        findings=hints.findings(),
        rule_seconds=hints.rule_seconds,
        not_evaluated=not_evaluated if samples else {},
        missing=sorted(missing),
        notes=[],
        hint_stride=hints.stride,
        hint_evaluations=hints.evaluations,
        gaps=timeline.gaps,
        gap_seconds=timeline.gap_seconds,
        longest_gap_s=timeline.longest_gap_s,
    )
    report.notes = quality_notes(
        report,
        subsecond=metrics.seen[METRIC_SUBSECOND],
        backwards=timeline.backwards,
        truncated=truncated,
    )
    return report
