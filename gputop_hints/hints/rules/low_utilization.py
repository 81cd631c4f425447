"""low-utilization: a GPU in use but nearly idle, when no more specific rule says why.

The engine drops this finding on a GPU where a rule whose spec sets
``explains_low_utilization`` holds: those say *why*, this only says *that*.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.signals import (
    INDEPENDENT_INTERVAL_S,
    MIN_SAMPLES,
    gpu_level,
    holder,
    level_window,
    no_host_data,
    no_process_data,
)
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_SM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "low-utilization"

CONFIDENCE_SE = 2.0
"""In a coarse log the level must be below the threshold by this many standard errors of
its mean (about 97 % one-sided)."""


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
    context_vram_gib: float = field(
        metadata=threshold(
            0, 1024, "GiB", "... or above this (a CUDA context) once held longer than a start-up"
        )
    )
    without_process_data_below_percent: float = field(
        metadata=threshold(0, 100, "%", "threshold when no process/host data can explain low SM")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A GPU in use but nearly idle, when no specific rule explains it (see the engine).

    A bimodal duty cycle in a GPU-only log is input-starved's (``cause-unknown``): this
    rule judges the level only.
    """
    c = t.low_utilization
    out: list[Finding] = []
    win = level_window(win, t)
    # Without per-process rows or host readings the specific rules cannot name a cause,
    # so a higher bar says "underused, and this data cannot say why".
    without_rows = no_process_data(win)
    without_host = without_rows or no_host_data(win)
    limit = c.without_process_data_below_percent if without_host else c.sm_mean_below_percent
    for gpu in win.latest.gpus:
        level = gpu_level(win, t, gpu.index)
        if level is None:
            continue
        sm, se, n = level
        # Judged only when the readings say so with confidence: enough of them, and in a
        # coarse log the mean below the threshold by CONFIDENCE_SE standard errors.
        margin = CONFIDENCE_SE * se if win.interval_s >= INDEPENDENT_INTERVAL_S else 0.0
        if n < MIN_SAMPLES or sm + margin >= limit:
            continue
        why = holder(win, t, gpu)
        if why is None:
            continue
        cores = win.allowed_cores_busy_percent
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
                        "this data has no "
                        + ("per-process or " if without_rows else "")
                        + "host-side rows, so it cannot tell input starvation from a small "
                        "batch or CPU-side work."
                        if without_host
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
                        if without_host
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
                        f"< {limit:g}"
                        + (
                            " (no process data)"
                            if without_rows
                            else " (no host data)"
                            if without_host
                            else ""
                        ),
                    ),
                    Evidence(
                        "host cores busy (mean)", cores, "for context", "%", Scope.HOST, met=None
                    ),
                ),
            )
        )
    return out


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
    judges_level=True,
)
