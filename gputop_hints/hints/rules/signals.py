"""Signals several rules read: each is computed by one rule's logic and asked by others.

A rule module never imports another rule module (a test checks it): what one
rule computes and another asks ("is this rank hung?", "does this GPU thrash its
link?") lives here, in sections named after the rule it comes from, so that the
dependency is one-way: rules -> signals -> shared. Text helpers and a process's
view of SM stay in ``shared``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Scope
from gputop_hints.hints.kinds import is_compile_worker, is_server, server_name
from gputop_hints.hints.phases import PhaseTracker, interval_or_one, start_up_end
from gputop_hints.hints.rules.shared import gib_text, multi_gpu_jobs, sm_evidence
from gputop_hints.hints.traces import idle_gaps
from gputop_hints.hints.window import GIB, VRAM_STEADY_SHARE, Gaps, Window, median_of
from gputop_hints.model import HOLDING_CLOCK_REASONS, GpuProcess, GpuSample
from gputop_hints.text import pattern
from gputop_hints.units import MIB

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds
    from gputop_hints.history import GpuHistory

# GPM / DCGM profiling: what happens inside "utilization", where the GPU says


def sm_active(win: Window, index: int) -> float | None:
    """Mean SM activity (GPM ``SM_UTIL``, DCGM ``SMACT``) of GPU ``index`` over the
    window: None where the source does not profile (pre-Hopper, restricted, a log)."""
    return win.gpu_profiling_mean(index, "sm_active_percent")


def tensor_active(win: Window, index: int) -> float | None:
    """Mean tensor-pipe activity (GPM ``ANY_TENSOR_UTIL``, DCGM ``TENSO``); None: unknown."""
    return win.gpu_profiling_mean(index, "tensor_active_percent")


def dram_active(win: Window, index: int) -> float | None:
    """Mean DRAM bandwidth use (GPM ``DRAM_BW_UTIL``, DCGM ``DRAMA``); None: unknown."""
    return win.gpu_profiling_mean(index, "dram_active_percent")


# collective-hang: ranks spinning in a collective


def power_share(win: Window, index: int) -> float | None:
    """Mean power over the window as a share of the enforced limit (None: unknown)."""
    gpu = win.gpu(index)
    power = win.gpu_power_mean(index)
    if gpu is None or power is None or not gpu.power_limit_watts:
        return None
    return power / gpu.power_limit_watts


def spinning_without_work(win: Window, t: Thresholds, index: int) -> bool:
    """GPU ``index`` reads ~100 % busy at near-idle power: kernels spin, they do not compute.

    Once per window and GPU (asked for every process)."""
    return win.once(("spinning", id(t), index), _spinning_uncached, win, t, index)


def _spinning_uncached(win: Window, t: Thresholds, index: int) -> bool:
    c = t.collective_hang
    sm = win.gpu_sm_mean(index)
    low = win.gpu_sm_min(index)
    active = sm_active(win, index)
    if active is not None:
        # GPM counts the SMs that hold warps: a kernel spinning on a flag keeps only
        # NCCL's few channel blocks resident, so this decides, power or not.
        return (
            low is not None
            and low >= c.spin_sm_above_percent
            and (active < c.spin_sm_active_below_percent)
        )
    share = power_share(win, index)
    return (
        sm is not None
        and low is not None
        and share is not None
        and low >= c.spin_sm_above_percent
        and share < c.power_share_below
    )


@dataclass(frozen=True, slots=True)
class Hang:
    """A hang: the process to look at, and the ranks that wait for it."""

    proc: GpuProcess
    waiting: tuple[int, ...]
    """GPUs spinning in the collective."""
    stopped: bool
    """True: ``proc`` is the rank that stopped arriving; False: it is one of the waiting ranks."""


def hangs(win: Window, t: Thresholds) -> list[Hang]:
    """Once per window; see :func:`_hangs_uncached`."""
    return win.derived(("hangs", id(t)), lambda: _hangs_uncached(win, t))


def _hangs_uncached(win: Window, t: Thresholds) -> list[Hang]:
    """Every hang the window shows (idle-holding-vram asks too: a hung rank is not idle)."""
    c = t.collective_hang
    out: list[Hang] = []
    claimed: set[tuple[int, int]] = set()
    for ranks in multi_gpu_jobs(win, t).values():
        spinning = tuple(sorted(i for i in ranks if spinning_without_work(win, t, i)))
        if not spinning:
            continue
        idle = [
            p
            for i, p in sorted(ranks.items())
            if i not in spinning and (win.gpu_sm_mean(i) or 0.0) < c.stopped_sm_below_percent
        ]
        if idle:
            out.extend(Hang(p, spinning, True) for p in idle)
        else:
            out.extend(Hang(ranks[i], spinning, False) for i in spinning)
        claimed.update(p.key for p in ranks.values())
    min_vram = t.general.min_vram_gib * GIB
    # A rank alone on this node (multi-node jobs): its peers are elsewhere.
    for proc in win.processes():
        if proc.key in claimed or (proc.vram_bytes or 0) < min_vram:
            continue
        if spinning_without_work(win, t, proc.gpu_index):
            out.append(Hang(proc, (proc.gpu_index,), False))
    return out


# straggler: the rank that sets a multi-GPU job's pace


@dataclass(frozen=True, slots=True)
class Straggling:
    """The rank of a multi-GPU job that sets the pace, and how it shows."""

    gpu_index: int
    pid: int
    sm_mean: float
    peers_median: float
    """The peers' median of the compared quantity: SM % (gaps) or power % of the limit (busy)."""
    peers: list[int]
    """The job's other GPUs, ascending."""
    user: str | None
    command: str
    never_waits: bool = False
    """True: found by power -- every rank reads busy, but only this one computes the whole
    time while its peers spin in the all-reduce; False: its own trace has gaps (SM below)."""
    own: float = 0.0
    """This rank's value of the compared quantity."""
    steady: bool = False
    """True: found by its gaps -- its trace has next to no idle gaps while every peer's
    has them (they wait for it; it never waits). ``own`` and ``peers_median`` are then
    the share of time in idle gaps, %."""


def stragglers(win: Window, t: Thresholds) -> list[Straggling]:
    """Once per window; see :func:`_stragglers_uncached`."""
    return win.derived(("stragglers", id(t)), lambda: _stragglers_uncached(win, t))


def _stragglers_uncached(win: Window, t: Thresholds) -> list[Straggling]:
    """Each straggling rank of each multi-GPU job (compute-bound asks too: its peers wait).

    Two signatures (HTA's straggler analysis; NCCL spins while waiting): a rank whose
    GPU idles far more than its peers (its input or host is slow), or -- when every
    rank reads busy, because waiting ranks spin at 100 % -- the one rank drawing
    clearly more power than the rest: the only one that never waits.
    """
    c = t.straggler
    out = []
    hung = {h.proc.key for h in hangs(win, t)}
    for (user, command), ranks in multi_gpu_jobs(win, t).items():
        if any(p.key in hung for p in ranks.values()):
            continue  # a rank that stopped arriving is a hang, not a slow rank
        known = {i: m for i in ranks if (m := win.gpu_sm_mean(i)) is not None}
        for index, sm in known.items():
            peers = [m for i, m in known.items() if i != index]
            if not peers:
                continue
            median = median_of(peers)
            others = sorted(i for i in known if i != index)
            if median >= c.peers_sm_above_percent and sm <= median - c.below_peers_points:
                out.append(
                    Straggling(index, ranks[index].pid, sm, median, others, user, command, own=sm)
                )
        if not out and len(known) >= 3:
            out.extend(_steady_pace_setter(win, t, ranks, known, user, command))
        if out or not known or min(known.values()) < c.all_busy_sm_percent:
            continue
        power = {i: s for i in known if (s := power_share(win, i)) is not None}
        for index, share in power.items():
            peers = [s for i, s in power.items() if i != index]
            if len(peers) < 1:
                continue
            median = median_of(peers)
            if share * 100 >= median * 100 + c.power_above_peers_points:
                others = sorted(i for i in power if i != index)
                out.append(
                    Straggling(
                        index,
                        ranks[index].pid,
                        known[index],
                        median * 100,
                        others,
                        user,
                        command,
                        never_waits=True,
                        own=share * 100,
                    )
                )
    return out


STEADY_GAP_SHARE = 0.05
"""A rank with under this share of its time in idle gaps never waits (the rule of three's
5 %, as for idle): beside peers that all wait, it is the one they wait for."""


def _steady_pace_setter(
    win: Window,
    t: Thresholds,
    ranks: dict[int, GpuProcess],
    known: dict[int, float],
    user: str | None,
    command: str,
) -> list[Straggling]:
    """The third signature (issue 41): every rank but one idles in gaps -- each step
    they wait at the collective for it, the GPU idle where the wait blocks on the host
    -- and that one runs without a gap. Its SM % can be the lowest or in the middle
    (a slower step at a steady level); what marks it is that it never waits."""
    c = t.input_starved
    gaps = {}
    for index in known:
        g = win.gpu_gaps(index, c.gap_sm_below_percent, c.min_gap_s)
        if g is None:
            return []
        gaps[index] = g.fraction
    steady = [i for i, f in gaps.items() if f < STEADY_GAP_SHARE]
    if len(steady) != 1:
        return []
    index = steady[0]
    peers = {i: f for i, f in gaps.items() if i != index}
    if min(peers.values()) < c.min_gap_fraction:
        return []
    return [
        Straggling(
            index,
            ranks[index].pid,
            known[index],
            median_of(list(peers.values())) * 100,
            sorted(peers),
            user,
            command,
            own=gaps[index] * 100,
            steady=True,
        )
    ]


# low-utilization: a bimodal duty cycle, the input-stall signature


@dataclass(frozen=True, slots=True)
class DutyCycle:
    """A GPU that alternates between idle and full bursts over the level window."""

    idle_share: float
    """Share of the window spent in idle gaps."""
    gaps: int
    """How many separate idle gaps."""
    busy_share: float
    """Share of the readings at a compute-bound level (the bursts)."""


BIMODAL_SHARE = 0.8
"""Idle readings and full-burst readings together make at least this share of the window:
the trace has two levels, not a spread around one. A GPU that waits for each batch runs it
at full speed and then idles, so each ~1 s reading is near 0 or near 100 (NVML's
utilization is the share of its sample period with a kernel running)."""


def stalled_duty_cycle(win: Window, t: Thresholds, index: int) -> DutyCycle | None:
    """Whether GPU ``index`` alternates between idle gaps and full bursts over the level window.

    The sawtooth input-starved looks for, judged on the GPU's own trace alone: repeated gaps
    (``input_starved`` gap thresholds) between bursts that read as compute-bound. Batches
    arrive more slowly than the GPU consumes them; the bursts are not the GPU setting the
    pace. low-utilization says so (cause unknown without host data); compute-bound asks it
    so that the bursts of such a trace are never called compute-bound.
    """
    win = win.longer(t.low_utilization.window_s)
    return win.derived(("duty-cycle", index, id(t)), lambda: _duty_cycle(win, t, index))


def _duty_cycle(win: Window, t: Thresholds, index: int) -> DutyCycle | None:
    c = t.input_starved
    gh = win.history.gpus.get(index)
    start_up = 0
    if gh is not None and win.latest.imported:
        # Judged within the job's run (hints.phases): the idle before its first sustained
        # activity -- start-up, or the stretch before the job with nothing loaded -- is a
        # transition, and one idle->busy switch beside one pause is no sawtooth.
        found = _start_up_readings(win, t, gh)
        if found is None:
            return None
        start_up = found
    if start_up:
        assert gh is not None
        values = [v for v in gh.sm_percent.last(win.ticks)[start_up:] if v is not None]
        gaps = idle_gaps(values, win.interval_s, c.gap_sm_below_percent, c.min_gap_s, False)
    else:
        values = gh.sm_percent.known(win.ticks) if gh else []
        gaps = win.gpu_gaps(index, c.gap_sm_below_percent, c.min_gap_s)
    if not values or gaps is None:
        return None
    if gaps.count < c.min_gaps or gaps.fraction < c.min_gap_fraction:
        return None
    busy = sum(1 for v in values if v >= t.compute_bound.sm_above_percent) / len(values)
    idle = sum(1 for v in values if v < c.gap_sm_below_percent) / len(values)
    if busy < c.min_gap_fraction or busy + idle < BIMODAL_SHARE:
        return None
    return DutyCycle(gaps.fraction, gaps.count, busy)


# low-utilization: the level a GPU runs at, over enough readings


LEVEL_SAMPLES = 30
"""A level is judged over at least this many readings, whatever the log's interval: the
mean of n readings of a training job (spread ~25 points) is known to about 25/sqrt(n),
so 30 readings pin it within ~±9 points (2 standard errors). At 1 s that is inside the
60 s window; a 5 s log needs 150 s, a one-a-minute log 30 minutes."""
MIN_SAMPLES = 3
"""Fewer readings than this give no spread to judge a level by (two snapshots 14 s
apart cannot show a GPU underused)."""
INDEPENDENT_INTERVAL_S = 2.0
"""Readings at least this far apart are taken as independent draws of the duty cycle
(a training step lasts well under that, so each reading catches an unrelated phase), and
their standard error bounds the level. Closer readings are correlated (a periodic
pattern is deterministic, not noise): the window's span judges them instead."""


def in_use_level(
    sm: list[float | None],
    vram: list[float | None],
    in_use_bytes: float | None,
    with_error: bool = True,
) -> tuple[float, float, int] | None:
    """(mean, standard error, readings) of the SM readings taken while the GPU was in use
    (``in_use_bytes`` None: every reading): the stretches of an imported log between jobs,
    nothing loaded, are not the job's level. ``with_error``: see :func:`_level_of`."""
    values = [
        s
        for s, v in zip(sm, vram, strict=True)
        if s is not None and (in_use_bytes is None or v is None or v >= in_use_bytes)
    ]
    return _level_of(values, with_error)


def _level_of(values: list[float], with_error: bool) -> tuple[float, float, int] | None:
    """(mean, standard error, count) of ``values``; None for none. Without
    ``with_error`` the standard error of two or more readings is not worked out (0.0,
    as :func:`_plain_level` gives it): readings closer than INDEPENDENT_INTERVAL_S are
    judged by the window's span, never by it."""
    n = len(values)
    if n == 0:
        return None
    mean = math.fsum(values) / n
    if n < 2:
        return mean, math.inf, n
    if not with_error:
        return mean, 0.0, n
    var = math.fsum([(v - mean) ** 2 for v in values]) / (n - 1)
    return mean, math.sqrt(var / n), n


def _plain_level(win: Window, index: int) -> tuple[float, float, int] | None:
    """The window's mean SM (cached, shared with other rules) where no readings are left
    out and no standard error is needed: 1 s data with process rows."""
    sm = win.gpu_sm_mean(index)
    return None if sm is None else (sm, 0.0, win.ticks)


def level_window(win: Window, t: Thresholds) -> Window:
    """The window a GPU's level is judged over: a minute (``window_s``), stretched to hold
    LEVEL_SAMPLES readings of a coarse log. A checkpoint save or an evaluation pause of
    10-30 s is a phase of a busy job, not a job that leaves its GPU idle."""
    return win.longer(max(t.low_utilization.window_s, LEVEL_SAMPLES * win.interval_s))


def gpu_level(win: Window, t: Thresholds, index: int) -> tuple[float, float, int] | None:
    """(mean SM, standard error, readings) of GPU ``index`` over ``win`` (a level window),
    counting only the readings taken while it was in use; None without readings. The
    standard error only where readings are INDEPENDENT_INTERVAL_S apart (0.0 closer:
    such readings are judged by the window's span). Once per window: low-utilization
    and input-starved both ask it of every GPU each tick."""
    return win.derived(("gpu-level", id(t), index), lambda: _gpu_level(win, t, index))


def _gpu_level(win: Window, t: Thresholds, index: int) -> tuple[float, float, int] | None:
    gh = win.history.gpus.get(index)
    if gh is None:
        return None
    start_up = _start_up_readings(win, t, gh) if win.latest.imported else 0
    if start_up is None:
        return None  # a log whose GPU has run no kernel yet: start-up, or idle-holding-vram's
    in_use = in_use_bytes(win, t, index) if not win.latest.processes else None
    if win.interval_s < INDEPENDENT_INTERVAL_S and in_use is None and not start_up:
        return _plain_level(win, index)
    n = win.ticks - start_up
    lowest = gh.vram_used_bytes.min()  # the ring's, cached: its window's when lower
    if lowest is not None and in_use is not None and lowest < in_use:
        lowest = gh.vram_used_bytes.min(n)
    independent = win.interval_s >= INDEPENDENT_INTERVAL_S
    if in_use is None or lowest is None or lowest >= in_use:
        # Every reading in use (an unknown VRAM counts as in use): the SM series' own
        # known readings, cached on it, instead of a filtered copy.
        return _level_of(gh.sm_percent.known(n), independent)
    return in_use_level(gh.sm_percent.last(n), gh.vram_used_bytes.last(n), in_use, independent)


def in_use_bytes(win: Window, t: Thresholds, index: int) -> float:
    """Without process rows, the VRAM from which GPU ``index`` counts as in use: a
    model's worth (``in_use_vram_gib``), or a bare CUDA context's (``context_vram_gib``)
    once the GPU has held that much for longer than a start-up (``warm_up.max_age_s``).

    A context alone takes 300-600 MiB. Held for a minute or two while kernels run, it is
    a job's start-up before its model loads (compilation, a pre-processing pass); held
    for longer, the job is that small (a tiny model, an MCTS learner's network) and its
    level is the job's."""
    return win.derived(("in-use-bytes", id(t), index), lambda: _in_use_bytes(win, t, index))


def _in_use_bytes(win: Window, t: Thresholds, index: int) -> float:
    c = t.low_utilization
    model = c.in_use_vram_gib * GIB
    context = c.context_vram_gib * GIB
    gh = win.history.gpus.get(index)
    if gh is None or context >= model:
        return model
    series = gh.vram_used_bytes
    lowest = series.min()
    if lowest is None:
        return model  # no VRAM reading at all
    if lowest >= context and not series.any_unknown():
        # Held since the ring's first reading (the loop below would walk all of it).
        times = win.history.timestamps.last(len(series))
        since = times[0] if times else None
        if since is None or times[-1] is None:
            return model
        return context if times[-1] - since >= t.warm_up.max_age_s else model
    vram = series.last()
    times = win.history.timestamps.last(len(vram))
    since = None
    for i in range(len(vram) - 1, -1, -1):
        v = vram[i]
        if v is None:
            continue
        if v < context:
            break
        since = times[i]
    if since is None or not times or times[-1] is None:
        return model
    return context if times[-1] - since >= t.warm_up.max_age_s else model


def _start_up_readings(win: Window, t: Thresholds, gh: GpuHistory) -> int | None:
    """How many of the window's first readings came before the current job's run began
    (hints.phases: its first sustained activity) -- model loading, compilation and
    autotuning bursts, the first steps' set-up: a phase of the job, like a checkpoint
    save, not its level. The job began at the log's first reading (its run's start is
    followed from there, beyond the ring: :func:`_first_run_start`), or after the last
    reading with nothing loaded (VRAM under ``context_vram_gib``, less than a CUDA
    context: the previous job gone). None while the GPU has run nothing since the job
    began, or holds nothing now. Once per window (gpu_level and the duty cycle ask)."""
    return win.derived(("start-up", id(t), gh.index), lambda: _count_start_up(win, t, gh))


def _count_start_up(win: Window, t: Thresholds, gh: GpuHistory) -> int | None:
    n = win.ticks
    floor = t.low_utilization.context_vram_gib * GIB
    # Minima cached on the series: the ring's (in_use_bytes asks it too) rules out most
    # ticks, the window's the rest; the readings are copied only when one is low.
    lowest = gh.vram_used_bytes.min()
    if lowest is not None and lowest < floor:
        lowest = gh.vram_used_bytes.min(n)
    if lowest is not None and lowest < floor:
        sm = gh.sm_percent.last(n)
        vram = gh.vram_used_bytes.last(n)
        times = [ts or 0.0 for ts in win.history.timestamps.last(len(sm))]
        for i in range(len(vram) - 1, -1, -1):
            v = vram[i]
            if v is not None and v < floor:
                begin = i + 1
                if begin >= len(sm):
                    return None
                k = start_up_end(times[begin:], sm[begin:], win.interval_s)
                return None if k is None else begin + k
    start = _first_run_start(win, gh)
    if start is None:
        return None
    stamps = win.history.timestamps
    count = min(n, len(gh.sm_percent))
    if not stamps.any_unknown():
        first = stamps.min(count)
        if first is None or first >= start:
            return 0  # the whole window after the run's start: nothing to count
    return sum(1 for ts in stamps.last(count) if (ts or 0.0) < start)


def _first_run_start(win: Window, gh: GpuHistory) -> float | None:
    """When the log's first run on GPU ``gh`` began (a PhaseTracker fed every reading
    since the first, kept on the GPU's history); None: no activity yet."""
    state = gh.phases
    if not isinstance(state, _RunStart):
        state = gh.phases = _RunStart(PhaseTracker(gh.index, interval_or_one(win.interval_s)))
    history = win.history
    new = history.ticks - state.fed
    if new > 0:
        sm = gh.sm_percent.last(new)
        times = history.timestamps.last(len(sm))
        for ts, value in zip(times, sm, strict=True):
            if ts is not None:
                state.tracker.add(ts, value)
        state.fed = history.ticks
    tracker = state.tracker
    # Until the start-up settles (sustained activity, or START_UP_MAX_S of bursts) the
    # run is taken to start at the first activity: a loop that bursts without ever
    # sustaining is judged from there. A report takes back what was judged on that
    # guess where it proved wrong (outputs.report.build).
    return tracker.run_start if tracker.settled else tracker.first_active_t


@dataclass(slots=True)
class _RunStart:
    tracker: PhaseTracker
    fed: int = 0


def holder(win: Window, t: Thresholds, gpu: GpuSample) -> str | None:
    """Who holds ``gpu``, in words ("2 process(es) hold 30.0 GiB"), or None when nothing
    shows it in use (then it is idle, not underused)."""
    c = t.low_utilization
    procs = [p for p in win.processes() if p.gpu_index == gpu.index]
    if procs:
        held = float(sum(p.vram_bytes or 0 for p in procs))
        return f"{len(procs)} process(es) hold {gib_text(held)}"
    if not win.latest.processes and (gpu.vram_used_bytes or 0) >= in_use_bytes(win, t, gpu.index):
        small = (gpu.vram_used_bytes or 0) < c.in_use_vram_gib * GIB
        return f"{gib_text(gpu.vram_used_bytes)} of VRAM in use" + (
            " (no per-process data; a CUDA context's worth, held past any start-up)"
            if small
            else " (no per-process data)"
        )
    if no_process_data(win) and gpu.vram_used_bytes is None:
        return "the logged run holds it (VRAM use not in this log)"
    return None


def no_process_data(win: Window) -> bool:
    """Imported logs (nvidia-smi, W&B) have no per-process rows at all."""
    return not win.latest.processes and win.latest.imported


def no_host_data(win: Window) -> bool:
    """Imported logs without host CPU readings (an nvidia-smi table with its process
    box): the host-side causes (workers, cores, storage) cannot be told."""
    return win.latest.imported and win.allowed_cores_busy_percent is None


# throttled: clocks held down for power or heat


@dataclass(frozen=True, slots=True)
class Overstated:
    """Why a GPU's utilization overstates its work."""

    power_share: float | None
    """Mean power over the enforced limit (None: unknown)."""
    sm_active: float | None
    """GPM/DCGM SM activity, when the GPU gives it: then it, not power, decided."""


def utilization_overstated(win: Window, t: Thresholds, index: int) -> Overstated | None:
    """Whether GPU ``index`` reads busy while doing a fraction of the work.

    With GPM's SM activity the share of SMs holding warps decides; without it, power
    at a fraction of the limit. utilization-overstated reports it; compute-bound asks
    so as never to call it healthy.
    """
    c = t.utilization_overstated
    sm = win.gpu_sm_mean(index)
    if sm is None or sm < c.sm_above_percent:
        return None
    share = power_share(win, index)
    active = sm_active(win, index)
    if active is not None:
        return Overstated(share, active) if active < c.sm_active_below_percent else None
    if share is None or share >= c.power_share_below:
        return None
    return Overstated(share, None)


def clock_share(win: Window, index: int) -> float | None:
    """Median of SM clock / max clock over the window's busy ticks (None: clocks unknown)."""
    shares = []
    for snap in list(win.history.snapshots)[-win.ticks :]:
        g = snap.gpu(index)
        if g is None or not g.sm_clock_mhz or not g.max_sm_clock_mhz:
            continue
        if g.throttle_reasons and "gpu_idle" in g.throttle_reasons:
            continue
        shares.append(g.sm_clock_mhz / g.max_sm_clock_mhz)
    return median_of(shares) if shares else None


def power_capped_at_full_clock(win: Window, t: Thresholds, gpu: GpuSample) -> bool:
    """Whether a busy GPU sits at its (not lowered) power limit with clocks at their maximum.

    compute-bound asks this to say "at its N W power limit" in its healthy note.
    """
    c = t.throttled
    fraction, seen = win.throttle_fraction(gpu.index, frozenset(HOLDING_CLOCK_REASONS))
    if fraction < c.min_fraction or {HOLDING_CLOCK_REASONS[r] for r in seen} != {"power"}:
        return False
    share = clock_share(win, gpu.index)
    return gpu.power_limit_lowered is not True and share is not None and share >= c.full_clock_share


# pcie-thrash: a link so busy that copies starve the GPU


def link_thrashing(win: Window, t: Thresholds, index: int) -> tuple[bool, list[Evidence]]:
    """Whether GPU ``index`` moves so much over PCIe that copies, not input, starve it.

    input-starved asks this too (for every process): a GPU that thrashes is left to
    this rule. Once per window and GPU; callers do not change the evidence list, which
    is empty where the GPU does not thrash.
    """
    return win.derived(
        ("link-thrashing", id(t), index), lambda: _link_thrashing_uncached(win, t, index)
    )


def _link_thrashing_uncached(win: Window, t: Thresholds, index: int) -> tuple[bool, list[Evidence]]:
    c = t.pcie_thrash
    # Every test below that returns (False, []) is a pure reading of the window, and the
    # verdict needs them all: the SM mean (kept per series until the next append) goes
    # first, before the link's readings are read and counted over the window.
    sm = win.gpu_sm_mean(index)
    if sm is None or not sm < c.sm_below_percent:
        return False, []
    gpu = win.gpu(index)
    traffic = win.gpu_pcie_mean(index)
    if gpu is None or traffic is None:
        return False, []
    link = gpu.pcie_link_bytes_per_s
    limit = c.link_share_above * link if link is not None else c.floor_gb_per_s * 1e9
    busy = win.gpu_pcie_busy_fraction(index, limit)
    if busy is None or not busy >= c.min_busy_fraction:
        # Not thrashing: no caller reads the evidence then (pcie-thrash skips the GPU,
        # input-starved reads the verdict alone), so none is built.
        return False, []
    if link is not None:
        what = f">= {c.link_share_above:g} x link ({link / 1e9:.1f} GB/s per direction)"
    else:
        what = f">= {c.floor_gb_per_s:g} GB/s (link capacity unknown)"
    return True, [
        Evidence(
            f"readings with rx+tx {what}",
            busy * 100,
            f">= {c.min_busy_fraction * 100:g} % of readings",
            "%",
            Scope.DEVICE,
        ),
        Evidence("PCIe rx+tx (mean)", traffic, "for context", "B/s", Scope.DEVICE, met=None),
        Evidence("device SM % (mean)", sm, f"< {c.sm_below_percent:g}", "%", Scope.DEVICE),
    ]


# warm-up: a job's first minutes, before its first steady step


def loader_workers(proc: GpuProcess) -> int:
    """How many of ``proc``'s children can be DataLoader workers (not compile workers,
    not a compiler or linker they run)."""
    return sum(1 for w in proc.workers if not (is_compile_worker(w) or w.is_toolchain))


def busy_compile_workers(win: Window, proc: GpuProcess) -> float:
    """Mean number of inductor compile workers above ``worker_busy_percent`` of a core."""
    key, bar = proc.key, win.worker_busy_percent
    counts = [
        sum(1 for w in p.workers if (w.cpu_percent or 0.0) > bar and is_compile_worker(w))
        for snap in list(win.history.snapshots)[-win.ticks :]
        for p in snap.processes
        if p.key == key
    ]
    return sum(counts) / len(counts) if counts else 0.0


def compiling(win: Window, t: Thresholds, proc: GpuProcess) -> float | None:
    """Mean SM % of the window when ``proc`` waits on busy torch.compile workers, else None:
    inductor compiles (and autotunes, short bursts on the GPU) -- warm-up, whatever the
    process's age (a recompile later in the run too), not a slow DataLoader."""
    if not (compiling_by_toolchain(win, proc) or compiling_by_stack(win, proc)):
        if not any(is_compile_worker(w) for w in proc.workers):
            return None  # the cheap test first
        if busy_compile_workers(win, proc) < 0.5:
            return None
    sm, _, _ = sm_evidence(win, proc, t)
    if sm is None or sm >= t.input_starved.sm_mean_below_percent:
        return None
    return sm


COMPILE_FRESH_S = 120.0
"""A stack reading says a process is compiling for this long after it was taken: a
compile ends within minutes, and starvation after it must not stay hidden (the live
monitor samples a warned process again after ``sampling.stacks.AUTO_EVERY_S``)."""


def compiling_by_toolchain(win: Window, proc: GpuProcess) -> bool:
    """Whether a compiler or linker ran among ``proc``'s descendants in the last
    COMPILE_FRESH_S (``WorkerProcess.is_toolchain``): triton compiles each kernel through
    ``ptxas`` and inductor its C++ through ``g++``, from the main process or from its
    compile workers -- also the forked pool of torch <= 2.3, which /proc otherwise cannot
    tell from DataLoader workers. A compile of minutes runs one nearly all the time; a
    DataLoader never does. Read from /proc, with or without py-spy."""
    ph = win.process_history(proc)
    seen = None if ph is None else ph.toolchain_seen
    return seen is not None and win.now - seen <= COMPILE_FRESH_S


def compiling_by_stack(win: Window, proc: GpuProcess) -> bool:
    """Whether ``proc``'s own stack (py-spy, taken in the last COMPILE_FRESH_S) shows
    torch.compile at work: its main thread mostly in dynamo/inductor/triton, or a busy
    child whose stack runs through inductor -- torch <= 2.3 forks its compile workers
    from the main process (same command line, so /proc cannot tell them from DataLoader
    workers; ``stacks.classify.worker_kind``)."""
    reading = win.stack_reading(proc, COMPILE_FRESH_S)
    if reading is None:
        return False
    if reading.share("compiling") >= 0.5:
        return True
    return any(w.kind == "compile" and w.busy_samples > 0 for w in reading.workers)


def reaches_into_warm_up(win: Window, slow: Window, t: Thresholds, proc: GpuProcess) -> bool:
    """Whether the slow window ``slow`` (ending with ``win``) reaches back into ``proc``'s
    first ``warm_up.max_age_s`` or into a tick where one of its compile workers was busy."""
    if proc.create_time is not None and (
        win.now - slow.covered_s < proc.create_time + t.warm_up.max_age_s
    ):
        return True
    ph = win.process_history(proc)
    seen = None if ph is None else ph.toolchain_seen
    if seen is not None and seen >= win.now - slow.covered_s:
        return True
    return any(is_compile_worker(w) for w in proc.workers) and busy_compile_workers(slow, proc) > 0


PRESENT_SHARE = 0.9
"""A process listed in at least this share of a window's readings was there throughout
(a reading may lack a row: a snapshot cut short in a log)."""


def present_throughout(win: Window, proc: GpuProcess) -> bool:
    """Whether ``proc`` was on its GPU through ``win``'s readings -- listed at the first
    of them and at nearly all -- so that the device's readings over the window are of a
    time it held the GPU, not of the idle GPU or another job before it came. Presence is
    read from its busy-worker series, known at every tick it is listed (0 without
    workers), unknown at the others."""
    ph = win.process_history(proc)
    if ph is None:
        return False
    seen = ph.busy_workers.last(win.ticks)
    if not seen or seen[0] is None:
        return False
    listed = sum(1 for v in seen if v is not None)
    return listed >= PRESENT_SHARE * len(seen)


def warming_up(win: Window, t: Thresholds, proc: GpuProcess) -> tuple[float, float] | None:
    """(age s, mean SM % since start) when ``proc`` is warming up, else None; while its
    compile workers are busy (:func:`compiling`), the window's mean SM instead.

    input-starved and low-utilization defer to it: a job starting up looks starved.
    """
    c = t.warm_up
    if is_server(proc) or (proc.vram_bytes or 0) < t.general.min_vram_gib * GIB:
        return None
    compile_sm = compiling(win, t, proc)
    if compile_sm is not None and proc.create_time is not None:
        return win.now - proc.create_time, compile_sm
    ph = win.process_history(proc)
    if ph is None:
        return None
    if proc.create_time is None:
        return None  # when a log begins is not when its process started
    age = win.now - proc.create_time
    if age > c.max_age_s:
        return None
    values = win.process_sm_values(proc, ticks=len(win.history))
    if values is None:
        gh = win.history.gpus.get(proc.gpu_index)
        values = gh.sm_percent.known(len(values or []) or None) if gh else []
    if not values or len(values) * win.interval_s < t.general.window_s:
        return None  # less than a window since first seen says nothing about "since start"
    mean = sum(values) / len(values)
    if mean >= c.sm_since_start_below_percent:
        return None
    # Before its first step a job's GPU runs nothing most of the time; an RL learner's
    # small policy batches run kernels in nearly every tick (simulation, not start-up).
    below = t.idle_holding_vram.sm_below_percent
    active = sum(1 for v in values if v >= below) / len(values)
    if active >= c.active_ticks_below_share:
        return None
    cpu = win.process_cpu_mean(proc)
    working = (
        (cpu is not None and cpu >= t.idle_holding_vram.host_busy_cpu_percent)
        or (win.process_busy_workers_mean(proc) or 0.0) >= 0.5
        or win.process_d_state_fraction(proc) > 0.0
    )
    return (age, mean) if working else None


# vram-preallocated: a framework's pool, not a job about to run out of memory

DOCUMENTED_SHARES: tuple[tuple[str, float], ...] = (
    ("vLLM's default gpu_memory_utilization 0.9", 0.90),
    ("JAX's default XLA_PYTHON_CLIENT_MEM_FRACTION 0.75", 0.75),
)
"""Default pool sizes frameworks document (docs.vllm.ai engine args; jax.readthedocs.io
"GPU memory allocation"). TensorFlow's "nearly all" has no fixed share: it is matched by
what it leaves free (:func:`tf_reserve_left`)."""


TF_RESERVE_MIN_BYTES = 200 * MIB
"""The least TensorFlow leaves free when its BFC allocator maps the card: it takes the
free memory it finds minus ``MinSystemMemory`` (tensorflow/core/common_runtime/gpu/
gpu_device.cc), 225 MiB when under 2 GiB is free -- less a little the driver and other
contexts take afterwards."""

TF_RESERVE_FIXED_BYTES = 1800 * MIB
"""The largest fixed reserve of that function: by compute capability 500 MiB (<= 6.x),
1050 MiB (7.x), 1536 MiB (8.x), 1800 MiB (9.x and later)."""

TF_RESERVE_SHARE = 0.05
"""Older releases reserve max(300 MiB, 5 % of the free memory) instead."""

TF_RESERVE_SLACK_BYTES = 256 * MIB
"""Other processes' contexts and the driver's own reservation move it by this much."""


def tf_reserve_left(win: Window, gpu: GpuSample) -> bool:
    """Whether the card's free VRAM is what TensorFlow leaves when it maps a card: a card
    filled to within that reserve by a pool taken at start, not by a job's growth.

    Live, only where a process on the card has TensorFlow's libraries mapped
    (GpuProcess.frameworks): a PyTorch job that fills the card in one step leaves the same
    free memory. An imported log cannot tell; there the free memory alone decides."""
    total, used = gpu.vram_total_bytes, gpu.vram_used_bytes
    if not total or used is None:
        return False
    if not win.latest.imported and not any(
        "tensorflow" in p.frameworks for p in win.latest.processes if p.gpu_index == gpu.index
    ):
        return False
    free = total - used
    top = max(TF_RESERVE_FIXED_BYTES, TF_RESERVE_SHARE * total) + TF_RESERVE_SLACK_BYTES
    return TF_RESERVE_MIN_BYTES <= free <= top


SHARE_MATCH = 0.03
"""A plateau within this share of the card of a documented default: the context, the
CUDA graphs and the rounding of a pool to blocks move it by a few per cent."""

OVER_POOL_BYTES = 1.5 * GIB
"""How far above its documented share an unnamed pool may sit: a framework's fraction is
of the card's total, and what the process holds beyond it is its CUDA context and
library workspaces (cuBLAS, cuDNN), a few hundred MB to ~1.5 GB -- not a few per cent of
an 80 GB card. A job 3 % above JAX's 75 % on an 80 GB card (2.4 GB more) is no pool."""

_FRACTION_FLAGS = (
    r"--(?:gpu[-_]memory[-_]utilization|mem[-_]fraction[-_]static)[=\s]+(0?\.\d+|1(?:\.0*)?)\b"
)


@dataclass(frozen=True, slots=True)
class Preallocation:
    """A process's VRAM read as a framework's pool."""

    share: float
    """Its VRAM as a share of the card."""
    seen: bool
    """True: the one-step reservation soon after the process's start was watched; False: a
    flat plateau since first seen (the monitor or the log began after it) at a share a
    framework documents, or that its command line asks for."""
    framework: str | None
    """The framework the command line names ("vLLM" ...), None when it cannot be told."""
    steady: bool
    """Held flat for ``vram_preallocated.steady_for_s`` (the note waits for it)."""
    reserve: bool = False
    """In a log, the card's free VRAM is TensorFlow's reserve (:func:`tf_reserve_left`)."""


_JAX_RE = r"(?i)(?<![a-z0-9])(?:jax|flax|t5x|paxml|praxis|maxtext|levanter|big_vision)(?![a-z0-9])"
"""A command line that names JAX or a JAX training stack (a script, a module, a conda env)."""

JAX_DEFAULT_SHARE = 0.75
"""JAX pre-allocates 75 % of the card's memory at its first operation
(jax.readthedocs.io, "GPU memory allocation"; XLA_PYTHON_CLIENT_MEM_FRACTION)."""


def requested_share(command: str | None, framework: str | None) -> float | None:
    """The pool share the command line asks for, or the framework's documented default
    (vLLM 0.9; JAX 0.75 where the command names it)."""
    m = pattern(_FRACTION_FLAGS).search(command or "")
    if m:
        return float(m.group(1))
    if framework == "vLLM":
        return 0.90
    return JAX_DEFAULT_SHARE if pattern(_JAX_RE).search(command or "") else None


def preallocation(win: Window, t: Thresholds, proc: GpuProcess) -> Preallocation | None:
    """Once per window and process; see :func:`_preallocation_uncached`."""
    key = ("preallocation", id(t), proc.pid, proc.gpu_index)
    return win.once(key, _preallocation_uncached, win, t, proc)


def _preallocation_uncached(win: Window, t: Thresholds, proc: GpuProcess) -> Preallocation | None:
    """Whether ``proc``'s VRAM is a framework's pool (vram-near-limit, idle-holding-vram and
    input-starved ask too): a reservation taken in one step soon after start and flat since,
    or -- the start not watched -- a plateau that never moved at a documented share."""
    c = t.vram_preallocated
    gpu = win.gpu(proc.gpu_index)
    if gpu is None or not gpu.vram_total_bytes:
        return None
    total = gpu.vram_total_bytes
    if (proc.vram_bytes or 0) < c.min_share * total:
        return None  # the cheap test first: this runs for every process every tick
    steady = win.vram_steady(proc, VRAM_STEADY_SHARE * total)
    ph = win.process_history(proc)
    if steady is None or ph is None:
        return None
    level, since, rise = steady
    share = level / total
    framework = server_name(proc)
    flat = win.now - since >= c.steady_for_s
    started = proc.create_time
    reserve = tf_reserve_left(win, gpu)
    if (
        started is not None
        and rise >= c.min_jump_share * total
        and since - started <= c.reached_within_s
    ):
        return Preallocation(share, True, framework, flat, reserve)
    if since > ph.first_seen + win.interval_s:
        return None  # it grew while watched: a caching allocator, not a pool
    if reserve:
        # Never seen to move, the card left with TensorFlow's reserve: its pool even
        # from one reading (a daily snapshot).
        return Preallocation(share, False, framework, flat, True)
    asked = requested_share(proc.command, framework)
    if asked is not None and since <= win.now - win.interval_s:
        # The command names the framework whose share this is. In a log whose readings are
        # so far apart that fewer than four span steady_for_s (two snapshots 14 s apart),
        # two readings at that share are all the log can show of flatness.
        at_share = abs(share - asked) <= SHARE_MATCH and win.interval_s * 3 >= c.steady_for_s
        fits = at_share or (flat and share <= asked + SHARE_MATCH)
        return Preallocation(share, False, framework, flat or at_share) if fits else None
    if not flat:
        return None
    if any(
        s - SHARE_MATCH <= share and level <= s * total + OVER_POOL_BYTES
        for _, s in DOCUMENTED_SHARES
    ):
        return Preallocation(share, False, None, flat)
    return None


def device_pool(win: Window, t: Thresholds, index: int) -> float | None:
    """In a log without process rows, GPU ``index``'s VRAM read as a framework's pool:
    its share of the card (None: not a pool). The GPU-level twin of
    :func:`preallocation`, asked where no process can be named.

    A pool is taken in one step at start and never moves: vLLM's KV cache
    (--gpu-memory-utilization 0.9), SGLang's static fraction, JAX's 75 %, TensorFlow's
    whole card less its reserve. So the VRAM has stayed within VRAM_STEADY_SHARE of the
    card through every reading the history holds -- from the log's first one where the
    history reaches back to it (a level the log never saw grow), else for
    ``vram_preallocated.steady_for_s`` and at least three readings -- at a documented
    share, or with TensorFlow's reserve left free. A caching allocator's training job
    grows with its first steps and moves with batch shapes; one that plateaus at a
    documented share for the whole log reads as a pool, said as a likelihood, never as
    a server by name.
    """
    return win.derived(("device-pool", id(t), index), lambda: _device_pool(win, t, index))


def _device_pool(win: Window, t: Thresholds, index: int) -> float | None:
    c = t.vram_preallocated
    gpu = win.gpu(index)
    gh = win.history.gpus.get(index)
    if not no_process_data(win) or gpu is None or gh is None or not gpu.vram_total_bytes:
        return None
    total = gpu.vram_total_bytes
    used = gpu.vram_used_bytes
    if used is None or used < c.min_share * total:
        return None
    values = gh.vram_used_bytes.known()
    from_start = win.history.ticks <= len(gh.vram_used_bytes.last())
    if not from_start and (len(values) < 3 or len(values) * win.interval_s < c.steady_for_s):
        return None  # mid-log: flat long enough to be a plateau, not a moment
    if max(values) - min(values) > VRAM_STEADY_SHARE * total:
        return None
    share = used / total
    documented = any(
        s - SHARE_MATCH <= share and used <= s * total + OVER_POOL_BYTES
        for _, s in DOCUMENTED_SHARES
    )
    return share if documented or tf_reserve_left(win, gpu) else None


# cpu-offload: the optimizer on the host, gradients and parameters over PCIe

_OFFLOAD_RE = r"(?i)deepspeed|offload|zero[-_]?(?:2|3|infinity)"


@dataclass(frozen=True, slots=True)
class Offload:
    """What shows a process offloading its optimizer to the host (cpu-offload)."""

    main_cpu: float
    rx: float
    tx: float
    gaps: Gaps
    window_s: float
    named: bool
    """Its command line names DeepSpeed or offload."""


def offloading(win: Window, t: Thresholds, proc: GpuProcess) -> Offload | None:
    """Once per window and process; see :func:`_offloading_uncached`."""
    key = ("offloading", id(t), proc.pid, proc.gpu_index)
    return win.once(key, _offloading_uncached, win, t, proc)


def _offloading_uncached(win: Window, t: Thresholds, proc: GpuProcess) -> Offload | None:
    """A main process on several cores, PCIe busy both ways in comparable amounts and the
    GPU idling in gaps, over the slow window (a step or more; a 20 ms PCIe reading a
    tick is too spiky for a few seconds): cpu-offload and input-starved both ask."""
    c = t.cpu_offload
    if (proc.vram_bytes or 0) < t.general.min_vram_gib * GIB:
        return None
    slow = win.longer(t.general.slow_window_s)
    # Per GPU first (8 at most, where processes may be 64): most GPUs send ~nothing back.
    index = proc.gpu_index
    means = slow.derived(("pcie_means", index), lambda: slow.gpu_pcie_means(index))
    if means is None:
        return None
    rx, tx = means
    floor = c.min_direction_gb_per_s * 1e9
    if min(rx, tx) < floor or min(rx, tx) < c.min_direction_ratio * max(rx, tx):
        return None
    cpu = slow.process_cpu_mean(proc)
    if cpu is None or cpu < c.main_cpu_above_percent:
        return None
    s = t.input_starved
    gaps = slow.gpu_gaps(proc.gpu_index, s.gap_sm_below_percent, s.min_gap_s)
    if gaps is None or gaps.fraction < s.min_gap_fraction:
        return None
    named = bool(pattern(_OFFLOAD_RE).search(proc.command or ""))
    return Offload(cpu, rx, tx, gaps, slow.covered_s, named)
