"""input-starved: the GPU idles in repeated gaps while the process holds VRAM.

The condition is one thing (a low mean SM with a sawtooth of idle gaps); *why*
the batches arrive late is read from the host side of the input pipeline and
given as a subtype, tried in this order: the main process loads batches itself
(``num-workers-0``), the allowed cores are saturated (``cpu-bound``), the
loader waits on storage (``storage-bound``), or else there are too few workers
(``more-workers``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from gputop_hints.hints.attribution import host_works_while_idle
from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.kinds import is_server
from gputop_hints.hints.rules.shared import (
    at_least,
    gaps_evidence,
    gaps_seen_by,
    others_on_gpu,
    own_burst_ruled_out,
    percent_text,
    sm_evidence,
)
from gputop_hints.hints.rules.signals import (
    MIN_SAMPLES,
    DutyCycle,
    device_pool,
    gpu_level,
    holder,
    level_window,
    link_thrashing,
    loader_workers,
    offloading,
    present_throughout,
    reaches_into_warm_up,
    stalled_duty_cycle,
    warming_up,
)
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import GIB, Gaps, Window
from gputop_hints.model import METRIC_HOST_CPU, METRIC_PROCESSES, METRIC_SM, GpuProcess, JobInfo

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "input-starved"


@dataclass(frozen=True)
class InputStarved:
    """input-starved's thresholds: the ``input_starved:`` section of defaults.yaml."""

    sm_mean_below_percent: float = field(
        metadata=threshold(0, 100, "%", "mean SM below this can be starvation")
    )
    gap_sm_below_percent: float = field(
        metadata=threshold(0, 100, "%", "an SM sample below this is an idle gap")
    )
    min_gap_s: float = field(
        metadata=threshold(0, 60, "s", "idle stretches shorter than this are not gaps")
    )
    min_gap_fraction: float = field(
        metadata=threshold(0, 1, "", "share of the window spent in idle gaps")
    )
    min_gaps: int = field(
        metadata=threshold(
            1, 1000, "", "at least this many separate gaps (a sawtooth, not one pause)"
        )
    )
    busy_sm_above_percent: float = field(
        metadata=threshold(0, 100, "%", "a burst must reach this SM % (else it is idle)")
    )
    iowait_above_percent: float = field(
        metadata=threshold(0, 100, "%", "iowait above this points at storage")
    )
    d_state_fraction: float = field(
        metadata=threshold(0, 1, "", "share of workers in D state that points at storage")
    )
    max_suggested_workers: int = field(
        metadata=threshold(1, 256, "", "cap on the num_workers the advice suggests")
    )
    critical_sm_below_percent: float = field(
        metadata=threshold(
            0, 100, "%", "critical when mean SM is below this (jobstats flags <= 15 %)"
        )
    )
    storage_sm_below_percent: float = field(
        metadata=threshold(
            0, 100, "%", "with the loader blocked on reads, a GPU below this waits on storage"
        )
    )
    storage_d_state_fraction: float = field(
        metadata=threshold(
            0, 1, "", "... blocked: this share of the loader's (process, tick) pairs in D state"
        )
    )
    shared_share_below: float = field(
        metadata=threshold(
            0, 1, "", "others filling the GPU: own share below this x an even split is starved"
        )
    )
    hysteresis: Hysteresis


@dataclass(frozen=True, slots=True)
class _Loader:
    """The host side of one process's input pipeline, over the window."""

    main_cpu: float | None
    busy_workers: float
    workers: int
    workers_cpu: float | None
    cores_busy: float | None
    allowed_cores: int
    iowait: float | None
    d_state_fraction: float
    job: JobInfo | None
    suggested_workers: int
    """num_workers the advice suggests: the allowed cores but one, within the configured cap."""


@dataclass(frozen=True, slots=True)
class _Diagnosis:
    """Why the batches arrive late, in the words the finding uses."""

    subtype: str
    label: str
    summary: str
    advice: tuple[str, ...]
    evidence: tuple[Evidence, ...] = ()
    """Evidence only this subtype shows, after the common items."""


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Low mean SM with idle gaps while the process holds VRAM: the GPU waits for input.

    Looked for over the fast window first, then over ``general.slow_window_s``: a
    load-then-compute cycle of 10-30 s (network or NFS fetches) has one gap at most in
    a few seconds, and only a window holding several cycles shows the sawtooth.
    """
    out: list[Finding] = []
    min_vram = t.general.min_vram_gib * GIB
    # The slow window (once a tick, not per process); the fast window is judged first.
    slow = win.longer(t.general.slow_window_s)
    for proc in win.processes():
        if (proc.vram_bytes or 0) < min_vram or is_server(proc):
            continue  # a server idles between requests
        # The condition first: it rules out nearly every process, the exclusions below
        # (each as pure as it) rarely do, so asking them only of a starved one costs less.
        # Over the fast window, then over the slow one unless it reaches into start-up
        # or compiling (a pure reading: asked only where the fast window shows nothing).
        where = win
        seen = _starved(win, t, proc)
        if seen is None:
            if slow is win or reaches_into_warm_up(win, slow, t, proc):
                continue
            where = slow
            seen = _starved(slow, t, proc)
            if seen is None:
                continue
        if warming_up(win, t, proc) is not None:
            continue  # a job starting up is not starved
        if offloading(win, t, proc) is not None or _threaded_host_step(win, t, proc):
            continue  # the host steps the optimizer by design: cpu-offload says so
        out.append(_finding(where, t, proc, seen))
    if win.allowed_cores_busy_percent is None:
        starved = {f.subject.gpu_index for f in out}
        out.extend(f for f in _gpu_only(win, t) if f.subject.gpu_index not in starved)
    return out


def _gpu_only(win: Window, t: Thresholds) -> list[Finding]:
    """Without host data, a GPU in use whose trace is a bimodal duty cycle -- idle gaps
    between full bursts -- is starved, its cause unknown: NVML's utilization is the share
    of its ~1 s sample period in which a kernel ran, so a GPU that waits for each batch
    and then runs it at full speed reads near 0 or near 100 in turn. Judged at GPU level
    over low-utilization's level window, whatever the mean."""
    out: list[Finding] = []
    win = level_window(win, t)
    for gpu in win.latest.gpus:
        level = gpu_level(win, t, gpu.index)
        if level is None or level[2] < MIN_SAMPLES:
            continue
        if device_pool(win, t, gpu.index) is not None:
            # A pool flat from the first reading: a serving engine between requests bursts
            # the same way (is_server's GPU-level twin); nothing tells its traffic from
            # late batches, so no input-stall claim (idle-holding-vram names the pool).
            continue
        duty = stalled_duty_cycle(win, t, gpu.index)
        why = holder(win, t, gpu) if duty is not None else None
        if duty is not None and why is not None and _one_holder_throughout(win, gpu.index):
            out.append(_duty_cycle_finding(gpu.index, level[0], why, duty, t))
    return out


def _one_holder_throughout(win: Window, index: int) -> bool:
    """Whether GPU ``index``'s readings over ``win`` can be one job's loop: where the log
    lists processes, one on it now was on it through the window. A duty cycle is a
    property of one loop; a log whose readings are far apart (a daily cron snapshot of a
    shared server) shows jobs coming and going -- one at 100 %, the next holding the GPU
    idle -- and those gaps are not batches arriving late. A log without process rows
    cannot tell: True."""
    if not win.latest.processes:
        return True
    return any(present_throughout(win, p) for p in win.latest.processes if p.gpu_index == index)


def _duty_cycle_finding(index: int, sm: float, why: str, duty: DutyCycle, t: Thresholds) -> Finding:
    """GPU ``index`` alternates between idle gaps and full bursts, and the data has no
    host side: the input-stall signature, its cause unknown."""
    c = t.input_starved
    return Finding(
        rule=ID,
        subject=Subject(index),
        severity=Severity.WARNING,
        label="starved? (no host data)",
        summary=(
            f"GPU {index} alternates between idle gaps ({duty.gaps} in the window, "
            f"{duty.idle_share * 100:.0f} % of the time) and full bursts while {why}: the "
            "input-stall signature -- batches arrive more slowly than the GPU consumes them, "
            "so the bursts are not the GPU setting the pace. The cause is unknown without host "
            "data (process CPU, DataLoader workers, iowait), and so is the kind of job: an "
            "inference server bursts the same way between requests."
        ),
        advice=(
            "Watch the job live with gputop-hints on its node (or record it with "
            "'gputop-hints record -o run.jsonl.gz'): the host side tells num_workers, a "
            "CPU-bound pipeline and slow storage apart.",
            "Meanwhile check the DataLoader: num_workers (0 loads in the training process), "
            "pin_memory and prefetch_factor, and how fast the dataset is read.",
            "If the GPU serves requests (vLLM, Triton, TGI), the gaps are its traffic, not a "
            "loader: nothing to fix on the GPU's side.",
        ),
        evidence=(
            Evidence("SM % (mean)", sm, "for context", met=None),
            Evidence(
                "time in idle gaps",
                duty.idle_share * 100,
                f">= {c.min_gap_fraction * 100:g} % (SM < {c.gap_sm_below_percent:g} % "
                f"for >= {c.min_gap_s:g} s)",
            ),
            Evidence("idle gaps", duty.gaps, f">= {c.min_gaps}", ""),
            Evidence(
                "readings in full bursts",
                duty.busy_share * 100,
                f">= {c.min_gap_fraction * 100:g} % "
                f"at >= {t.compute_bound.sm_above_percent:g} % SM",
            ),
        ),
        subtype="cause-unknown",
    )


def _threaded_host_step(win: Window, t: Thresholds, proc: GpuProcess) -> bool:
    """The main process on several cores with no busy loader worker: a threaded host
    computation (an offloaded optimizer step before cpu-offload has seen a whole step),
    not a Python loop loading batches -- the GIL holds that to about one core."""
    cpu = win.process_cpu_mean(proc)
    if cpu is None or cpu < t.cpu_offload.main_cpu_above_percent:
        return False
    return (win.process_busy_workers_mean(proc) or 0.0) < 0.5


@dataclass(frozen=True, slots=True)
class _Starved:
    """The condition as one window shows it, and by which path it was met."""

    sm: float
    scope: Scope
    notes: list[Evidence]
    gaps: Gaps
    gaps_scope: Scope
    path: Literal["sawtooth", "slow-reads", "blocked", "filled"]
    """``sawtooth``: mean SM under 50 % with idle gaps; ``slow-reads``: the same gaps
    over the slow window with reads showing, the mean up to 80 %; ``blocked``: the
    loader blocked on reads, no gaps asked for; ``filled``: other tenants' kernels fill
    the device's gaps, the process's own share and host side decide (:func:`_filled`)."""
    shared: _Shared | None = None
    """For ``filled``: how the device's time was shared."""


@dataclass(frozen=True, slots=True)
class _Shared:
    """How a GPU filled by other tenants was shared over the window (``filled`` path)."""

    device: float
    """The device's SM % mean: time with any kernel running."""
    others: float
    """The other tenants' own SM % means, summed."""
    tenants: int
    """Processes that ran kernels in the window, this one included."""
    even_split: float
    """``device / tenants``: what each would get with work always queued."""


def _starved(win: Window, t: Thresholds, proc: GpuProcess) -> _Starved | None:
    """The condition on one window, or None."""
    seen = _sawtooth(win, t, proc)
    if seen is None and win.window_s <= t.general.window_s:
        return _filled(win, t, proc)
    return seen


def _filled(win: Window, t: Thresholds, proc: GpuProcess) -> _Starved | None:
    """Starved on its own evidence where other tenants' kernels fill the device's gaps.

    Without MPS, contexts time-slice: the device's busy share is the sum of the
    tenants' own shares (NVML's per-process samples, ``nvmlDeviceGetProcessUtilization``:
    the share of the period in which the process's kernels ran), and a context with
    nothing queued leaves its slice to the others. So when the others fill the device,
    its sub-second samples cannot show one tenant's stalls; but a tenant with work
    always queued gets about an even split of the busy time. One well under it, with
    kernels in every tick (a steady loop, not a notebook cell), no DataLoader workers
    and its main process pegged, has nothing queued much of the time because its main
    thread is busy between steps: loading batches, or launching kernels too small to
    fill a slice. Where small-batch's picture holds (little VRAM) that rule speaks and
    names loading as the other possibility; here the process holds enough memory for
    a batch that is not small, so num_workers=0 is named and launch-bound steps are
    named as the other possibility.
    """
    g = t.general
    c = t.input_starved
    # Every condition below must hold and each is a pure reading of the window, so
    # their order changes no verdict: the ones read off the newest snapshot go first,
    # before any mean over the window.
    gpu = win.gpu(proc.gpu_index)
    vram = proc.vram_bytes or 0
    if gpu is None or not gpu.vram_total_bytes:
        return None
    if vram / gpu.vram_total_bytes < t.small_batch.vram_share_below:
        return None  # small-batch's picture: it names both possibilities
    if loader_workers(proc) != 0:
        return None
    cpu = win.process_cpu_mean(proc)
    if cpu is None or cpu < g.main_pegged_percent:
        return None
    sm, scope, notes = sm_evidence(win, proc, t)
    if sm is None or scope is not Scope.PROCESS or sm >= c.sm_mean_below_percent:
        return None
    own = win.process_sm_values(proc)
    if not own or min(own) < c.gap_sm_below_percent:
        return None  # an idle tick of its own: a pause or a cell, its own trace decides
    device = win.gpu_sm_mean(proc.gpu_index)
    if device is None or device < t.compute_bound.sm_above_percent:
        return None  # the device has idle time: its gaps are the evidence, not filled
    running = [m for o in others_on_gpu(win, proc, t) if (m := win.process_sm_mean(o)) and m >= 1.0]
    if not running:
        return None  # alone on the GPU: unchanged
    others = math.fsum(running)
    if abs(device - (sm + others)) > c.gap_sm_below_percent:
        return None  # the shares do not add up (MPS, or a tenant without samples)
    tenants = 1 + len(running)
    even = device / tenants
    if sm >= c.shared_share_below * even:
        return None  # about its even split: time-slicing, not its host, sets its share
    thrashing, _ = link_thrashing(win, t, proc.gpu_index)
    if thrashing:
        return None
    device_gaps = win.gpu_gaps(proc.gpu_index, c.gap_sm_below_percent, c.min_gap_s)
    gaps = device_gaps or Gaps(0.0, 0, device, False)
    shared = _Shared(device, others, tenants, even)
    return _Starved(sm, scope, notes, gaps, Scope.DEVICE, "filled", shared)


def _sawtooth(win: Window, t: Thresholds, proc: GpuProcess) -> _Starved | None:
    """The condition on one window as its gaps (or a blocked loader) show it, or None."""
    c = t.input_starved
    # _loader_blocked's first test here (the window's iowait): no call where it fails.
    iowait = win.iowait_percent
    blocked = (
        iowait is not None and iowait >= c.iowait_above_percent and _loader_blocked(win, t, proc)
    )
    # Every test that returns None below is a pure reading of the window, so their order
    # changes no verdict. Over the fast window the mean (a few ticks, once per window and
    # process) goes first: on a busy node it rules out most processes before the burst
    # test. Over the slow window the burst test goes first: its peak is kept on append
    # (PeakSeries), where the mean reads the whole ring.
    fast = win.window_s <= t.general.window_s
    if not fast and not blocked and own_burst_ruled_out(win, proc, t):
        return None  # no burst of its own: every path but the blocked one needs one
    # sm_evidence's common case without its call: the process's own mean, no note.
    sm = win.process_sm_mean(proc)
    scope = Scope.PROCESS
    notes: list[Evidence] = []
    if sm is None:
        sm, scope, notes = sm_evidence(win, proc, t)
    if sm is None or sm >= max(c.sm_mean_below_percent, c.storage_sm_below_percent):
        return None  # busy enough for every path below
    if (
        not blocked
        and sm >= c.sm_mean_below_percent
        and (fast or not _slow_reads(win, t, proc, sm))  # never slow reads over the fast
    ):
        return None  # neither blocked nor slow reads: only the sawtooth's bar is left
    if fast and not blocked and own_burst_ruled_out(win, proc, t):
        # Not blocked on storage (that path asks for no burst), and every other path
        # needs a burst of its own: most tenants of a shared GPU stop here.
        return None
    if _blocked_on_storage(win, t, proc, sm):
        # Batches arrive as fast as reads finish: the GPU idles in stalls too short
        # for NVML's ~1/6 s samples to show, so no sawtooth is asked for.
        gaps, gaps_scope = gaps_seen_by(win, proc, t, scope)
        gaps = gaps or Gaps(0.0, 0, sm, False)
        return _Starved(sm, scope, notes, gaps, gaps_scope, "blocked")
    # Not blocked here: a mean at or above the sawtooth's bar passed on slow reads (above).
    path: Literal["sawtooth", "slow-reads"] = (
        "slow-reads" if sm >= c.sm_mean_below_percent else "sawtooth"
    )
    gaps, gaps_scope = gaps_seen_by(
        win, proc, t, scope, need_burst=True, burst_not_ruled_out=not blocked
    )
    if gaps is None or gaps.fraction < c.min_gap_fraction or gaps.count < c.min_gaps:
        return None
    if gaps_scope is Scope.DEVICE and not present_throughout(win, proc):
        return None  # the device's readings before it came are another holder's loop
    if gaps.peak_percent < c.busy_sm_above_percent:
        return None  # no bursts at all: idle, not starved (see idle-holding-vram)
    thrashing, _ = link_thrashing(win, t, proc.gpu_index)
    if thrashing:
        return None  # copies, not input, are the bottleneck: pcie-thrash says so
    if not _loading(win, t, proc):
        return None  # an idle host side waits on a person, not on an input pipeline
    return _Starved(sm, scope, notes, gaps, gaps_scope, path)


def _slow_reads(win: Window, t: Thresholds, proc: GpuProcess, sm: float) -> bool:
    """Over the slow window, a load-then-compute cycle whose loads are reads (the loader
    in D state, or iowait up) starves the GPU for the length of each read however busy
    it is in between: the mean may pass 50 % (a 25 s compute after a 12 s fetch reads
    ~65 %) while a third of the time waits on storage. The gaps still have to show."""
    c = t.input_starved
    if win.window_s <= t.general.window_s or sm >= c.storage_sm_below_percent:
        return False
    iowait = win.iowait_percent
    if iowait is not None and iowait >= c.iowait_above_percent:
        return True
    return win.process_d_state_fraction(proc) >= c.d_state_fraction


def _blocked_on_storage(win: Window, t: Thresholds, proc: GpuProcess, sm: float) -> bool:
    """The loader spends most of its time blocked on reads (D state) with the host in
    iowait, and the GPU is not saturated: with the prefetch queue empty the GPU can
    only run as fast as the reads arrive, whether or not its stalls show as gaps."""
    return sm < t.input_starved.storage_sm_below_percent and _loader_blocked(win, t, proc)


def _loader_blocked(win: Window, t: Thresholds, proc: GpuProcess) -> bool:
    """The host in iowait and ``proc``'s loader in D state most of the window."""
    c = t.input_starved
    iowait = win.iowait_percent  # once per window: the cheapest test first
    if iowait is None or not iowait >= c.iowait_above_percent:
        return False
    return (
        loader_workers(proc) != 0
        and win.process_d_state_fraction(proc) >= c.storage_d_state_fraction
    )


def _loading(win: Window, t: Thresholds, proc: GpuProcess) -> bool:
    """Whether anything on the host side works at producing batches: the main process
    (num_workers=0 loads in it), a busy worker, or a loader waiting on storage (D state).
    Unknown host data (a log) does not rule starvation out."""
    cpu = win.process_cpu_mean(proc)
    if cpu is None:
        return True
    busy = t.idle_holding_vram.host_busy_cpu_percent
    if win.process_d_state_fraction(proc) > 0.0:
        return True
    # While its own GPU share is idle, a starved job's host side makes the next batch;
    # a notebook between cells (a person reading) does nothing.
    working = host_works_while_idle(win, proc, t.input_starved.gap_sm_below_percent, busy)
    if working is not None:
        return working
    return cpu >= busy or (win.process_busy_workers_mean(proc) or 0.0) >= 0.5


def _finding(win: Window, t: Thresholds, proc: GpuProcess, seen: _Starved) -> Finding:
    c = t.input_starved
    sm, scope, gaps_scope = seen.sm, seen.scope, seen.gaps_scope
    loader = _loader(win, t, proc)
    if seen.shared is not None:
        diagnosis = _filled_num_workers_0(loader, seen.shared, sm)
        host = tuple(_host_evidence(t, loader))
    else:
        host, diagnosis = _described(t, loader, seen.gaps)
    evidence = (*_gpu_evidence(t, seen), *host, *diagnosis.evidence)
    if win.window_s > t.general.window_s:
        evidence = (
            *evidence,
            Evidence(
                f"seen over the last {win.covered_s:.0f} s (a slow load-then-compute cycle)",
                None,
                "slow window",
                "",
                gaps_scope,
                met=None,
            ),
        )
    # A cause the data cannot show is never critical: the GPU-only path says the same.
    # Nor where the device's gaps are another tenant's (the duty cycle is not seen).
    critical = (
        sm < c.critical_sm_below_percent
        and diagnosis.subtype != "cause-unknown"
        and seen.shared is None
    )
    severity = Severity.CRITICAL if critical else Severity.WARNING
    return Finding(
        rule=ID,
        subtype=diagnosis.subtype,
        subject=Subject(proc.gpu_index, proc.pid),
        severity=severity,
        label=diagnosis.label,
        summary=diagnosis.summary,
        advice=diagnosis.advice,
        evidence=evidence,
        evidence_scope=scope,
    )


_DESCRIBED: dict[tuple[int, _Loader], tuple[object, tuple[Evidence, ...], _Diagnosis]] = {}
"""(id of the thresholds, host side) -> (those thresholds, host evidence, diagnosis): a
starved process is found again every tick with its host side mostly the same, and its
evidence and advice are then the same (immutable) objects as the tick before."""
_DESCRIBED_MAX = 512


def _described(
    t: Thresholds, loader: _Loader, gaps: Gaps
) -> tuple[tuple[Evidence, ...], _Diagnosis]:
    """:func:`_host_evidence` and :func:`_diagnose` of ``loader``, each distinct host side
    worked out once; ``num-workers-0`` quotes the gaps' share, so it is worked out again."""
    key = (id(t), loader)
    found = _DESCRIBED.get(key)
    if found is not None and found[0] is t:
        host, diagnosis = found[1], found[2]
        if diagnosis.subtype == "num-workers-0":
            diagnosis = _diagnose(loader, gaps, t)
        return host, diagnosis
    host = tuple(_host_evidence(t, loader))
    diagnosis = _diagnose(loader, gaps, t)
    if len(_DESCRIBED) >= _DESCRIBED_MAX:
        _DESCRIBED.clear()
    _DESCRIBED[key] = (t, host, diagnosis)
    return host, diagnosis


def _loader(win: Window, t: Thresholds, proc: GpuProcess) -> _Loader:
    """Read the host side of ``proc``'s input pipeline over the window, once."""
    allowed = win.allowed_core_count
    # The subtype says what holds the pipeline back now: cores saturated over the
    # window, or over its latest half (a window straddling start-up and the starved
    # loop averages the two and would advise more workers on saturated cores).
    cores_busy = win.allowed_cores_busy_percent
    latest = win.allowed_cores_busy_latest((win.ticks + 1) // 2)
    if latest is not None and (cores_busy is None or latest > cores_busy):
        cores_busy = latest
    return _Loader(
        main_cpu=win.process_cpu_mean(proc),
        busy_workers=win.process_busy_workers_mean(proc) or 0.0,
        workers=loader_workers(proc),
        workers_cpu=win.process_workers_cpu_mean(proc),
        cores_busy=cores_busy,
        allowed_cores=allowed,
        iowait=win.iowait_percent,
        d_state_fraction=win.process_d_state_fraction(proc),
        job=win.latest.job,
        suggested_workers=max(1, min(allowed - 1, t.input_starved.max_suggested_workers)),
    )


def _gpu_evidence(t: Thresholds, seen: _Starved) -> list[Evidence]:
    """The condition itself: low mean SM, time in gaps, how many gaps."""
    c = t.input_starved
    sm, scope, notes, gaps, gaps_scope = (
        seen.sm,
        seen.scope,
        seen.notes,
        seen.gaps,
        seen.gaps_scope,
    )
    if seen.shared is not None:  # the device's gaps filled by others: no sawtooth to see
        sh = seen.shared
        return [
            Evidence(
                "SM % (mean)",
                sm,
                f"< {c.shared_share_below:g} x an even split of the device "
                f"({sh.even_split:.0f} % each of {sh.tenants})",
                "%",
                scope,
            ),
            Evidence(
                "device SM % (mean)",
                sh.device,
                f">= {t.compute_bound.sm_above_percent:g}: its idle time filled",
                "%",
                Scope.DEVICE,
            ),
            Evidence(
                "other tenants' own SM % (summed)",
                sh.others,
                "with this one's, the device's (time-slicing)",
                "%",
                Scope.DEVICE,
                met=None,
            ),
            dataclasses.replace(
                gaps_evidence(gaps, "not asked for: other tenants' kernels fill them", gaps_scope),
                met=None,
            ),
            *notes,
        ]
    if seen.path == "blocked":  # no sawtooth asked for
        return [
            Evidence(
                "SM % (mean)",
                sm,
                f"< {c.storage_sm_below_percent:g} with the loader blocked on reads",
                "%",
                scope,
            ),
            Evidence(
                "idle gaps",
                None,
                "stalls shorter than NVML's ~1/6 s samples: none show",
                "",
                gaps_scope,
                met=None,
            )
            if gaps.count == 0
            else dataclasses.replace(
                gaps_evidence(gaps, "not asked for: the loader is blocked on reads", gaps_scope),
                met=None,
            ),
            *notes,
        ]
    bar = (
        f"< {c.sm_mean_below_percent:g}"
        if seen.path == "sawtooth"
        else f"< {c.storage_sm_below_percent:g} with reads over the slow window"
    )
    return [
        Evidence("SM % (mean)", sm, bar, "%", scope),
        gaps_evidence(
            gaps,
            f">= {c.min_gap_fraction * 100:g} % of the window, gaps >= {c.min_gap_s:g} s",
            gaps_scope,
        ),
        Evidence(
            "separate idle gaps",
            float(gaps.count),
            f">= {c.min_gaps} (a sawtooth)",
            "",
            gaps_scope,
        ),
        *notes,
    ]


def _host_evidence(t: Thresholds, loader: _Loader) -> list[Evidence]:
    """The host readings every subtype is chosen from, whether or not each one met its bar."""
    g = t.general
    job = loader.job
    allowed = loader.allowed_cores
    return [
        Evidence(
            "main process CPU (mean)",
            loader.main_cpu,
            f"pegged at >= {g.main_pegged_percent:g}",
            "%",
            Scope.HOST,
            met=at_least(loader.main_cpu, g.main_pegged_percent),
        ),
        # No workers seen, or no cores known (a GPU-only log): unknown, never "of 0: 0".
        Evidence(
            f"busy workers (of {loader.workers})",
            loader.busy_workers,
            f"busy = above {g.worker_busy_percent:g} % of a core",
            "",
            Scope.HOST,
            met=None,
        )
        if loader.workers
        else Evidence("busy DataLoader workers", None, "no workers seen", "", Scope.HOST, met=None),
        Evidence(
            (
                f"job {job.job_id}'s cores busy ({allowed} allocated)"
                if job is not None and allowed
                else f"allowed cores busy ({allowed} cores)"
                if allowed
                else "allowed cores busy (cores not known)"
            ),
            loader.cores_busy if allowed else None,
            f"saturated at >= {g.cores_busy_percent:g}",
            "%",
            Scope.HOST,
            met=at_least(loader.cores_busy, g.cores_busy_percent),
        ),
        Evidence(
            "iowait",
            loader.iowait,
            f"storage-bound at >= {t.input_starved.iowait_above_percent:g}",
            "%",
            Scope.HOST,
            met=at_least(loader.iowait, t.input_starved.iowait_above_percent),
        ),
    ]


def _diagnose(loader: _Loader, gaps: Gaps, t: Thresholds) -> _Diagnosis:
    """The subtype, tried in its documented order (docs/hints.md, "Subtype")."""
    g = t.general
    c = t.input_starved
    main_cpu = loader.main_cpu
    if main_cpu is None and loader.cores_busy is None and loader.iowait is None:
        return _host_unknown()
    if loader.busy_workers < 0.5 and main_cpu is not None and main_cpu >= g.main_pegged_percent:
        return _num_workers_0(loader, gaps, main_cpu)
    if loader.cores_busy is not None and loader.cores_busy >= g.cores_busy_percent:
        return _cpu_bound(loader, loader.cores_busy)
    storage = loader.iowait is not None and loader.iowait >= c.iowait_above_percent
    if storage or loader.d_state_fraction >= c.d_state_fraction:
        return _storage_bound(loader, t)
    return _more_workers(loader)


def _workers_why(loader: _Loader) -> str:
    """Why the advice names its number of workers: the cores but one, or the cap."""
    cores = loader.allowed_cores
    if loader.suggested_workers < cores - 1:
        return (
            f"{cores} cores are allowed, but past {loader.suggested_workers} workers each "
            "added one mostly holds another copy of the dataset and its prefetched batches "
            "(the cap: input_starved.max_suggested_workers); raise it if the loader still "
            "cannot keep up"
        )
    return f"{cores} cores are allowed, one stays with the main process"


def _num_workers_0(loader: _Loader, gaps: Gaps, main_cpu: float) -> _Diagnosis:
    """The main process loads every batch itself: no worker is busy, it is pegged."""
    n = loader.suggested_workers
    return _Diagnosis(
        "num-workers-0",
        "starved: num_workers=0?",
        f"The GPU idles in gaps ({gaps.fraction * 100:.0f} % of the time) while the main "
        f"process is at {main_cpu:.0f} % of a core and no worker is busy: the batches "
        "are most likely loaded in the training process itself.",
        (
            f"Set DataLoader(num_workers={n}) -- {_workers_why(loader)}.",
            "Add pin_memory=True and persistent_workers=True; prefetch_factor=2-4 keeps "
            "batches queued.",
        ),
    )


def _filled_num_workers_0(loader: _Loader, shared: _Shared, sm: float) -> _Diagnosis:
    """num_workers=0 on its own evidence: other tenants fill the device's gaps."""
    n = loader.suggested_workers
    cpu = loader.main_cpu or 0.0
    return _Diagnosis(
        "num-workers-0",
        "starved: num_workers=0?",
        f"Other processes' kernels fill this GPU ({shared.device:.0f} % busy, theirs "
        f"{shared.others:.0f} %), so its idle gaps cannot show this process's stalls. Its "
        f"own share is {sm:.0f} %, well under the {shared.even_split:.0f} % an even split "
        f"gives a process with work always queued, while its main process is at {cpu:.0f} % "
        "of a core with no DataLoader workers: it has nothing queued much of the time, most "
        "likely because it loads every batch itself. Steps too small to fill the GPU "
        "(kernel launches setting the pace) would look the same from here.",
        (
            f"Set DataLoader(num_workers={n}) -- {_workers_why(loader)}; pin_memory=True "
            "and persistent_workers=True.",
            "If it already loads nothing per step, its steps are launch-bound: a larger batch, "
            "torch.compile(mode='reduce-overhead') or CUDA graphs.",
            "Compare its step time with the other tenants stopped: the share it gets alone "
            "tells what sharing costs it.",
        ),
    )


def _cpu_bound(loader: _Loader, cores_busy: float) -> _Diagnosis:
    """Every allowed core is saturated: the pipeline needs more CPU than the job has."""
    allowed = loader.allowed_cores
    job = loader.job
    where = (
        f"{allowed} of {allowed} allocated cores"
        if job is not None
        else f"all {allowed} allowed cores"
    )
    return _Diagnosis(
        "cpu-bound",
        "starved: CPU-bound input",
        f"The GPU idles in gaps while {where} are {cores_busy:.0f} % busy: the input "
        "pipeline needs more CPU than the job has.",
        (
            f"Ask for more cores (SLURM: --cpus-per-task, now {allowed})"
            + (f" -- job {job.job_id} has {allowed} on this node." if job is not None else "."),
            "Make augmentation cheaper or move it to the GPU (torchvision.transforms.v2 on "
            "GPU tensors, NVIDIA DALI).",
            "Decode / resize / tokenize once, offline, and train from the cached result.",
        ),
    )


def _storage_bound(loader: _Loader, t: Thresholds) -> _Diagnosis:
    """The loader waits on storage: iowait, or loader processes in D state."""
    d_state = loader.d_state_fraction
    return _Diagnosis(
        "storage-bound",
        "starved: storage-bound",
        f"The GPU idles in gaps while the loader waits on storage (iowait "
        f"{percent_text(loader.iowait)}, {d_state * 100:.0f} % of loader processes in D state) "
        "and cores are not saturated.",
        (
            "Stage the dataset on node-local disk ($TMPDIR, NVMe) or in RAM before training.",
            "Pack many small files into larger shards (WebDataset tar, LMDB, Parquet).",
            f"More workers hide I/O latency: raise num_workers (now {loader.workers}) and "
            "prefetch_factor.",
        ),
        (
            Evidence(
                "loader processes in D state",
                d_state * 100,
                f">= {t.input_starved.d_state_fraction * 100:g} points at storage",
                "%",
                Scope.HOST,
            ),
        ),
    )


def _host_unknown() -> _Diagnosis:
    """The GPU's own trace shows starvation, but the data has no host side at all (a
    GPU log): say so, and name no cause the data cannot show."""
    return _Diagnosis(
        "cause-unknown",
        "starved? (no host data)",
        "The GPU runs in bursts between idle gaps: batches arrive more slowly than it "
        "consumes them. This data has no host readings (process CPU, workers, iowait), "
        "so whether num_workers, the CPU or storage holds it back cannot be told from it.",
        (
            "Watch the job live with gputop-hints on its node (or record it with "
            "gputop-hints record): the host side names the cause.",
            "Meanwhile check the DataLoader: num_workers (0 loads in the training process), "
            "whether the loader's cores are saturated, and how fast the dataset is read.",
        ),
    )


def _more_workers(loader: _Loader) -> _Diagnosis:
    """None of the above: CPU to spare, so more workers can keep up."""
    n, workers = loader.suggested_workers, loader.workers
    return _Diagnosis(
        "more-workers",
        "starved: loader too slow",
        f"The GPU idles in gaps; {workers} workers use {percent_text(loader.workers_cpu)} of a "
        f"core in total and cores are {percent_text(loader.cores_busy)} busy: the loader can't "
        "keep up, but there is CPU to spare.",
        (
            (
                f"Raise num_workers (now {workers}; up to {n} fits the {loader.allowed_cores} "
                "allowed cores) and prefetch_factor."
                if workers < n
                else f"num_workers={workers} already uses the {loader.allowed_cores} allowed "
                "cores: make each batch cheaper (decode once offline, GPU-side augmentation) "
                "or ask for more cores."
            ),
            "pin_memory=True and persistent_workers=True avoid per-epoch worker start-up.",
            "Profile one worker (py-spy top --pid <worker pid>) to find the slow transform.",
        ),
    )


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=InputStarved,
    title="Input starved",
    sentence=(
        "The GPU idles in repeated gaps (a sawtooth) while the process holds VRAM: batches "
        "arrive too slowly; the subtype says why -- num_workers=0, a CPU-bound pipeline, "
        "storage, or too few workers."
    ),
    subject="process",
    # Without processes or host data only the GPU-level duty cycle (cause-unknown) is looked for.
    needs=(METRIC_SM,),
    cause_needs=(METRIC_PROCESSES, METRIC_HOST_CPU),
    explains_low_utilization=True,
    judges_level=True,
)
