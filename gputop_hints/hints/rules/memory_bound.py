"""memory-bound: memory-access % high and at or above SM % -- kernels wait on bandwidth.

NVML's memory-access % is a time share (time the memory was read or written), like
utilization, so the rule compares the two. Where the GPU gives GPM's DRAM bandwidth
use (Hopper and newer; DCGM ``DRAMA`` in a dcgmi log) it decides instead: the share of
cycles the device memory interface moved data, 100 % being the card's peak bandwidth.
Sustained streaming reaches only ~80-90 % of HBM's peak (NVIDIA's DCGM guide: DRAM
activity tops out near 0.8; STREAM-style copies on A100/H100 reach 85-90 % of the data
sheet), so ``dram_active_above_percent`` is within reach of that practical ceiling:
bandwidth is the limit. SM activity of at least ``sm_active_above_percent`` says
kernels move the bytes, not the copy engines (a device-to-device cudaMemcpy uses DRAM
bandwidth with no SM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.signals import dram_active, sm_active
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_MEMORY_ACCESS, METRIC_SM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "memory-bound"

SATURATED_PERCENT = 99.0
"""SM % at which both time shares read full whatever the kernels do: no verdict."""


@dataclass(frozen=True)
class MemoryBound:
    """memory-bound's thresholds: the ``memory_bound:`` section of defaults.yaml."""

    memory_above_percent: float = field(
        metadata=threshold(0, 100, "%", "memory-access % at or above this")
    )
    within_sm_points: float = field(
        metadata=threshold(0, 100, "points", "... and no more than this below SM %")
    )
    sm_below_percent: float = field(
        metadata=threshold(
            0, 100, "%", "only while SM is below this (else both counters just saturate)"
        )
    )
    dram_active_above_percent: float = field(
        metadata=threshold(0, 100, "%", "with GPM: DRAM bandwidth use at or above this ...")
    )
    sm_active_above_percent: float = field(
        metadata=threshold(0, 100, "%", "... with SM active at or above this (kernels, not copies)")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Memory busy at least its bar and not far below SM, while SM is not saturated."""
    c = t.memory_bound
    out: list[Finding] = []
    for gpu in win.latest.gpus:
        dram = dram_active(win, gpu.index)
        active = sm_active(win, gpu.index)
        if dram is not None and active is not None:
            if dram >= c.dram_active_above_percent and active >= c.sm_active_above_percent:
                out.append(_measured(gpu.index, dram, active, c))
            continue
        mem = win.gpu_mem_mean(gpu.index)
        sm = win.gpu_sm_mean(gpu.index)
        if mem is None or sm is None or mem < c.memory_above_percent:
            continue
        if sm >= c.sm_below_percent:
            # Kernels run nearly all the time. Pinned at 100 + 100 the two time shares
            # are saturated and tell nothing (compute-bound, with the overlap note);
            # below that, memory busier than the kernels run is the busiest resource.
            if sm >= SATURATED_PERCENT or mem <= sm:
                continue
        elif mem < sm - c.within_sm_points:
            continue
        out.append(
            Finding(
                rule=ID,
                subject=Subject(gpu.index),
                severity=Severity.WARNING,
                label="memory-bound kernels",
                summary=(
                    f"Device memory is busy {mem:.0f} % of the time against {sm:.0f} % SM: the "
                    "kernels wait on memory bandwidth more than on arithmetic."
                ),
                advice=ADVICE,
                evidence=(
                    Evidence("memory-access % (mean)", mem, f">= {c.memory_above_percent:g}"),
                    Evidence(
                        "SM % (mean)",
                        sm,
                        f"<= memory-access % + {c.within_sm_points:g} (below it at "
                        f">= {c.sm_below_percent:g}; < {SATURATED_PERCENT:g})",
                    ),
                ),
            )
        )
    return out


ADVICE = (
    "Use bf16/fp16 autocast: half the bytes per value moved.",
    "Fuse elementwise chains (torch.compile, fused optimizers such as "
    "AdamW(fused=True), fused attention).",
    "For convolutions, channels_last memory format.",
)


def _measured(index: int, dram: float, active: float, c: MemoryBound) -> Finding:
    """The finding where GPM measured the bandwidth itself."""
    return Finding(
        rule=ID,
        subject=Subject(index),
        severity=Severity.WARNING,
        label="memory-bound kernels",
        summary=(
            f"The kernels use {dram:.0f} % of the device memory's peak bandwidth (GPM), near "
            "the ~80-90 % that HBM sustains in practice, with warps on "
            f"{active:.0f} % of the SMs: memory bandwidth, not arithmetic, sets the pace."
        ),
        advice=ADVICE,
        evidence=(
            Evidence(
                "DRAM bandwidth % (GPM, mean)",
                dram,
                f">= {c.dram_active_above_percent:g} (HBM sustains ~80-90 % of peak): "
                "measured -- certain",
            ),
            Evidence(
                "SM active % (GPM, mean)",
                active,
                f">= {c.sm_active_above_percent:g} (kernels move the bytes, not copies)",
            ),
        ),
    )


SPEC = RuleSpec(
    profiling_sharpens=True,
    id=ID,
    check=check,
    thresholds_class=MemoryBound,
    title="Memory-bound kernels",
    sentence=(
        "Memory-access % is high and at or above SM % (or, with GPM, DRAM bandwidth use is near "
        "its practical peak): kernels wait on memory bandwidth more than on arithmetic."
    ),
    subject="gpu",
    needs=(METRIC_SM, METRIC_MEMORY_ACCESS),
    judges_level=True,
)
