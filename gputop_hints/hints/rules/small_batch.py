"""small-batch: steady, moderate SM, little VRAM, main process pegged -- launch-bound.

Where the GPU gives GPM's SM activity (Hopper and newer; DCGM ``SMACT`` in a dcgmi
log), it tells a small step apart even at high utilization: utilization counts time
with any kernel running, SM activity the share of SM cycles with a warp resident,
averaged over the SMs. A kernel over a small batch launches few blocks and fills few
SMs, so utilization reads high while SM activity stays low (NVIDIA's DCGM guide: below
0.5 is likely ineffective use). Then utilization need only pass ``sm_min_percent``,
with SM activity below ``sm_active_below_percent``; the host-side signs (little VRAM,
no gaps, the main thread pegged launching kernels) are asked as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.kinds import is_server
from gputop_hints.hints.rules.shared import gaps_evidence, gaps_seen_by, gib_text, sm_evidence
from gputop_hints.hints.rules.signals import sm_active
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import (
    METRIC_HOST_CPU,
    METRIC_PROCESSES,
    METRIC_SM,
    METRIC_VRAM,
)

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "small-batch"


@dataclass(frozen=True)
class SmallBatch:
    """small-batch's thresholds: the ``small_batch:`` section of defaults.yaml."""

    sm_min_percent: float = field(metadata=threshold(0, 100, "%", "steady SM at or above this ..."))
    sm_max_percent: float = field(
        metadata=threshold(0, 100, "%", "... and below this is 'moderate'")
    )
    max_gap_fraction: float = field(
        metadata=threshold(0, 1, "", "more idle gaps than this is starvation, not small batch")
    )
    vram_share_below: float = field(
        metadata=threshold(0, 1, "", "a process using less than this share of VRAM is small")
    )
    sm_active_below_percent: float = field(
        metadata=threshold(0, 100, "%", "with GPM: SM active below this is 'moderate' instead")
    )
    headroom_target: float = field(
        metadata=threshold(0.1, 1, "", "share of VRAM the batch-size advice aims to fill")
    )
    hysteresis: Hysteresis


NO_WORKERS_NOTE = (
    " It has no worker processes: if it also loads its own batches (num_workers=0), "
    "that loading runs between steps in gaps shorter than NVML's ~1/6 s samples show."
)
NO_WORKERS_ADVICE = (
    "It has no DataLoader workers: if it loads its data itself, "
    "DataLoader(num_workers=2 or more, pin_memory=True) moves loading off the main "
    "thread so it overlaps the GPU (check the step time before and after)."
)


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Steady moderate SM, little VRAM, main process pegged, workers idle: launch-bound."""
    c = t.small_batch
    g = t.general
    out: list[Finding] = []
    for proc in win.processes():
        if is_server(proc):
            continue  # a server's batch is its request load, not a training setting
        vram = proc.vram_bytes or 0
        gpu = win.gpu(proc.gpu_index)
        if gpu is None or not gpu.vram_total_bytes or vram < g.min_vram_gib * GIB:
            continue
        share = vram / gpu.vram_total_bytes
        if share >= c.vram_share_below:
            continue
        sm, scope, notes = sm_evidence(win, proc, t)
        active = sm_active(win, proc.gpu_index)
        if sm is None or sm < c.sm_min_percent:
            continue
        if active is None and sm >= c.sm_max_percent:
            continue
        if active is not None and active >= c.sm_active_below_percent:
            continue
        # The host side before the gap trace: every condition must hold and each is a
        # pure reading of the window, so their order changes no verdict -- and the main
        # process's mean (one number a tick) rules out most processes without a trace.
        main_cpu = win.process_cpu_mean(proc)
        if main_cpu is None or main_cpu < g.main_pegged_percent:
            continue
        busy_workers = win.process_busy_workers_mean(proc) or 0.0
        if busy_workers >= 0.5:
            continue
        gaps, gaps_scope = gaps_seen_by(win, proc, t, scope)
        if gaps is None or gaps.fraction > c.max_gap_fraction:
            continue
        # How much larger a batch fits: aim at headroom_target of the card, at least double.
        factor = max(2, int(c.headroom_target * gpu.vram_total_bytes / vram))
        # No DataLoader workers at all: the pegged main thread may also be loading its
        # batches between steps, in gaps shorter than NVML's ~1/6 s samples can show
        # (a per-batch load under ~0.15 s): the same picture as launch-bound steps.
        loads_itself = not proc.workers
        if active is None:
            level = f"SM is a steady {sm:.0f} %"
            sm_item = Evidence(
                "SM % (mean)",
                sm,
                f"between {c.sm_min_percent:g} and {c.sm_max_percent:g}",
                "%",
                scope,
            )
            gpm: tuple[Evidence, ...] = ()
        else:
            level = (
                f"Kernels run a steady {sm:.0f} % of the time but hold warps on only "
                f"{active:.0f} % of the SMs (GPM)"
            )
            sm_item = Evidence("SM % (mean)", sm, f">= {c.sm_min_percent:g}", "%", scope)
            gpm = (
                Evidence(
                    "SM active % (GPM, mean)",
                    active,
                    f"< {c.sm_active_below_percent:g}: each kernel fills few SMs",
                ),
            )
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.WARNING,
                label="small batch/launch-bound",
                summary=(
                    f"{level} with no idle gaps, the process holds only "
                    f"{share * 100:.0f} % of VRAM, and its main thread is at {main_cpu:.0f} % "
                    "of a core launching kernels: each step is too small to fill the GPU."
                    + (NO_WORKERS_NOTE if loads_itself else "")
                ),
                advice=(
                    f"Try a batch about {factor}x larger: it holds {gib_text(vram)} of "
                    f"{gib_text(gpu.vram_total_bytes)} (aiming at {c.headroom_target * 100:.0f} % "
                    "of VRAM; scale the learning rate with it).",
                    *((NO_WORKERS_ADVICE,) if loads_itself else ()),
                    "Cut per-step launch overhead: torch.compile(mode='reduce-overhead') or "
                    "CUDA graphs.",
                    "Use bf16 autocast so each kernel does more per launch on tensor cores.",
                ),
                evidence=(
                    sm_item,
                    *gpm,
                    gaps_evidence(gaps, f"<= {c.max_gap_fraction * 100:g}", gaps_scope),
                    *notes,
                    Evidence(
                        "VRAM share of the card",
                        share * 100,
                        f"< {c.vram_share_below * 100:g}",
                        "%",
                        Scope.PROCESS,
                    ),
                    Evidence(
                        "main process CPU (mean)",
                        main_cpu,
                        f">= {g.main_pegged_percent:g}",
                        "%",
                        Scope.HOST,
                    ),
                    Evidence("busy workers", busy_workers, "< 0.5 (idle)", "", Scope.HOST),
                    *(
                        (Evidence("worker processes", 0, "none", "", Scope.HOST, met=None),)
                        if loads_itself
                        else ()
                    ),
                ),
                evidence_scope=scope,
            )
        )
    return out


SPEC = RuleSpec(
    profiling_sharpens=True,
    id=ID,
    check=check,
    thresholds_class=SmallBatch,
    title="Small batch / launch-bound",
    sentence=(
        "Steady, moderate SM with no gaps, little VRAM used and the main thread pegged at one "
        "core: each step is too small to fill the GPU and kernel launches set the pace."
    ),
    subject="process",
    needs=(METRIC_SM, METRIC_VRAM, METRIC_PROCESSES, METRIC_HOST_CPU),
    explains_low_utilization=True,
    judges_level=True,
)
