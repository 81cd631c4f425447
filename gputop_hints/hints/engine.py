"""Runs the rules each tick and keeps findings from flickering.

A rule's raw finding becomes visible only once its condition has held for the
rule's ``raise_after_s``; a visible finding goes away only once the condition
has failed for ``clear_after_s``. Time is the snapshots' own clock, so replayed
and simulated data behave exactly like live data.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules import (
    ALL_RULES,
    LOW_UTILIZATION,
    LOW_UTILIZATION_EXPLAINED_BY,
    RuleSpec,
)
from gputop_hints.hints.running import HostTallies
from gputop_hints.hints.stack_evidence import with_stack_evidence
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import (
    STACK_FRESH_S,
    VRAM_STEADY_SHARE,
    Window,
    ring_idle_for_s,
    vram_rise,
)
from gputop_hints.history import History
from gputop_hints.model import GpuProcess, Snapshot

if TYPE_CHECKING:  # the stack readings' package: imported only where one is read
    from gputop_hints.stacks import StackReading


@dataclass
class _Track:
    first_true: float
    last_true: float
    finding: Finding
    active: bool = False


PROFILING_FALLBACK = Evidence(
    "SM activity not measured on this GPU (no GPM or DCGM profiling): judged from "
    "utilization, power and the host side, so less certain",
    None,
    "fallback",
    "",
    Scope.DEVICE,
    met=None,
)
"""The note on a finding of a rule that GPM would decide (``RuleSpec.profiling_sharpens``)
where the GPU gives no profiling: utilization counts any kernel as busy, so what it
suggests, SM activity would have measured."""


COMPUTE_BOUND = "compute-bound"


@dataclass(frozen=True)
class ActivitySeed:
    """What the engine remembers beyond its window -- when each GPU and process last ran
    a kernel, since when each process's VRAM has held its level -- as of some tick."""

    gpu_active_at: dict[int, float]
    process_active_at: dict[tuple[int, int], float]
    vram_steady_since: dict[tuple[int, int], tuple[float, float, float]]


def activity_seed(
    snapshots: Iterable[Snapshot], thresholds: Thresholds | None = None
) -> ActivitySeed | None:
    """The engine's long-lived records after ``snapshots`` (a recording read up to the
    point a replay jumps to, perhaps one tick in k): its own trackers run over them, no
    rule. None without snapshots."""
    engine = HintEngine(thresholds)
    history: History | None = None
    for snap in snapshots:
        if history is None:
            history = History(window_s=4 * max(snap.interval_s, 1.0), interval_s=snap.interval_s)
        history.append(snap)
        engine._track_gpu_activity(history)
    if history is None:
        return None
    return ActivitySeed(
        dict(engine._gpu_active_at),
        dict(engine._process_active_at),
        dict(engine._vram_steady_since),
    )


def _not_healthy_beside_a_warning(visible: list[Finding]) -> list[Finding]:
    """A GPU whose process has a warning of its own is not called healthy in its header:
    compute-bound then says the GPU is busy and points at the process (issue 44: a header
    said "compute-bound: healthy" beside its only process's "tensor cores idle")."""
    warned: dict[int, Finding] = {}
    for f in visible:
        if f.subject.pid is not None and f.severity >= Severity.WARNING:
            warned.setdefault(f.subject.gpu_index, f)
    if not warned:
        return visible
    out = []
    for f in visible:
        other = warned.get(f.subject.gpu_index)
        if f.rule == COMPUTE_BOUND and f.subject.pid is None and other is not None:
            f = dataclasses.replace(
                f,
                label=f"busy; see pid {other.subject.pid}",
                summary=f.summary
                + f" Busy is not healthy here: pid {other.subject.pid} on this GPU has "
                f"'{other.label}' ({other.rule}).",
            )
        out.append(f)
    return out


def _profiled(win: Window, index: int) -> bool:
    return win.gpu_profiling_mean(index, "sm_active_percent") is not None


class HintEngine:
    """Stateful wrapper around the pure rules: hysteresis and bookkeeping."""

    def __init__(
        self,
        thresholds: Thresholds | None = None,
        rules: Sequence[RuleSpec] = ALL_RULES,
        hysteresis: bool = True,
    ) -> None:
        """``rules``: the rules to run (all by default). ``hysteresis=False`` shows every
        condition the moment it holds (one-off reports)."""
        self.thresholds = thresholds or Thresholds.defaults()
        self.rules = rules
        self._tracks: dict[tuple[str, Subject], _Track] = {}
        self._timing = {
            spec.id: spec.hysteresis(self.thresholds) if hysteresis else (0.0, 0.0)
            for spec in rules
        }
        self._contradicted = {spec.id: spec.contradicted for spec in rules if spec.contradicted}
        self.active: tuple[Finding, ...] = ()
        self.last_cost_s = 0.0
        self._gpu_active_at: dict[int, float] = {}
        """When each GPU last ran kernels (SM at or above the idle rule's threshold)."""
        self._process_active_at: dict[tuple[int, int], float] = {}
        """When each process last ran kernels of its own, or when it was first seen."""
        self._vram_steady_since: dict[tuple[int, int], tuple[float, float, float]] = {}
        """Per process: (VRAM level, since when it has stayed there, how much it rose in the
        seconds before) -- what tells a pre-allocation from a caching allocator's growth."""
        self._stacks: dict[int, tuple[float, StackReading]] = {}
        """Per pid: the last stack reading (issue 45) and when it was taken (the
        snapshots' clock); dropped when the pid leaves the snapshot."""
        self._host_tallies = HostTallies(self.thresholds.general.worker_busy_percent)
        """Each process's host side (busy workers, D states) counted once per snapshot
        as it enters the ring: a window's sums are read off them (:mod:`.running`)."""

    def update(self, history: History) -> tuple[Finding, ...]:
        """Evaluate every rule on the newest window; return the visible findings."""
        started = time.perf_counter()
        if history.latest is None:
            return ()
        self._track_gpu_activity(history)
        self._host_tallies.sync(history)
        win = Window(
            history,
            self.thresholds.general.window_s,
            worker_busy_percent=self.thresholds.general.worker_busy_percent,
            gpu_active_at=self._gpu_active_at,
            process_active_at=self._process_active_at,
            vram_steady_since=self._vram_steady_since,
            stacks=self._stacks,
            host_tallies=self._host_tallies,
        )
        now = win.now
        raw: dict[tuple[str, Subject], Finding] = {}
        for spec in self.rules:
            for finding in spec.check(win, self.thresholds):
                if spec.profiling_sharpens and not _profiled(win, finding.subject.gpu_index):
                    finding = dataclasses.replace(
                        finding, evidence=(*finding.evidence, PROFILING_FALLBACK)
                    )
                raw.setdefault(finding.key, finding)
        explained = {
            f.subject.gpu_index for f in raw.values() if f.rule in LOW_UTILIZATION_EXPLAINED_BY
        }
        for key in [k for k, f in raw.items() if f.rule == LOW_UTILIZATION]:
            if key[1].gpu_index in explained:
                del raw[key]
        # A lost GPU (fell off the bus) or one whose NVML calls stopped answering
        # has no values now: whatever was said of it and its processes is stale, so
        # it goes at once, hysteresis or not.
        latest = history.latest
        lost = {g.index for g in latest.gpus if g.lost or g.not_answering_s is not None}
        if lost:
            raw = {k: f for k, f in raw.items() if k[1].gpu_index not in lost}
            for key in [k for k in self._tracks if k[1].gpu_index in lost]:
                del self._tracks[key]

        for key, finding in raw.items():
            track = self._tracks.get(key)
            if track is None:
                track = self._tracks[key] = _Track(now, now, finding)
            track.last_true = now
            track.finding = finding
            raise_after, _ = self._timing[finding.rule]
            if not track.active and now - track.first_true >= raise_after - 1e-9:
                track.active = True

        for key, track in list(self._tracks.items()):
            if key in raw:
                continue
            _, clear_after = self._timing[track.finding.rule]
            contradicted = self._contradicted.get(track.finding.rule)
            if (
                not track.active
                or now - track.last_true >= clear_after - 1e-9
                or (contradicted is not None and contradicted(win, self.thresholds, key[1]))
            ):
                del self._tracks[key]

        visible = [t.finding.with_start(t.first_true) for t in self._tracks.values() if t.active]
        if self._stacks:
            visible = [self._with_stacks(f, now) for f in visible]
        visible = _not_healthy_beside_a_warning(visible)
        visible.sort(key=lambda f: (-f.severity, f.subject.gpu_index, f.subject.pid or -1, f.rule))
        self.active = tuple(visible)
        self.last_cost_s = time.perf_counter() - started
        return self.active

    def set_stacks(self, reading: StackReading, at: float) -> None:
        """Take a stack reading of ``reading.pid`` taken at ``at`` (the snapshots' clock):
        the rules read it while it is fresh (``window.STACK_FRESH_S``)."""
        self._stacks[reading.pid] = (at, reading)

    def _with_stacks(self, finding: Finding, now: float) -> Finding:
        """``finding`` with its process's fresh stack reading as evidence, if any."""
        pid = finding.subject.pid
        got = self._stacks.get(pid) if pid is not None else None
        if got is None or now - got[0] > STACK_FRESH_S:
            return finding
        return with_stack_evidence(finding, got[1])

    def stacks_of(self, pid: int) -> tuple[float, StackReading] | None:
        """The last stack reading of ``pid`` and when it was taken, if any."""
        return self._stacks.get(pid)

    def _track_gpu_activity(self, history: History) -> None:
        """Remember when each GPU last ran kernels: idle spells can outlast the history ring."""
        snap = history.latest
        assert snap is not None
        below = self.thresholds.idle_holding_vram.sm_below_percent
        present = set()
        for gpu in snap.gpus:
            present.add(gpu.index)
            busy = (gpu.sm_percent is not None and gpu.sm_percent >= below) or any(
                s.percent >= below for s in gpu.sm_samples
            )
            if busy:
                self._gpu_active_at[gpu.index] = snap.timestamp
            elif gpu.index not in self._gpu_active_at:
                # First sight of an idle GPU: the history may already hold its idle spell.
                gh = history.gpus.get(gpu.index)
                idle = ring_idle_for_s(gh, snap.timestamp, snap.interval_s, below) if gh else 0.0
                self._gpu_active_at[gpu.index] = snap.timestamp - idle
        for index in set(self._gpu_active_at) - present:
            del self._gpu_active_at[index]
        self._track_processes(history, snap)

    def _track_processes(self, history: History, snap: Snapshot) -> None:
        """Per process: when it last ran kernels, and since when its VRAM has held its level.

        A process without a per-process sample ran nothing in the period (NVML keeps
        samples only for processes that did) -- where the GPU reports per-process
        samples at all; elsewhere the device's activity stands in. A process is never
        idle for longer than it has been seen: one log holding many runs must not count
        the hours between them as one process idling.
        """
        below = self.thresholds.idle_holding_vram.sm_below_percent
        reported = {p.gpu_index for p in snap.processes if p.sm_percent is not None}
        keys = set()
        gpus = {g.index: g for g in reversed(snap.gpus)}  # snap.gpu's first match, indexed
        for p in snap.processes:
            key = (p.pid, p.gpu_index)  # GpuProcess.key, without its call (64 a tick)
            keys.add(key)
            if p.gpu_index in reported:
                busy = p.sm_percent is not None and p.sm_percent >= below
            else:
                busy = self._gpu_active_at.get(p.gpu_index) == snap.timestamp
            if busy:
                self._process_active_at[key] = snap.timestamp
            elif key not in self._process_active_at:
                # First sight of an idle process: the history may hold its idle spell.
                self._process_active_at[key] = self._last_active_in_ring(
                    history, snap, key, p.gpu_index in reported
                )
            gpu = gpus.get(p.gpu_index)
            total = gpu.vram_total_bytes if gpu and gpu.vram_total_bytes else None
            level = float(p.vram_bytes or 0)
            old = self._vram_steady_since.get(key)
            tolerance = (total or level or 1.0) * VRAM_STEADY_SHARE
            if old is None or abs(level - old[0]) > tolerance:
                ph = history.processes.get(key)
                values = ph.vram_bytes.last() if ph else [level]
                at = len(values) - 1
                since = snap.timestamp
                if old is None and ph is not None:
                    # First sight (the first tick, or a report's first evaluation): the
                    # history may already hold the plateau; it began where the ring's
                    # run at this level begins, never before the process was seen.
                    while at > 0:
                        before = values[at - 1]
                        if before is None or abs(before - level) > tolerance:
                            break
                        at -= 1
                    back = (len(values) - 1 - at) * snap.interval_s
                    since = max(ph.first_seen, snap.timestamp - back)
                rise = vram_rise(values, at, snap.interval_s)
                self._vram_steady_since[key] = (level, since, rise)
        for key in set(self._process_active_at) - keys:
            del self._process_active_at[key]
            self._vram_steady_since.pop(key, None)
        if self._stacks:
            pids = {pid for pid, _ in keys}
            for pid in [p for p in self._stacks if p not in pids]:
                del self._stacks[pid]

    def _last_active_in_ring(
        self, history: History, snap: Snapshot, key: tuple[int, int], reported: bool
    ) -> float:
        """When a process first seen idle last ran kernels, as far back as the ring reaches
        and never before it was first seen."""
        ph = history.processes.get(key)
        if ph is None:
            return snap.timestamp
        if not reported:
            return max(ph.first_seen, self._gpu_active_at.get(key[1], snap.timestamp))
        below = self.thresholds.idle_holding_vram.sm_below_percent
        run = 0
        for v in reversed(ph.sm_percent.last()):
            if v is not None and v >= below:
                break
            run += 1
        return max(ph.first_seen, snap.timestamp - run * snap.interval_s)

    def seed(self, seed: ActivitySeed) -> None:
        """Take the long-lived records a replay built from the recording before the point
        it jumped to (see :func:`activity_seed`): idle spells that began before the
        pre-roll window are then measured from their real start, as the report does."""
        self._gpu_active_at.update(seed.gpu_active_at)
        self._process_active_at.update(seed.process_active_at)
        self._vram_steady_since.update(seed.vram_steady_since)

    def for_process(self, pid: int, gpu_index: int) -> tuple[Finding, ...]:
        """Visible findings about one process, worst first."""
        return tuple(
            f for f in self.active if f.subject.pid == pid and f.subject.gpu_index == gpu_index
        )

    def for_gpu(self, index: int) -> tuple[Finding, ...]:
        """Visible GPU-level findings (not about a single process)."""
        return tuple(
            f for f in self.active if f.subject.pid is None and f.subject.gpu_index == index
        )

    def inline_for_processes(
        self, processes: Sequence[GpuProcess]
    ) -> dict[tuple[int, int], Finding | None]:
        """Each process's inline (HINT column) finding: its own worst; else, where its GPU
        has a warning, that warning on the one process that bears the GPU's load -- the
        most own SM % (then VRAM) of those with nothing of their own -- and, on the
        bystanders beside it, the same finding as information (a dim ``GPU: ...``, never
        the warning glyph: nine idle servers do not each thrash the PCIe link)."""
        out: dict[tuple[int, int], Finding | None] = {}
        bare: dict[int, list[GpuProcess]] = {}
        for proc in processes:
            own = self.for_process(proc.pid, proc.gpu_index)
            out[proc.key] = own[0] if own else None
            if not own:
                bare.setdefault(proc.gpu_index, []).append(proc)
        for index, procs in bare.items():
            gpu = [f for f in self.for_gpu(index) if f.severity >= Severity.WARNING]
            if not gpu:
                continue
            finding = gpu[0]
            bearer = max(procs, key=lambda p: (p.sm_percent or 0.0, p.vram_bytes or 0, -p.pid))
            quiet = dataclasses.replace(finding, severity=Severity.INFO)
            for proc in procs:
                out[proc.key] = finding if proc is bearer else quiet
        return out

    def worst_for_process(self, pid: int, gpu_index: int) -> Finding | None:
        """The process's worst finding, else its GPU's worst warning (the HINT column asks
        :meth:`inline_for_processes`, which puts a GPU's warning on one process only)."""
        own = self.for_process(pid, gpu_index)
        if own:
            return own[0]
        gpu = [f for f in self.for_gpu(gpu_index) if f.severity >= Severity.WARNING]
        return gpu[0] if gpu else None
