"""memory-bound: memory-access % high and at or above SM % -- kernels wait on bandwidth."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
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
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Memory busy at least its bar and not far below SM, while SM is not saturated."""
    c = t.memory_bound
    out: list[Finding] = []
    for gpu in win.latest.gpus:
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
                advice=(
                    "Use bf16/fp16 autocast: half the bytes per value moved.",
                    "Fuse elementwise chains (torch.compile, fused optimizers such as "
                    "AdamW(fused=True), fused attention).",
                    "For convolutions, channels_last memory format.",
                ),
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


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=MemoryBound,
    title="Memory-bound kernels",
    sentence=(
        "Memory-access % is high and at or above SM %: kernels wait on memory bandwidth more "
        "than on arithmetic."
    ),
    subject="gpu",
    needs=(METRIC_SM, METRIC_MEMORY_ACCESS),
)
