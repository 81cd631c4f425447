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

from gputop_hints.hints.costs import allot
from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Finding
from gputop_hints.hints.phases import PhaseTracker, Verdict, interval_or_one
from gputop_hints.hints.rules import ALL_RULES, LEVEL_RULES, RULE_NEEDS, hysteresis_for
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.model import Snapshot
from gputop_hints.outputs.report.model import FindingTime, Report
from gputop_hints.outputs.report.quality import GAP_FACTOR, quality_notes
from gputop_hints.outputs.report.stats import GpuTable, ProcessTable
from gputop_hints.recording.format import G_INDEX, G_POWER, G_SM, G_TEMPERATURE, G_VRAM_USED
from gputop_hints.recording.lazy import LazyTick
from gputop_hints.recording.reader import open_recording
from gputop_hints.recording.state import RecordedStack
from gputop_hints.sampling.sampler import DEFAULT_INTERVAL_S
from gputop_hints.stacks import StackReading
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


HINT_CADENCE_S = DEFAULT_INTERVAL_S
"""The hints are evaluated at most once per this many seconds of log time: the live
monitor's default interval, the cadence the rules' windows, hysteresis and advice are
stated at. A log polled faster (``nvidia-smi -lms 100``) keeps every reading in the
windows, but a rule asked ten times a second would only cost ten times as much -- each
evaluation reads a window ten times as long in readings -- for finding times finer
than anything they are stated in. Times in findings stay exact to within one cadence
per episode."""


def choose_hint_stride(
    ticks: int, entities: int, budget: int = HINT_BUDGET, interval_s: float | None = None
) -> int:
    """Evaluate the hints every k-th tick so that ticks / k * entities stays near
    ``budget``, and no more often than once per :data:`HINT_CADENCE_S` of log time for
    ticks ``interval_s`` apart."""
    cadence = 1
    if interval_s is not None and 0 < interval_s < HINT_CADENCE_S:
        cadence = max(1, math.floor(HINT_CADENCE_S / interval_s + 1e-9))
    if ticks <= 0:
        return cadence
    return max(cadence, math.ceil(ticks * max(1, entities) / budget))


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
    phases = _Phases(gpus.header_records, info.interval_s)
    stacks = _Stacks(stream)
    for i, tick in enumerate(views):
        timeline.add(tick.timestamp)
        gpus.add(tick, metrics.seen)
        phases.add(tick)
        if not hints.wants(i):
            continue
        snap = tick.snapshot()
        if snap is None:
            continue
        metrics.add_snapshot(snap)
        processes.add(snap)
        stacks.feed(hints.engine, snap)
        hints.add(i, snap, phases)
    hints.drop_teardown(phases)
    stacks.read_rest()
    truncated = getattr(stream, "truncated", False)
    report = _assemble(info, stream.counters, timeline, gpus, metrics, hints, truncated)
    report.processes = processes.ranked()
    report.processes_dropped = processes.dropped
    report.verdicts = phases.verdicts()
    for ft in report.findings:
        ft.stack = stacks.quoted_for(ft)
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
    return choose_hint_stride(count, entities + 1, interval_s=stream.info.interval_s)


PROBE_MIN_TICKS = 256
PROBE_MAX_TICKS = 2048
PROBE_MIN_BYTES = 2_000_000
"""A stream that cannot count its ticks is probed on its first ticks: at least
PROBE_MIN_TICKS and PROBE_MIN_BYTES of the file, and the reader asking for more of
the file at least once past its first block (:func:`_probe_stride`), at most
PROBE_MAX_TICKS (they are held in memory)."""


def _probe_stride(
    stream: SnapshotStream, views: Iterator[TickView]
) -> tuple[int, Iterator[TickView]]:
    """The hint stride for a stream that cannot count its ticks, and its ticks again.

    Reads the first ticks, holding them, and estimates the count from the bytes
    they took of the file (:func:`~gputop_hints.streams.read_positions`, bytes on
    disk, so a gzip file's ratio holds too). The readers read ahead in blocks, so
    the position is a step ahead of the ticks: the estimate is taken where the
    reader last asked for more -- then the ticks so far had used up the bytes read
    before (``ticks * size / bytes before that read``). Without such a step in the
    probe, ``ticks * size / position``, which the read-ahead can only lower (a 32-byte
    ``watch`` redraw behind a 64 KiB block: half the count). A file that ends within
    the probe is counted exactly."""
    path = os.fspath(stream.info.path)
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    held: list[TickView] = []
    position = 0
    used = (0, 0)
    """(ticks, bytes): the ticks held when the reader last read on, and the bytes read
    before that read -- what those ticks took."""
    exhausted = True
    for view in views:
        held.append(view)
        now = read_positions().get(path, 0)
        if now > position:
            if position:
                used = (len(held), position)
            position = now
        if len(held) >= PROBE_MAX_TICKS or (
            len(held) >= PROBE_MIN_TICKS and used[1] and position >= PROBE_MIN_BYTES
        ):
            exhausted = False
            break
    if exhausted:
        count = len(held)
    elif used[1] and used[1] < size:
        count = math.ceil(used[0] * size / used[1])
    elif 0 < position < size:
        count = math.ceil(len(held) * size / position)
    else:
        count = len(held)
    first = next((s for s in (t.snapshot() for t in held) if s is not None), None)
    entities = 0 if first is None else len(first.processes) + len(first.gpus)
    stride = choose_hint_stride(count, entities + 1, HINT_BUDGET, _held_interval(held))
    return stride, itertools.chain(held, views)


def _held_interval(held: list[TickView]) -> float | None:
    """The median spacing of the probed ticks (None under two distinct stamps): a log's
    own polling period, whatever its header says."""
    stamps = sorted(t.timestamp for t in held)
    steps = sorted(b - a for a, b in itertools.pairwise(stamps) if b > a)
    return steps[len(steps) // 2] if steps else None


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


class _Phases:
    """Each GPU's trace cut into phases as the ticks go by (hints.phases): its verdict
    at the end, and -- while the report runs -- whether a tick lies after the GPU's last
    activity so far (time that the end of the log may make its teardown)."""

    def __init__(self, static: dict[int, Any], interval_s: float | None) -> None:
        self._static = static
        self._interval_s = interval_s
        self.trackers: dict[int, PhaseTracker] = {}

    def _tracker(self, index: int, interval_s: float | None) -> PhaseTracker:
        tracker = self.trackers.get(index)
        if tracker is None:
            tracker = self.trackers[index] = PhaseTracker(
                index, interval_or_one(self._interval_s or interval_s)
            )
        return tracker

    def add(self, tick: TickView) -> None:
        t = tick.timestamp
        if tick.__class__ is LazyTick:
            # A recording's tick: its GPU columns and the header's static record.
            for g in tick.gpus:
                static = self._static.get(g[G_INDEX], {})
                self._tracker(g[G_INDEX], None).add(
                    t,
                    g[G_SM],
                    g[G_VRAM_USED],
                    g[G_POWER],
                    static.get("power_limit_watts"),
                    g[G_TEMPERATURE],
                    static.get("vram_total_bytes"),
                )
            return
        try:
            samples = tick.gpu_samples()
        except (IndexError, KeyError, TypeError, ValueError):
            return
        for g in samples:
            self._tracker(g.index, None).add_sample(t, g)

    def after_last_activity(self, index: int, t: float) -> bool:
        tracker = self.trackers.get(index)
        return tracker is not None and tracker.in_teardown(t)

    def settled_at(self, index: int) -> float | None:
        """When the GPU's start-up settled (None: not yet)."""
        tracker = self.trackers.get(index)
        return None if tracker is None else tracker.settled_at

    def start_moved(self, index: int) -> bool:
        """Whether the GPU's run began later than its first activity."""
        tracker = self.trackers.get(index)
        return tracker is not None and tracker.start_moved

    def last_activity(self, index: int) -> float | None:
        tracker = self.trackers.get(index)
        return None if tracker is None else tracker.last_active_t

    def verdicts(self) -> list[Verdict]:
        return [self.trackers[i].verdict() for i in sorted(self.trackers)]


class _Stacks:
    """The recording's ``stack`` lines (issue 45): each reading given to the report's hint
    engine once the ticks reach the time it was taken -- so the rules' own stack evidence
    and host-device-sync show as they did live -- and kept, per pid, for the quote under
    the findings (:meth:`quoted_for`). A stream without them (an imported log) has none."""

    def __init__(self, stream: SnapshotStream) -> None:
        self._stream = stream
        recorded = getattr(stream, "stacks", None)
        self._recorded: list[RecordedStack] | None = (
            recorded if isinstance(recorded, list) else None
        )
        self._read = 0
        self._pending: list[tuple[float, StackReading]] = []
        self.by_pid: dict[int, list[tuple[float, StackReading]]] = {}
        self._gpus_of: dict[int, set[int]] = {}
        """Pid with a reading -> the GPUs it was seen on."""
        self._shared: set[int] = set()
        """GPUs seen with more than one process at once."""

    def read_rest(self) -> None:
        """Take the stack lines read since last asked (the reader decoded each; a bad one was
        counted there, not kept)."""
        recorded = self._recorded
        if recorded is None or self._read >= len(recorded):
            return
        for st in recorded[self._read :]:
            reading = st.reading
            self._pending.append((st.taken_at, reading))
            self.by_pid.setdefault(reading.pid, []).append((st.taken_at, reading))
        self._read = len(recorded)

    def feed(self, engine: HintEngine, snap: Snapshot) -> None:
        """Give ``engine`` the readings taken up to ``snap``'s time, oldest first."""
        self.read_rest()
        if self._pending:
            now = snap.timestamp
            due = sorted((p for p in self._pending if p[0] <= now), key=lambda p: p[0])
            if due:
                self._pending = [p for p in self._pending if p[0] > now]
                for at, reading in due:
                    engine.set_stacks(reading, at)
        if self.by_pid:
            per_gpu: dict[int, int] = {}
            for p in snap.processes:
                per_gpu[p.gpu_index] = per_gpu.get(p.gpu_index, 0) + 1
                if p.pid in self.by_pid:
                    self._gpus_of.setdefault(p.pid, set()).add(p.gpu_index)
            self._shared.update(g for g, n in per_gpu.items() if n > 1)

    def quoted_for(self, ft: FindingTime) -> tuple[float, StackReading] | None:
        """The reading to quote under ``ft``: of its process (for a finding about a whole
        GPU, of the one process on it, as ``--once`` samples), taken while it was shown,
        else the nearest in time; one with samples before a refused one taken as near."""
        subject = ft.finding.subject
        pid = subject.pid
        if pid is None:
            gpu = subject.gpu_index
            if gpu is None or gpu in self._shared:
                return None
            alone = [p for p, on in self._gpus_of.items() if on == {gpu}]
            if len(alone) != 1:
                return None
            pid = alone[0]
        readings = self.by_pid.get(pid)
        if not readings:
            return None

        def rank(item: tuple[float, StackReading]) -> tuple[bool, bool, float, float]:
            at, reading = item
            distance = max(ft.first_seen - at, at - ft.last_seen, 0.0)
            return (distance > _QUOTE_SLACK_S, not reading.samples, distance, at)

        return min(readings, key=rank)


def _read_stack(finding: Finding) -> bool:
    """Whether ``finding`` carries a stack reading's evidence (hints.stack_evidence)."""
    return any("py-spy" in e.metric for e in finding.evidence)


_QUOTE_SLACK_S = 60.0
"""A reading taken up to this long after a finding's last evaluation still counts as
taken while it was shown: sampling starts after the tick that warned and lasts seconds,
and the report evaluates every stride-th tick."""


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
        self._burst_ticks = stride - self._burst_from
        """Ticks of a burst: the readings in the history since the previous evaluation."""
        self._diagnoser = Diagnoser(
            thresholds, interval_s=interval_s or 1.0, verdicts=False, costs=False
        )
        self.times: dict[tuple[str, Any], FindingTime] = {}
        self.rule_seconds: dict[str, float] = {}
        self.evaluations = 0
        self._visible_before: set[tuple[str, Any]] = set()
        self._last_evaluated = -1
        self._rule_tail: dict[str, tuple[float, dict[int, float | None]]] = {}
        self._early_rule: dict[str, float] = {}
        """Rule -> seconds taken back from it as judged on an unsettled start-up."""
        self._thresholds = thresholds
        """Rule -> seconds it was shown, up to now, only after its GPUs' last activity."""

    @property
    def engine(self) -> HintEngine:
        return self._diagnoser.engine

    def wants(self, i: int) -> bool:
        """Whether tick ``i`` is in a burst, so is worth decoding in full."""
        return i % self.stride >= self._burst_from

    def add(self, i: int, snap: Snapshot, phases: _Phases | None = None) -> None:
        self._diagnoser.append(snap)
        if i % self.stride == self.stride - 1:
            self._evaluate(i, snap, phases)

    def _evaluate(self, i: int, snap: Snapshot, phases: _Phases | None) -> None:
        visible = self._diagnoser.evaluate()
        self.evaluations += 1
        ticks = i - self._last_evaluated
        credit = ticks * snap.interval_s
        self._last_evaluated = i
        losses = {
            (x.rule, x.gpu_index, x.pid): x
            for x in allot(visible, self._diagnoser.history, min(ticks, self._burst_ticks))
        }
        now_keys: set[tuple[str, Any]] = set()
        rules_now: dict[str, bool] = {}
        """Rule -> whether all its findings now lie after their GPU's last activity."""
        for f in visible:
            now_keys.add(f.key)
            # The phases are a GPU's: they judge the GPU-level findings (a process's own
            # have its lifetime, warm-up and host data to judge them).
            gpu_level = f.rule in LEVEL_RULES and f.subject.pid is None
            tail = (
                phases is not None
                and gpu_level
                and f.subject.gpu_index is not None
                and phases.after_last_activity(f.subject.gpu_index, snap.timestamp)
            )
            rules_now[f.rule] = rules_now.get(f.rule, True) and tail
            ft = self.times.get(f.key)
            if ft is None:
                ft = self.times[f.key] = FindingTime(f, first_seen=snap.timestamp, worst=f.severity)
            new_episode = f.key not in self._visible_before
            gpu = f.subject.gpu_index
            if phases is not None and gpu is not None and gpu_level:
                # Judged while the GPU's start-up was not settled (the run taken to start
                # at its first activity), or held since by hysteresis: taken back at the
                # end if the run proved to start later (a compile's bursts first).
                settled_at = phases.settled_at(gpu)
                if new_episode:
                    ft.early_episode = settled_at is None
                hold = hysteresis_for(f.rule, self._thresholds)[1]
                if settled_at is None or (ft.early_episode and snap.timestamp <= settled_at + hold):
                    ft.early.append((snap.timestamp, credit, new_episode))
            if tail and phases is not None:
                ft.hold_tail(phases.last_activity(f.subject.gpu_index), credit, new_episode)
            else:
                ft.end_tail()
            if f.severity > ft.worst:
                ft.worst = f.severity
                ft.finding = f
            elif f.severity == ft.worst and _read_stack(f) and not _read_stack(ft.finding):
                ft.finding = f  # the same, now with its process's stack as evidence (as live)
            ft.seconds += credit
            ft.add_loss(credit, losses.get((f.rule, f.subject.gpu_index, f.subject.pid)))
            ft.add_evidence(f)
            ft.last_seen = snap.timestamp
            if new_episode:
                ft.episodes += 1
        for rule, tail in rules_now.items():
            self.rule_seconds[rule] = self.rule_seconds.get(rule, 0.0) + credit
            if not tail or phases is None:
                self._rule_tail.pop(rule, None)
                continue
            anchors = {
                g: phases.last_activity(g)
                for f in visible
                if f.rule == rule and (g := f.subject.gpu_index) is not None
            }
            held = self._rule_tail.get(rule)
            if held is None or held[1] != anchors:
                held = self._rule_tail[rule] = (0.0, anchors)
            self._rule_tail[rule] = (held[0] + credit, anchors)
        self._visible_before = now_keys

    def drop_teardown(self, phases: _Phases) -> None:
        """Take back the time level rules were shown after their GPU's last activity in
        the log: windows reaching from the end of a run into the idle after it judge a
        run that is over (the GPU's verdict says its teardown instead)."""
        for key, ft in list(self.times.items()):
            gpu = ft.finding.subject.gpu_index
            if gpu is not None and ft.early and phases.start_moved(gpu):
                for _, credit, new_episode in ft.early:
                    ft.seconds -= credit
                    ft.episodes -= new_episode
                    self._early_rule[ft.finding.rule] = (
                        self._early_rule.get(ft.finding.rule, 0.0) + credit
                    )
                if ft.seconds <= 1e-9:
                    del self.times[key]
                    continue
                ft.episodes = max(1, ft.episodes)  # an episode that outlasted the start-up
                ft.first_seen = max(ft.first_seen, ft.early[-1][0])
            if ft.tail is None or gpu is None or ft.tail.anchor != phases.last_activity(gpu):
                continue
            ft.seconds -= ft.tail.seconds
            ft.episodes -= ft.tail.episodes
            ft.last_seen = ft.tail.last_before
            if ft.seconds <= 1e-9 or ft.episodes <= 0:
                del self.times[key]
        for rule, seconds in self._early_rule.items():
            # An upper bound on the rule's time in start-ups (its subjects may overlap).
            left = self.rule_seconds.get(rule, 0.0) - seconds
            if left <= 1e-9 or not any(ft.finding.rule == rule for ft in self.times.values()):
                self.rule_seconds.pop(rule, None)
            else:
                self.rule_seconds[rule] = left
        for rule, (seconds, anchors) in self._rule_tail.items():
            if any(a != phases.last_activity(g) for g, a in anchors.items()):
                continue  # activity followed: that time was the run's
            left = self.rule_seconds.get(rule, 0.0) - seconds
            if left <= 1e-9 or not any(ft.finding.rule == rule for ft in self.times.values()):
                self.rule_seconds.pop(rule, None)
            else:
                self.rule_seconds[rule] = left

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
