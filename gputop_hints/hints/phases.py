"""Phases of one GPU's trace, and the verdict each GPU gets from them.

A GPU's readings are not one level: a job starts (model loading, compile, the first
steps' autotuning), runs, pauses (an evaluation, a checkpoint, the gap between two
jobs), and ends (the process exits or keeps its memory after the last step). A rule
that judges a level or a duty cycle over a window that straddles two of those judges
neither. This module cuts a trace into

* **start-up**: the readings before the GPU's first *sustained* activity -- nothing
  yet, or the short isolated bursts of compilation and autotuning before the loop;
* **run**: from there to the GPU's last activity (idle gaps inside it belong to it:
  they are what the rules judge);
* **idle stretches** inside the run of at least :data:`IDLE_STRETCH_S` (and three
  readings): a pause between jobs or phases, not a gap between batches;
* **teardown**: the readings after the last activity, to the log's end;

and gives each GPU one :class:`Verdict` built from what the readings have, whatever
the rules found: unused, held but idle, under-used (steady or bursty), busy, busy at
its power cap, or busy but not working. The bands and their sources are in
docs/hints.md ("Phases and the per-GPU verdict").

It reads a trace in one pass in constant memory (:class:`PhaseTracker`), so the report
of a day-long log and the live monitor's ring use the same code. No Textual here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from gputop_hints.model import GpuSample, Snapshot
from gputop_hints.units import MIB

GIB = 2**30

ACTIVE_PERCENT = 5.0
"""A reading at or above this is activity. Below it the GPU ran kernels less than
5 % of its sample period: the idle bound idle-holding-vram uses for coarse logs
(COARSE_DUTY_BOUND), so a desktop compositor's 1-4 % or a monitoring agent's probe is
not a job."""

SUSTAIN_S = 10.0
"""Activity sustained this long (and over two readings) is the run. The bursts of a
start-up -- torch.compile's autotuning benchmarks, cuDNN's first iterations, one warm-up
step -- last seconds and are followed by a pause; a training or serving loop keeps its
GPU active for tens of seconds to hours. 10 s is 20 times Nsight Systems' 500 ms
"GPU starvation" gap."""

START_UP_MAX_S = 180.0
"""Start-up ends at the first sustained activity only within this long of the first
activity (warm_up.max_age_s: torch.compile and dataset indexing take tens of seconds
to a couple of minutes). A GPU that never sustains activity (a starved loop bursting
for a second at a time) starts its run at its first activity."""

IDLE_STRETCH_S = 60.0
"""An idle run this long (and of three readings or more) inside a run is a stretch of
its own -- an evaluation on the CPU, a checkpoint to slow storage, the time between two
jobs -- not a gap between batches (those last milliseconds to seconds)."""

BUSY_PERCENT = 80.0
"""A run whose mean over its active readings is at or above this is busy. Princeton's
jobstats and Job Defense Shield flag jobs far below (<= 15 %, "low GPU utilization");
Kempner's guidance judges a job on its best metric. 80 % leaves room for the
evaluation and logging steps every healthy loop has; compute-bound (>= 90 % over its
window) says more where it holds."""

UNDER_USED_WARN_PERCENT = 50.0
"""Under this mean the GPU is under-used enough to warn (Nsight Systems' "low GPU
utilization" bar); between it and BUSY_PERCENT the verdict is information."""

BURSTY_IDLE_SHARE = 0.2
"""An under-used run with at least this share of idle readings and this share of busy
ones alternates between the two (input-starved's min_gap_fraction): bursty."""

POWER_CAP_SHARE = 0.95
"""Drawing this share of the enforced power limit or more, busy: the power limit, not
the work, sets the clocks (NVML's SW power cap reason engages at the limit)."""

NOT_WORKING_POWER_SHARE = 0.4
"""Busy at under this share of the limit: kernels resident but doing little
(utilization-overstated's power_share_below)."""

THERMAL_TARGET_C = 83.0
"""GPU Boost's default target temperature on NVIDIA boards (``nvidia-smi -q``'s "GPU
Target Temperature", 83 C on most GeForce and workstation cards; data-centre cards
slow down in the mid-80s to 90s, "GPU Slowdown Temp"): a busy card held here trades
clock for heat."""

HOT_SHARE = 0.5
"""... for at least this share of its busy readings (and ten of them): most of the run."""

HANG_MIN_S = 600.0
"""A busy stretch at least this long (and of ten readings) with its memory frozen to the
MiB while the card cools is a hang suspect: a job's allocator moves its footprint with
every step's temporaries, and a card doing work holds its temperature or warms."""

HANG_COOLING_C = 5.0
"""... cooling by at least this much from its peak in the stretch."""

FROZEN_BYTES = 1 * MIB
"""Memory that does not move by more than this is frozen."""

HELD_IDLE_MIN_S = 120.0
"""Held and idle this long (idle_holding_vram.idle_for_s_without_host) ..."""

COARSE_S = 2.0
"""... over enough readings: readings this far apart are independent draws of the duty
cycle, and 60 of them at idle bound it under 5 % (the rule of three); closer ones need
five in a row (idle-holding-vram's IDLE_READINGS)."""


def _readings_needed(interval_s: float) -> int:
    return 60 if interval_s >= COARSE_S else 5


def _enough_idle(span: _Span, interval_s: float) -> bool:
    return span.n >= _readings_needed(interval_s) and span.seconds >= HELD_IDLE_MIN_S


IN_USE_BYTES = 0.25 * GIB

GAP_FACTOR = 2.0
"""A spacing over this many intervals is a gap in the log (the report's GAP_FACTOR): it
stands for this much time, not for the unlogged hours."""
"""Memory at or above this is held: a CUDA context alone takes 300-600 MiB
(low_utilization.in_use_vram_gib); a GPU with no process reads a few MiB."""


class Kind(str, Enum):
    """What a GPU's readings say it did, in words a person reads."""

    UNUSED = "unused"
    HELD_IDLE = "held-idle"
    UNDER_USED_STEADY = "under-used-steady"
    UNDER_USED_BURSTY = "under-used-bursty"
    BUSY = "busy"
    BUSY_POWER_CAPPED = "busy-power-capped"
    BUSY_NOT_WORKING = "busy-not-working"
    BUSY_HOT = "busy-hot"
    NO_READINGS = "no-readings"


@dataclass
class _Span:
    """Running sums over one stretch of readings."""

    n: int = 0
    seconds: float = 0.0
    """The time its readings stand for (each its spacing from the one before, a gap in
    the log capped at GAP_FACTOR spacings)."""
    sm_n: int = 0
    sm_sum: float = 0.0
    active: int = 0
    idle: int = 0
    busy: int = 0
    busy_warm: int = 0
    """Busy readings with a temperature known ..."""
    busy_hot: int = 0
    """... and at or above THERMAL_TARGET_C."""
    vram_max: float | None = None
    power_n: int = 0
    power_share_sum: float = 0.0
    busy_power: list[int] = field(default_factory=lambda: [0] * 121)
    """Readings at BUSY_PERCENT or more by power share of the limit, in 1 % bins."""

    def add(self, r: _Reading) -> None:
        self.n += 1
        self.seconds += r.seconds
        if r.sm is not None:
            self.sm_n += 1
            self.sm_sum += r.sm
            if r.sm >= ACTIVE_PERCENT:
                self.active += 1
            else:
                self.idle += 1
            if r.sm >= BUSY_PERCENT:
                self.busy += 1
                if r.temperature is not None:
                    self.busy_warm += 1
                    self.busy_hot += r.temperature >= THERMAL_TARGET_C
        if r.vram is not None:
            self.vram_max = r.vram if self.vram_max is None else max(self.vram_max, r.vram)
        if r.power is not None and r.power_limit:
            self.power_n += 1
            self.power_share_sum += r.power / r.power_limit
            if r.sm is not None and r.sm >= BUSY_PERCENT:
                self.busy_power[min(120, max(0, int(r.power / r.power_limit * 100)))] += 1

    def merge(self, other: _Span) -> None:
        if not other.n:
            return
        self.n += other.n
        self.seconds += other.seconds
        self.sm_n += other.sm_n
        self.sm_sum += other.sm_sum
        self.active += other.active
        self.idle += other.idle
        self.busy += other.busy
        self.busy_warm += other.busy_warm
        self.busy_hot += other.busy_hot
        if other.vram_max is not None:
            self.vram_max = (
                other.vram_max if self.vram_max is None else max(self.vram_max, other.vram_max)
            )
        self.power_n += other.power_n
        self.power_share_sum += other.power_share_sum
        self.busy_power = [a + b for a, b in zip(self.busy_power, other.busy_power, strict=True)]

    @property
    def sm_mean(self) -> float | None:
        return self.sm_sum / self.sm_n if self.sm_n else None

    @property
    def power_share(self) -> float | None:
        return self.power_share_sum / self.power_n if self.power_n else None

    @property
    def busy_power_median(self) -> float | None:
        """Median power share of the limit over the busy readings (within 1 %)."""
        n = sum(self.busy_power)
        if not n:
            return None
        seen = 0
        for i, count in enumerate(self.busy_power):
            seen += count
            if seen * 2 >= n:
                return i / 100.0
        return 1.2


@dataclass(frozen=True, slots=True)
class _Reading:
    t: float
    seconds: float
    sm: float | None
    vram: float | None
    power: float | None
    power_limit: float | None
    temperature: float | None


@dataclass
class _BusyRun:
    """The current run of busy readings: is its memory frozen, is the card cooling?"""

    start: float
    n: int
    vram: float | None
    frozen: bool
    peak_c: float | None
    last_c: float | None
    power_seen: bool


@dataclass(frozen=True, slots=True)
class Hang:
    """A busy stretch whose memory froze while the card cooled."""

    start: float
    seconds: float
    readings: int
    peak_c: float
    last_c: float
    vram_bytes: float


@dataclass(frozen=True, slots=True)
class Phases:
    """One GPU's trace cut into phases (seconds; None where the phase is absent)."""

    start: float | None
    end: float | None
    start_up_s: float
    """Before the first sustained activity (0: active from the first reading)."""
    run_start: float | None
    """When the run began (None: the GPU never ran a kernel at ACTIVE_PERCENT)."""
    run_end: float | None
    """Its last activity."""
    teardown_s: float
    """After the last activity, to the end of the trace."""
    teardown_vram_bytes: float | None
    idle_stretches: int
    idle_stretch_s: float
    free_s: float = 0.0
    """Time after the run began with nothing loaded and no kernel: no job on the GPU."""
    """Idle stretches inside the run (pauses, the gaps between jobs), and their time."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one GPU did over a trace, with the figures behind it."""

    gpu_index: int
    kind: Kind
    severity: str
    """"info" or "warning" (the Severity name: this module stays below the engine)."""
    label: str
    """Short, and steady while the verdict holds (the figures are in ``summary``): the GPU
    panel's title shows it every tick, and a label whose percentage moved would be
    redrawn each time."""
    summary: str
    phases: Phases
    sm_mean: float | None
    """Mean SM over the run (start-up and teardown left out; its idle stretches are in it
    and said beside it)."""
    idle_share: float | None
    busy_share: float | None
    vram_max_bytes: float | None
    power_share: float | None
    readings: int

    def to_dict(self) -> dict[str, object]:
        p = self.phases
        return {
            "gpu_index": self.gpu_index,
            "verdict": self.kind.value,
            "severity": self.severity,
            "label": self.label,
            "summary": self.summary,
            "readings": self.readings,
            "sm_mean_percent": _round(self.sm_mean),
            "idle_share": _round(self.idle_share, 3),
            "busy_share": _round(self.busy_share, 3),
            "vram_max_bytes": None if self.vram_max_bytes is None else int(self.vram_max_bytes),
            "power_share_of_limit": _round(self.power_share, 3),
            "phases": {
                "start_up_s": round(p.start_up_s, 1),
                "run_start": p.run_start,
                "run_end": p.run_end,
                "teardown_s": round(p.teardown_s, 1),
                "teardown_vram_bytes": None
                if p.teardown_vram_bytes is None
                else int(p.teardown_vram_bytes),
                "idle_stretches": p.idle_stretches,
                "idle_stretch_s": round(p.idle_stretch_s, 1),
                "free_s": round(p.free_s, 1),
            },
        }


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


@dataclass
class PhaseTracker:
    """Cuts one GPU's readings into phases as they arrive, in constant memory.

    ``interval_s`` is the trace's spacing: durations are counted in readings times it
    where timestamps alone would undercount (a stretch of one reading lasts one
    interval)."""

    gpu_index: int
    interval_s: float
    readings: int = 0
    first_t: float | None = None
    last_t: float | None = None
    # start-up: readings before the first activity, and the activity held since it
    # until it is sustained (or START_UP_MAX_S passed).
    _before: _Span = field(default_factory=_Span)
    _held: list[_Reading] = field(default_factory=list)
    _first_active_t: float | None = None
    _started: bool = False
    _start_up_s: float = 0.0
    _run_start: float | None = None
    _provisional: PhaseTracker | None = None
    settled_at: float | None = None
    """The time of the reading at which the start-up settled."""
    # the run: committed up to the last activity; readings since then are pending.
    _run: _Span = field(default_factory=_Span)
    _pending: _Span = field(default_factory=_Span)
    _pending_idle_run: int = 0
    _last_active_t: float | None = None
    _active_streak: int = 0
    _streak_start: float | None = None
    _idle_stretches: int = 0
    _idle_stretch_s: float = 0.0
    _free: _Span = field(default_factory=_Span)
    """Readings in the run with nothing loaded and no kernel: no job on the GPU."""
    # busy but not working: the current busy run and the worst hang-like one.
    _busy: _BusyRun | None = None
    hang: Hang | None = None
    _vram_last: float | None = None
    _vram_total: float | None = None

    def add(
        self,
        t: float,
        sm: float | None,
        vram: float | None = None,
        power: float | None = None,
        power_limit: float | None = None,
        temperature: float | None = None,
        vram_total: float | None = None,
    ) -> None:
        """Take in one reading (None: not in this reading)."""
        spacing = self.interval_s
        if self.last_t is not None and t >= self.last_t:
            spacing = min(t - self.last_t, GAP_FACTOR * self.interval_s)
        r = _Reading(t, spacing, sm, vram, power, power_limit, temperature)
        self.readings += 1
        if self.first_t is None:
            self.first_t = t
        self.last_t = t
        if vram_total:
            self._vram_total = vram_total
        if vram is not None:
            self._vram_last = vram
        if not self._started:
            self._start_up(r)
            return
        self._in_run(r)

    def add_sample(self, t: float, g: GpuSample) -> None:
        """Take in one GPU reading at time ``t`` (what :meth:`add` takes, from a sample)."""
        self.add(
            t,
            g.sm_percent,
            g.vram_used_bytes,
            g.power_watts,
            g.power_limit_watts,
            g.temperature_c,
            g.vram_total_bytes,
        )

    # --- start-up ---------------------------------------------------------------------

    def _start_up(self, r: _Reading) -> None:
        active = r.sm is not None and r.sm >= ACTIVE_PERCENT
        if self._first_active_t is None:
            if not active:
                self._before.add(r)
                return
            self._first_active_t = r.t
            self._provisional = self._provisional_from(r.t)
        self._held.append(r)
        self._feed_provisional(r)
        # Sustained: the newest active streak has lasted SUSTAIN_S over two readings.
        if active:
            if self._streak_start is None:
                self._streak_start = r.t
            self._active_streak += 1
        else:
            self._streak_start = None
            self._active_streak = 0
        sustained = (
            self._streak_start is not None
            and self._active_streak >= 2
            and (r.t - self._streak_start) + self.interval_s >= SUSTAIN_S
        )
        expired = r.t - self._first_active_t > START_UP_MAX_S or len(self._held) > 100_000
        if sustained:
            assert self._streak_start is not None
            self._begin_run(self._streak_start)
        elif expired:
            self._begin_run(self._first_active_t)

    def _provisional_from(self, start: float) -> PhaseTracker:
        """A tracker whose run began at ``start``, the first activity: what this one's
        verdict is while its start-up is not settled (kept in step, O(1) a reading,
        instead of copying the held readings at every question)."""
        twin = PhaseTracker(self.gpu_index, self.interval_s)
        twin._before.merge(self._before)
        twin._started = True
        twin._run_start = start
        twin._first_active_t = start
        twin._start_up_s = self._before.seconds
        twin.first_t = self.first_t
        return twin

    def _feed_provisional(self, r: _Reading) -> None:
        twin = self._provisional
        if twin is None:
            return
        twin.readings = self.readings
        twin.last_t = self.last_t
        twin._vram_last = self._vram_last
        twin._vram_total = self._vram_total
        twin._in_run(r)

    def _begin_run(self, start: float) -> None:
        """The run begins at ``start``: what came before it is start-up."""
        self._provisional = None
        held, self._held = self._held, []
        self._started = True
        self.settled_at = self.last_t
        self._run_start = start
        self._active_streak = 0
        self._streak_start = None
        for r in held:
            if r.t < start:
                self._before.add(r)
            else:
                self._in_run(r)
        self._start_up_s = self._before.seconds

    # --- the run ----------------------------------------------------------------------

    def _in_run(self, r: _Reading) -> None:
        active = r.sm is not None and r.sm >= ACTIVE_PERCENT
        self._track_busy(r)
        if not active and r.vram is not None and r.vram < IN_USE_BYTES:
            # Nothing loaded and nothing running: no job holds the GPU (between two runs,
            # after the last). Free time, said apart -- not a job's idleness.
            self._free.add(r)
            return
        if not active:
            self._pending.add(r)
            self._pending_idle_run += 1
            return
        if self._pending.n:
            # An idle stretch inside the run: a pause of its own, not a gap between batches.
            seconds = self._pending.seconds
            if self._pending_idle_run >= 3 and seconds >= IDLE_STRETCH_S:
                self._idle_stretches += 1
                self._idle_stretch_s += seconds
            self._run.merge(self._pending)
            self._pending = _Span()
        self._pending_idle_run = 0
        self._run.add(r)
        self._last_active_t = r.t

    def _track_busy(self, r: _Reading) -> None:
        busy = r.sm is not None and r.sm >= 90.0
        run = self._busy
        if not busy:
            self._busy = None
            return
        if run is None:
            self._busy = _BusyRun(
                r.t,
                1,
                r.vram,
                r.vram is not None,
                r.temperature,
                r.temperature,
                r.power is not None,
            )
            return
        run.n += 1
        if r.vram is None or run.vram is None or abs(r.vram - run.vram) > FROZEN_BYTES:
            run.frozen = False
        if r.temperature is not None:
            run.peak_c = r.temperature if run.peak_c is None else max(run.peak_c, r.temperature)
            run.last_c = r.temperature
        run.power_seen = run.power_seen or r.power is not None
        self._judge_hang(run, r.t)

    def _judge_hang(self, run: _BusyRun, t: float) -> None:
        seconds = t - run.start + self.interval_s
        if (
            (self.hang is None or seconds > self.hang.seconds)
            and run.frozen
            and not run.power_seen
            and run.n >= 10
            and seconds >= HANG_MIN_S
            and run.peak_c is not None
            and run.last_c is not None
            and run.peak_c - run.last_c >= HANG_COOLING_C
            and run.vram is not None
            and run.vram >= IN_USE_BYTES
        ):
            self.hang = Hang(run.start, seconds, run.n, run.peak_c, run.last_c, run.vram)

    # --- the result -------------------------------------------------------------------

    def _settled(self) -> PhaseTracker:
        """This tracker, or -- still inside a start-up that never sustained -- its
        provisional twin, in which the activity since the first is the run."""
        if self._started or self._provisional is None:
            return self
        return self._provisional

    def phases(self) -> Phases:
        return self._settled()._phases()

    def _phases(self) -> Phases:
        end = self.last_t
        teardown = 0.0
        if self._started and self._pending.n and self._last_active_t is not None:
            teardown = self._pending.seconds
        start_up = self._start_up_s if self._started else self._before.seconds
        return Phases(
            start=self.first_t,
            end=end,
            start_up_s=start_up,
            run_start=self._run_start,
            run_end=self._last_active_t,
            teardown_s=teardown,
            teardown_vram_bytes=self._vram_last if teardown > 0 else None,
            idle_stretches=self._idle_stretches,
            idle_stretch_s=self._idle_stretch_s,
            free_s=self._free.seconds,
        )

    @property
    def settled(self) -> bool:
        """Whether the start-up is over (the run's start is known for good)."""
        return self._started

    @property
    def first_active_t(self) -> float | None:
        """When the GPU first ran a kernel at ACTIVE_PERCENT (None: not yet)."""
        return self._first_active_t

    @property
    def start_moved(self) -> bool:
        """Whether the run began after the first activity (short bursts came first)."""
        return (
            self._started
            and self._run_start is not None
            and self._first_active_t is not None
            and self._run_start > self._first_active_t
        )

    @property
    def run_start(self) -> float | None:
        """When the run began (None: not known yet, or no activity)."""
        return self._run_start

    @property
    def last_active_t(self) -> float | None:
        """The time of the GPU's last activity so far (None: none yet)."""
        return self._last_active_t

    def in_teardown(self, t: float) -> bool:
        """Whether ``t`` falls after the GPU's last activity so far (pending: a later
        activity takes it back into the run)."""
        return self._last_active_t is not None and t > self._last_active_t

    def verdict(self) -> Verdict:
        """The GPU's verdict over what it has read so far."""
        return self._settled()._verdict()

    def _verdict(self) -> Verdict:
        phases = self._phases()
        run = _Span()
        run.merge(self._run)
        everything = _Span()
        everything.merge(self._before)
        everything.merge(self._run)
        everything.merge(self._pending)
        everything.merge(self._free)
        vram = everything.vram_max
        i = self.gpu_index
        if self.readings == 0 or everything.sm_n == 0:
            return self._make(
                Kind.NO_READINGS,
                "info",
                "no utilization readings",
                f"GPU {i}: no utilization readings to judge.",
                phases,
                run,
                vram,
            )
        held = vram is not None and vram >= IN_USE_BYTES
        if run.sm_n == 0:
            span = _duration(everything.seconds)
            if held:
                assert vram is not None
                enough = _enough_idle(everything, self.interval_s)
                return self._make(
                    Kind.HELD_IDLE,
                    "warning" if enough else "info",
                    f"held, idle ({_gib(vram)})",
                    f"GPU {i}: {_gib(vram)} of memory held and no kernel at "
                    f"{ACTIVE_PERCENT:g} % or more in {everything.n} readings ({span})"
                    + (
                        "."
                        if enough
                        else f" -- too few readings to call it idle (a warning needs "
                        f"{HELD_IDLE_MIN_S:g} s and {_readings_needed(self.interval_s)} "
                        "readings)."
                    ),
                    phases,
                    everything,
                    vram,
                )
            memory = "" if vram is None else f", at most {_mib(vram)} in use"
            return self._make(
                Kind.UNUSED,
                "info",
                "unused",
                f"GPU {i}: no kernel at {ACTIVE_PERCENT:g} % or more in {everything.n} "
                f"readings ({span}){memory}: nothing ran on it.",
                phases,
                everything,
                vram,
            )
        # The run's level, its idle stretches in it (said beside it in the phases).
        sm = run.sm_mean or 0.0
        idle = run.idle / run.sm_n
        busy = run.busy / run.sm_n
        around = _phase_words(phases)
        if self.hang is not None:
            h = self.hang
            return self._make(
                Kind.BUSY_NOT_WORKING,
                "warning",
                "busy, not working? (hang suspect)",
                f"GPU {i}: read >= 90 % for {_duration(h.seconds)} ({h.readings} readings) "
                f"with its memory frozen at {_mib(h.vram_bytes)} while the card cooled from "
                f"{h.peak_c:.0f} to {h.last_c:.0f} C: a card doing work holds its temperature "
                "and a job's memory moves with every step, so this looks like kernels "
                "spinning without work -- a rank waiting in a collective for a peer that "
                "died. Less certain without a power column." + around,
                phases,
                run,
                vram,
            )
        power = run.power_share
        if sm >= BUSY_PERCENT:
            if power is not None and power < NOT_WORKING_POWER_SHARE:
                return self._make(
                    Kind.BUSY_NOT_WORKING,
                    "warning",
                    "busy, low power",
                    f"GPU {i}: utilization {sm:.0f} % over the run at {power * 100:.0f} % of its "
                    "power limit: kernels are resident but do little work (light kernels, "
                    "transfers, a spin-wait)." + around,
                    phases,
                    run,
                    vram,
                )
            if run.busy_warm >= 10 and run.busy_hot >= HOT_SHARE * run.busy_warm:
                return self._make(
                    Kind.BUSY_HOT,
                    "warning",
                    "busy, hot: throttling?",
                    f"GPU {i}: busy ({sm:.0f} % over the run) with {run.busy_hot} of its "
                    f"{run.busy_warm} busy readings at {THERMAL_TARGET_C:g} C or more: at the "
                    "temperature where GPU Boost starts to trade clocks for heat, for most of "
                    "the run -- a throttling suspect. Less certain without a clock or "
                    "throttle-reason column (nvidia-smi --query-gpu=clocks.sm,"
                    "clocks_event_reasons.active tells); check the airflow, the fan curve "
                    "and the room." + around,
                    phases,
                    run,
                    vram,
                )
            capped = run.busy_power_median
            if capped is not None and capped >= POWER_CAP_SHARE:
                return self._make(
                    Kind.BUSY_POWER_CAPPED,
                    "info",
                    "busy, at power cap",
                    f"GPU {i}: busy ({sm:.0f} % over the run), its busy readings at a median "
                    f"{capped * 100:.0f} % of its power limit: the limit sets its clocks "
                    "(power-limited), as designed for a card run flat out -- not a fault; "
                    "a higher limit (nvidia-smi -pl, where allowed) buys speed." + around,
                    phases,
                    run,
                    vram,
                )
            return self._make(
                Kind.BUSY,
                "info",
                "busy",
                f"GPU {i}: busy, {sm:.0f} % over the run ({busy * 100:.0f} % of readings at "
                f"{BUSY_PERCENT:g} % or more)." + around,
                phases,
                run,
                vram,
            )
        mostly_idle = idle >= 0.5
        bursty = idle >= BURSTY_IDLE_SHARE and busy >= BURSTY_IDLE_SHARE
        severity = "warning" if sm < UNDER_USED_WARN_PERCENT else "info"
        if mostly_idle:
            return self._make(
                Kind.UNDER_USED_BURSTY,
                severity,
                "mostly idle",
                f"GPU {i}: mostly idle -- {idle * 100:.0f} % of the run's readings under "
                f"{ACTIVE_PERCENT:g} %, a mean of {sm:.0f} %, its work in bursts between "
                "(waiting on input, requests or host-side steps)." + around,
                phases,
                run,
                vram,
            )
        if bursty:
            return self._make(
                Kind.UNDER_USED_BURSTY,
                severity,
                "under-used, bursty",
                f"GPU {i}: under-used, {sm:.0f} % over the run, in bursts -- "
                f"{idle * 100:.0f} % of readings idle, {busy * 100:.0f} % at "
                f"{BUSY_PERCENT:g} % or more: the GPU waits between bursts of work (input, "
                "requests, host-side steps)." + around,
                phases,
                run,
                vram,
            )
        return self._make(
            Kind.UNDER_USED_STEADY,
            severity,
            "under-used, steady",
            f"GPU {i}: under-used, a steady {sm:.0f} % over the run ({idle * 100:.0f} % of "
            "readings idle): each step keeps it busy only part of the time -- a small "
            "batch or model, or per-step host work." + around,
            phases,
            run,
            vram,
        )

    def _make(
        self,
        kind: Kind,
        severity: str,
        label: str,
        summary: str,
        phases: Phases,
        span: _Span,
        vram: float | None,
    ) -> Verdict:
        if vram is not None and self._vram_total and kind is not Kind.UNUSED:
            summary += f" Memory: up to {_gib(vram)} of {_gib(self._vram_total)}."
        idle = span.idle / span.sm_n if span.sm_n else None
        busy = span.busy / span.sm_n if span.sm_n else None
        return Verdict(
            gpu_index=self.gpu_index,
            kind=kind,
            severity=severity,
            label=label,
            summary=summary,
            phases=phases,
            sm_mean=span.sm_mean,
            idle_share=idle,
            busy_share=busy,
            vram_max_bytes=vram,
            power_share=span.power_share,
            readings=self.readings,
        )


def _phase_words(p: Phases) -> str:
    parts = []
    if p.start_up_s > 0:
        parts.append(f"start-up {_duration(p.start_up_s)} before it")
    if p.idle_stretches:
        parts.append(
            f"{p.idle_stretches} idle stretch{'es' if p.idle_stretches > 1 else ''} "
            f"({_duration(p.idle_stretch_s)}) inside it"
        )
    if p.free_s > 0:
        parts.append(f"{_duration(p.free_s)} with nothing loaded (no job on it)")
    if p.teardown_s > 0:
        held = p.teardown_vram_bytes
        parts.append(
            f"idle {_duration(p.teardown_s)} after its last activity"
            + (f", still holding {_gib(held)} at the end" if held and held >= IN_USE_BYTES else "")
        )
    return f" Phases: {'; '.join(parts)}." if parts else ""


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _gib(value: float) -> str:
    return f"{value / GIB:.1f} GiB"


def _mib(value: float) -> str:
    return f"{value / MIB:.0f} MiB" if value < GIB else _gib(value)


def start_up_end(
    times: Sequence[float], sm: Sequence[float | None], interval_s: float
) -> int | None:
    """Index of the reading at which a trace's run begins, as far as the trace has come:
    its first sustained activity, or -- none yet -- its first activity (a loop that
    bursts without ever sustaining is a run from its first burst; a later sustained
    stretch within START_UP_MAX_S moves the start to it). None: no activity yet."""
    tracker = PhaseTracker(-1, interval_or_one(interval_s))
    for t, value in zip(times, sm, strict=True):
        tracker.add(t, value)
        if tracker.settled:
            break
    start = tracker.run_start if tracker.settled else tracker.first_active_t
    if start is None:
        return None
    for i, t in enumerate(times):
        if t >= start:
            return i
    return None


class GpuVerdicts:
    """Each GPU's tracker, fed one snapshot at a time (the live monitor, ``--once``):
    every GPU's verdict over what has been watched, as a report gives it over a file."""

    def __init__(self) -> None:
        self._trackers: dict[int, PhaseTracker] = {}
        self._cache: dict[int, Verdict] = {}

    def add(self, snapshot: Snapshot) -> None:
        self._cache.clear()
        interval = interval_or_one(snapshot.interval_s)
        for g in snapshot.gpus:
            if g.lost or g.not_answering_s is not None:
                continue  # no readings now: not a reading of zero
            tracker = self._trackers.get(g.index)
            if tracker is None:
                tracker = self._trackers[g.index] = PhaseTracker(g.index, interval)
            tracker.add_sample(snapshot.timestamp, g)

    def of(self, index: int) -> Verdict | None:
        """GPU ``index``'s verdict (None: no readings of it yet)."""
        cached = self._cache.get(index)
        if cached is not None:
            return cached
        tracker = self._trackers.get(index)
        if tracker is None:
            return None
        verdict = self._cache[index] = tracker.verdict()
        return verdict

    def all(self) -> list[Verdict]:
        return [v for i in sorted(self._trackers) if (v := self.of(i)) is not None]


def interval_or_one(interval_s: float | None) -> float:
    return interval_s if interval_s and interval_s > 0 and math.isfinite(interval_s) else 1.0
