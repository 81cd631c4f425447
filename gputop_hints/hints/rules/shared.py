"""What several rules need: text for values that may be unknown, and a process's view of SM.

Per-process rules prefer the process's own NVML numbers and fall back to the
whole GPU's when the driver gives none; both choices, and the evidence note
that says which was taken, live here so that every rule says it the same way.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from functools import lru_cache
from typing import TYPE_CHECKING

from gputop_hints.hints.attribution import process_fine_sm
from gputop_hints.hints.findings import Evidence, Scope
from gputop_hints.hints.window import GIB, Gaps, Window, idle_gaps
from gputop_hints.model import GpuProcess
from gputop_hints.text import pattern

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds


def gib_text(value: float | None) -> str:
    """Bytes as GiB with one decimal, "n/a" when unknown."""
    return "n/a" if value is None else f"{value / GIB:.1f} GiB"


def percent_text(value: float | None) -> str:
    """A percentage rounded to whole points, "n/a" when unknown."""
    return "n/a" if value is None else f"{value:.0f} %"


def at_least(value: float | None, threshold: float) -> bool | None:
    """Whether a reading crossed its threshold; None (not judged) when it is unknown."""
    return None if value is None else value >= threshold


def others_on_gpu(win: Window, proc: GpuProcess, t: Thresholds) -> list[GpuProcess]:
    """The other processes on ``proc``'s GPU that hold enough VRAM to be diagnosed
    (once per window and process: callers do not change the list)."""
    return win.others_on_gpu(proc, t.general.min_vram_gib * GIB)


def sm_evidence(
    win: Window, proc: GpuProcess, t: Thresholds
) -> tuple[float | None, Scope, list[Evidence]]:
    """Mean SM for a process: its own when NVML has samples, else the device's.

    With the device's, a note (evidence that crosses no threshold) says so and how
    many other processes share the GPU, since their kernels count in that number.
    """
    own = win.process_sm_mean(proc)
    if own is not None:
        return own, Scope.PROCESS, []
    device = win.gpu_sm_mean(proc.gpu_index)
    sharing = others_on_gpu(win, proc, t)
    if proc.mig_instance is not None:
        # NVML gives neither under MIG: with no SM at all, no SM-based verdict is made.
        note = "per-process SM % not reported on a MIG instance (NVML gives none under MIG)" + (
            "; nor the whole GPU's" if device is None else "; using the whole GPU's, all instances"
        )
    else:
        note = "per-process SM % not reported by the driver; using the whole GPU's" + (
            f", shared with {len(sharing)} other process(es)" if sharing else ""
        )
    return device, Scope.DEVICE, [Evidence(note, None, "fallback", "", Scope.DEVICE, met=None)]


def gaps_seen_by(
    win: Window,
    proc: GpuProcess,
    t: Thresholds,
    scope: Scope,
    need_burst: bool = False,
    burst_not_ruled_out: bool = False,
) -> tuple[Gaps | None, Scope]:
    """Idle gaps as this process sees them.

    The device trace (with NVML's sub-second samples where there are any) is the
    finest, but on a GPU shared with other busy processes their kernels fill this
    one's gaps; then, when NVML reports the process's own SM %, its own trace
    (one value per tick) is the one that shows them. ``need_burst``: without a
    burst in its own trace there is no sawtooth to find (None). ``burst_not_ruled_out``:
    the caller asked :func:`own_burst_ruled_out` of this window and process and got
    False (a pure function of them: asking again gives the same), so it is not asked.
    """
    c = t.input_starved
    if (
        need_burst
        and not burst_not_ruled_out
        and scope is Scope.PROCESS
        and own_burst_ruled_out(win, proc, t)
    ):
        return None, Scope.PROCESS  # no burst of its own: no sawtooth to find
    others = others_on_gpu(win, proc, t)
    if others and scope is Scope.PROCESS and win.window_s <= t.general.window_s:
        # Sub-second detail matters for a short cycle; over the slow window (10-30 s
        # cycles) the process's own sample a tick shows its gaps (below).
        own_fine = process_fine_sm(win, proc)
        if own_fine is not None:
            # The device's sub-second samples less the others' own share of each tick.
            values, period = own_fine
            below, min_gap = c.gap_sm_below_percent, c.min_gap_s
            if need_burst and not _interior_gaps(values, period, below, min_gap):
                # One burst between idle stretches (a notebook cell) is no sawtooth.
                return None, Scope.PROCESS
            # Once per window and process: input-starved and small-batch both ask.
            gaps = win.derived(
                ("process-fine-gaps", proc.key, below, min_gap),
                lambda: idle_gaps(values, period, below, min_gap, fine=True),
            )
            return gaps, Scope.PROCESS
    if others and scope is Scope.PROCESS and _others_ran_nothing(win, proc, t):
        # The others ran no kernel in the window: the device's finer trace is this one's.
        return win.gpu_gaps(proc.gpu_index, c.gap_sm_below_percent, c.min_gap_s), Scope.PROCESS
    if others and scope is Scope.PROCESS:
        return win.process_gaps(proc, c.gap_sm_below_percent, c.min_gap_s), Scope.PROCESS
    return win.gpu_gaps(proc.gpu_index, c.gap_sm_below_percent, c.min_gap_s), Scope.DEVICE


def own_burst_ruled_out(win: Window, proc: GpuProcess, t: Thresholds) -> bool:
    """Whether ``proc``'s own samples leave no burst for a sawtooth, asked from those
    samples alone: the test :func:`gaps_seen_by` makes with ``need_burst``, in the
    order of its branches, without building any trace. Most processes on a shared GPU
    are ruled out here (a replica at a few percent of its own), so a sawtooth rule
    asks it before anything dearer. False when in doubt (the device's trace decides).
    """
    peak = win.process_sm_peak(proc)
    if peak is None:
        return False  # the device's trace is judged: its gaps decide
    min_vram = t.general.min_vram_gib * GIB
    if not win.others_on_gpu(proc, min_vram):
        return False  # as above
    busy = t.input_starved.busy_sm_above_percent
    if win.window_s <= t.general.window_s:
        fine = win.gpu_fine_sm(proc.gpu_index)
        if fine is not None:
            # A process with s % of a tick's time can fill a shorter sample of period p at
            # most s x interval / p (ten replicas at 2 % each cannot burst to 40 % in 1/6 s):
            # no room for a burst rules it out; else its own sub-second trace is judged
            # (process_fine_sm).
            return not peak * win.interval_s / fine[2] >= busy
    ran = _ran_something(win, proc.gpu_index, min_vram)
    if not ran or ran == {proc.pid}:
        return False  # the others ran nothing: the device's finer trace is its own
    return peak < busy


def _interior_gaps(values: list[float], period: float, below: float, min_gap_s: float) -> int:
    """Idle runs (>= ``min_gap_s`` below ``below``) with activity on both sides of them in
    the window: a burst, a gap, a burst -- where idle before and after one burst is not."""
    count = 0
    run = 0
    started = False
    for v in values:
        if v < below:
            run += 1
            continue
        if started and run * period >= min_gap_s - 1e-9:
            count += 1
        started = True
        run = 0
    return count


def _others_ran_nothing(win: Window, proc: GpuProcess, t: Thresholds) -> bool:
    """Whether every other significant process on ``proc``'s GPU ran no kernel in the
    window (:func:`_ran_nothing`), from one pass over the GPU's processes per window."""
    ran = _ran_something(win, proc.gpu_index, t.general.min_vram_gib * GIB)
    return not ran or ran == {proc.pid}


def _ran_something(win: Window, index: int, min_vram: float) -> set[int]:
    """The pids of the significant processes on GPU ``index`` that are not known to have
    run nothing in the window (once per window and GPU)."""
    memo = win.memo  # Window.derived's cache, read here with no lambda (~86 asks a tick)
    key = ("ran-something", index, min_vram)
    if key in memo:
        found: set[int] = memo[key]
        return found
    ran = memo[key] = {
        p.pid for p in win.significant_processes_on(index, min_vram) if not _ran_nothing(win, p)
    }
    return ran


def _ran_nothing(win: Window, proc: GpuProcess) -> bool:
    """Whether ``proc``'s own samples say it ran no kernel in the window (not unknown)."""
    peak = win.process_sm_peak(proc)
    return peak is not None and peak < 1.0


def gaps_evidence(gaps: Gaps, threshold: str, scope: Scope) -> Evidence:
    """The share of the window spent in idle gaps, saying how finely they were seen."""
    return Evidence(
        "time in idle gaps" + (" (sub-second samples)" if gaps.fine else " (1 per tick)"),
        gaps.fraction * 100,
        threshold,
        "%",
        scope,
    )


_RANK_ARGUMENT = r"(--?(?:local[-_])?rank[= ])\d+"
"""A per-rank argument: older launchers (torch.distributed.launch, some mpirun wrappers)
pass ``--local-rank N``/``--local_rank=N``; everything else on the ranks' line is the same."""


@lru_cache(maxsize=4096)
def job_command(command: str) -> str:
    """A command line with its per-rank argument blanked: the same for every rank of a job
    (kept per command line: every tick asks it of every process)."""
    if "rank" not in command:  # what every match holds: most lines, never compiled
        return command
    return pattern(_RANK_ARGUMENT).sub(r"\1*", command)


def multi_gpu_jobs(
    win: Window, t: Thresholds
) -> dict[tuple[str | None, str], dict[int, GpuProcess]]:
    """Once per window; see :func:`_multi_gpu_jobs_uncached`."""
    return win.derived(("multi_gpu_jobs", id(t)), lambda: _multi_gpu_jobs_uncached(win, t))


def _multi_gpu_jobs_uncached(
    win: Window, t: Thresholds
) -> dict[tuple[str | None, str], dict[int, GpuProcess]]:
    """Multi-GPU jobs on this node: GPU -> rank process, grouped by user and command line.

    DDP launchers (torchrun, mpirun, srun) start every rank with the same command,
    apart from a rank argument some launchers add. A rank is a process of its own on one
    GPU: a process listed on several GPUs (nn.DataParallel, a stray context on GPU 0) is
    no rank. And only a command line names a job: a bare program name with no arguments
    and no launcher (an nvidia-smi table's ``python``, its process name) is shared by
    every unrelated job of that program on a shared server.
    """
    min_vram = t.general.min_vram_gib * GIB
    procs = [p for p in win.processes() if (p.vram_bytes or 0) >= min_vram and p.command]
    gpus_of = Counter(p.pid for p in procs)
    jobs: dict[tuple[str | None, str], dict[int, GpuProcess]] = defaultdict(dict)
    for proc in procs:
        assert proc.command is not None
        if gpus_of[proc.pid] > 1:
            continue
        if proc.launcher_pid is None and len(proc.command.split(maxsplit=1)) < 2:
            continue
        jobs[(proc.user, job_command(proc.command))].setdefault(proc.gpu_index, proc)
    return {k: v for k, v in jobs.items() if len(v) >= 2}
