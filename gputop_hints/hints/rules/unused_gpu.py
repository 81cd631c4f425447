"""unused-gpu: a GPU allocated to the attached SLURM job that the job does not use at all.

A job that asks for N GPUs and starts one process per GPU too few -- a single-process
script on a multi-GPU allocation, ``torchrun --nproc-per-node`` smaller than the
allocation, a script that narrows ``CUDA_VISIBLE_DEVICES`` -- leaves the rest of its
GPUs with no process and no kernel for the whole job, and nobody else can use them:
SLURM gave them to this job (Princeton's jobstats reports such GPUs of a finished job
at 0 %). No other rule sees it: with no process on the GPU there is nothing to hold
memory (idle-holding-vram), nothing in use (low-utilization). Only where the monitor
is attached to a job whose GPUs it knows; elsewhere a GPU with no process is a free
one, not a wasted one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.shared import gib_text
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_SM
from gputop_hints.units import duration_text

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "unused-gpu"


@dataclass(frozen=True)
class UnusedGpu:
    """unused-gpu's thresholds: the ``unused_gpu:`` section of defaults.yaml."""

    unused_for_s: float = field(
        metadata=threshold(0, 86400, "s", "no process and no kernel on the job's GPU this long")
    )
    sm_below_percent: float = field(
        metadata=threshold(0, 100, "%", "SM below this is no kernel running")
    )
    max_vram_gib: float = field(
        metadata=threshold(0, 1024, "GiB", "VRAM used under this: nothing loaded on it")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """The attached job's GPUs with no process, no kernel and nothing loaded for a while."""
    c = t.unused_gpu
    job = win.latest.job
    if job is None or not job.gpu_indices:
        return []
    allocated = set(job.gpu_indices)
    used = {p.gpu_index for p in win.latest.processes}
    out: list[Finding] = []
    for gpu in win.latest.gpus:
        if gpu.index not in allocated or gpu.index in used or gpu.vram_used_bytes is None:
            continue
        if gpu.vram_used_bytes >= c.max_vram_gib * GIB:
            continue  # something is loaded on it, whoever holds it
        idle_s = win.gpu_idle_for_s(gpu.index, c.sm_below_percent)
        if idle_s < c.unused_for_s:
            continue
        busy = sorted(allocated & used)
        busy_text = (
            f"GPU{'s' if len(busy) > 1 else ''} {', '.join(map(str, busy))}"
            if busy
            else "none of them"
        )
        out.append(
            Finding(
                rule=ID,
                subject=Subject(gpu.index),
                severity=Severity.WARNING,
                label=f"unused by job {job.job_id}",
                summary=(
                    f"GPU {gpu.index} is allocated to job {job.job_id} but has had no process "
                    f"and run no kernel for {duration_text(idle_s)} "
                    f"({gib_text(gpu.vram_used_bytes)} in use: nothing loaded). Of its "
                    f"{len(allocated)} GPUs the job uses {busy_text}; this one is held from "
                    "the queue for nothing."
                ),
                advice=(
                    f"If the job needs fewer GPUs, ask for fewer (--gres=gpu:{max(1, len(busy))} "
                    "or --gpus-per-node): the queue gives the rest to others, and a smaller "
                    "request often starts sooner.",
                    "If it should use every one: check that a rank started per GPU "
                    f"(torchrun --nproc-per-node={len(allocated)}, srun --ntasks-per-node) and "
                    "that the script does not narrow CUDA_VISIBLE_DEVICES.",
                    "Single-process code uses one GPU unless told otherwise: "
                    "DistributedDataParallel, or device_map='auto' for a model split across GPUs.",
                ),
                evidence=(
                    Evidence(
                        "no process and no kernel for",
                        idle_s,
                        f">= {c.unused_for_s:g} s below {c.sm_below_percent:g} %",
                        "s",
                        Scope.DEVICE,
                    ),
                    Evidence(
                        "VRAM in use",
                        float(gpu.vram_used_bytes),
                        f"< {c.max_vram_gib:g} GiB",
                        "B",
                        Scope.DEVICE,
                    ),
                    Evidence(
                        "job's GPUs with a process",
                        float(len(busy)),
                        f"of {len(allocated)}",
                        "",
                        Scope.DEVICE,
                        met=None,
                    ),
                ),
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=UnusedGpu,
    title="Job's GPU unused",
    sentence=(
        "Attached to a SLURM job, one of the GPUs allocated to it has had no process and run "
        "nothing for minutes: the job holds it from the queue and does not use it."
    ),
    subject="gpu",
    needs=(METRIC_PROCESSES, METRIC_SM),
)
