"""low-utilization: a GPU in use but nearly idle, when no more specific rule says why.

The engine drops this finding on a GPU where a rule whose spec sets
``explains_low_utilization`` holds: those say *why*, this only says *that*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.shared import gib_text
from gputop_hints.hints.rules.signals import DutyCycle, stalled_duty_cycle
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_SM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "low-utilization"

LEVEL_SAMPLES = 30
"""A level is judged over at least this many readings, whatever the log's interval: the
mean of n readings of a training job (spread ~25 points) is known to about 25/sqrt(n),
so 30 readings pin it within ~±9 points (2 standard errors). At 1 s that is inside the
60 s window; a 5 s log needs 150 s, a one-a-minute log 30 minutes."""
MIN_SAMPLES = 3
"""Fewer readings than this give no spread to judge a level by (two snapshots 14 s
apart cannot show a GPU underused)."""
CONFIDENCE_SE = 2.0
"""In a coarse log the level must be below the threshold by this many standard errors of
its mean (about 97 % one-sided)."""
INDEPENDENT_INTERVAL_S = 2.0
"""Readings at least this far apart are taken as independent draws of the duty cycle
(a training step lasts well under that, so each reading catches an unrelated phase), and
their standard error bounds the level. Closer readings are correlated (a periodic
pattern is deterministic, not noise): the window's span judges them instead."""


def in_use_level(
    sm: list[float | None], vram: list[float | None], in_use_bytes: float | None
) -> tuple[float, float, int] | None:
    """(mean, standard error, readings) of the SM readings taken while the GPU was in use
    (``in_use_bytes`` None: every reading): the stretches of an imported log between jobs,
    nothing loaded, are not the job's level."""
    values = [
        s
        for s, v in zip(sm, vram, strict=True)
        if s is not None and (in_use_bytes is None or v is None or v >= in_use_bytes)
    ]
    n = len(values)
    if n == 0:
        return None
    mean = math.fsum(values) / n
    if n < 2:
        return mean, math.inf, n
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n), n


@dataclass(frozen=True)
class LowUtilization:
    """low-utilization's thresholds: the ``low_utilization:`` section of defaults.yaml."""

    window_s: float = field(metadata=threshold(2, 3600, "s", "the mean SM is taken over this long"))
    sm_mean_below_percent: float = field(
        metadata=threshold(0, 100, "%", "mean SM below this while the GPU is in use")
    )
    in_use_vram_gib: float = field(
        metadata=threshold(
            0, 1024, "GiB", "without process data, VRAM used above this means in use"
        )
    )
    without_process_data_below_percent: float = field(
        metadata=threshold(0, 100, "%", "threshold when no process/host data can explain low SM")
    )
    hysteresis: Hysteresis


def _plain_level(win: Window, index: int) -> tuple[float, float, int] | None:
    """The window's mean SM (cached, shared with other rules) where no readings are left
    out and no standard error is needed: 1 s data with process rows."""
    sm = win.gpu_sm_mean(index)
    return None if sm is None else (sm, 0.0, win.ticks)


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A GPU in use but nearly idle, when no specific rule explains it (see the engine)."""
    c = t.low_utilization
    out: list[Finding] = []
    # A level is judged over a minute: a checkpoint save or an evaluation pause of
    # 10-30 s is a phase of a busy job, not a job that leaves its GPU idle.
    # A coarse log holds few readings a minute: the level takes LEVEL_SAMPLES of them.
    win = win.longer(max(c.window_s, LEVEL_SAMPLES * win.interval_s))
    # Imported logs (nvidia-smi, W&B) have no per-process rows at all: the specific
    # rules cannot run, so a higher bar says "underused, and this data cannot say why".
    no_process_data = not win.latest.processes and win.latest.source == "replay"
    limit = c.without_process_data_below_percent if no_process_data else c.sm_mean_below_percent
    for gpu in win.latest.gpus:
        gh = win.history.gpus.get(gpu.index)
        in_use = c.in_use_vram_gib * GIB if not win.latest.processes else None
        fine = win.interval_s < INDEPENDENT_INTERVAL_S
        level = (
            None
            if gh is None
            else _plain_level(win, gpu.index)
            if fine and in_use is None
            else in_use_level(
                gh.sm_percent.last(win.ticks), gh.vram_used_bytes.last(win.ticks), in_use
            )
        )
        if level is None:
            continue
        sm, se, n = level
        # Without host data a bimodal duty cycle (idle gaps between full bursts) is the
        # input-stall signature whatever the mean: its idle share is what is measured.
        no_host = win.allowed_cores_busy_percent is None
        duty = stalled_duty_cycle(win, t, gpu.index) if no_host else None
        # Judged only when the readings say so with confidence: enough of them, and in a
        # coarse log the mean below the threshold by CONFIDENCE_SE standard errors.
        margin = CONFIDENCE_SE * se if win.interval_s >= INDEPENDENT_INTERVAL_S else 0.0
        if n < MIN_SAMPLES or (duty is None and sm + margin >= limit):
            continue
        procs = [p for p in win.processes() if p.gpu_index == gpu.index]
        if procs:
            held = float(sum(p.vram_bytes or 0 for p in procs))
            why = f"{len(procs)} process(es) hold {gib_text(held)}"
        elif not win.latest.processes and (gpu.vram_used_bytes or 0) >= c.in_use_vram_gib * GIB:
            why = f"{gib_text(gpu.vram_used_bytes)} of VRAM in use (no per-process data)"
        elif no_process_data and gpu.vram_used_bytes is None:
            why = "the logged run holds it (VRAM use not in this log)"
        else:
            continue
        cores = win.allowed_cores_busy_percent
        if duty is not None:
            out.append(_stalled(gpu.index, sm, why, duty, t))
            continue
        host = f"; host cores {cores:.0f} % busy" if cores is not None else "; no host CPU data"
        out.append(
            Finding(
                rule=ID,
                subject=Subject(gpu.index),
                severity=Severity.WARNING,
                label=f"GPU busy only {sm:.0f}%",
                summary=(
                    f"GPU {gpu.index} runs kernels {sm:.0f} % of the time while {why}{host}: "
                    + (
                        "this data has no per-process or host-side rows, so it cannot tell "
                        "input starvation from a small batch or CPU-side work."
                        if no_process_data
                        else "the job's time goes elsewhere, and no more specific pattern "
                        "(input gaps, small batch, copies) was found to say where."
                    )
                ),
                advice=(
                    *(
                        (
                            "Watch or record the job with gputop-hints ('gputop-hints record "
                            "-o run.jsonl.gz'): its per-process and host-side data tell input "
                            "starvation, a small batch and CPU-side work apart.",
                        )
                        if no_process_data
                        else ()
                    ),
                    "Profile a few steps (torch.profiler, or py-spy top on the main process) "
                    "to see where the time goes: CPU-side work such as an RL environment, "
                    "Python overhead, logging, or waiting on I/O or other ranks.",
                    "Batch the CPU-side work (vectorized environments, larger inference "
                    "batches) so each GPU call does more.",
                    "If the job cannot use more, a smaller or shared GPU (MIG) frees this one.",
                ),
                evidence=(
                    Evidence(
                        "SM % (mean)",
                        sm,
                        f"< {limit:g}" + (" (no process data)" if no_process_data else ""),
                    ),
                    Evidence(
                        "host cores busy (mean)", cores, "for context", "%", Scope.HOST, met=None
                    ),
                ),
            )
        )
    return out


def _stalled(index: int, sm: float, why: str, duty: DutyCycle, t: Thresholds) -> Finding:
    """The GPU alternates between idle gaps and full bursts, and the data has no host side:
    the input-stall signature, its cause unknown."""
    c = t.input_starved
    return Finding(
        rule=ID,
        subject=Subject(index),
        severity=Severity.WARNING,
        label="input stall? (no host data)",
        summary=(
            f"GPU {index} alternates between idle gaps ({duty.gaps} in the window, "
            f"{duty.idle_share * 100:.0f} % of the time) and full bursts while {why}: the "
            "input-stall signature -- batches arrive more slowly than the GPU consumes them, "
            "so the bursts are not the GPU setting the pace. The cause is unknown without host "
            "data (process CPU, DataLoader workers, iowait)."
        ),
        advice=(
            "Watch the job live with gputop-hints on its node (or record it with "
            "'gputop-hints record -o run.jsonl.gz'): the host side tells num_workers, a "
            "CPU-bound pipeline and slow storage apart.",
            "Meanwhile check the DataLoader: num_workers (0 loads in the training process), "
            "pin_memory and prefetch_factor, and how fast the dataset is read.",
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
        subtype="duty-cycle",
    )


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=LowUtilization,
    title="Low utilization",
    sentence=(
        "The GPU is in use but runs kernels only a small share of the time and no specific "
        "pattern explains it: the time goes to CPU-side work, I/O or waiting -- profile a few "
        "steps to see where."
    ),
    subject="gpu",
    needs=(METRIC_SM,),
)
