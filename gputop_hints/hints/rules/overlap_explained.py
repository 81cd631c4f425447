"""overlap-explained: SM % + memory-access % over 100 is normal, and says why."""

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

ID = "overlap-explained"


@dataclass(frozen=True)
class OverlapExplained:
    """overlap-explained's thresholds: the ``overlap_explained:`` section of defaults.yaml."""

    sum_above_percent: float = field(
        metadata=threshold(0, 200, "%", "explain when SM % + memory % exceeds this")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """SM % + memory % over 100 on the newest tick: explain that they overlap, once per GPU."""
    out: list[Finding] = []
    limit = t.overlap_explained.sum_above_percent
    for gpu in win.latest.gpus:
        total = gpu.utilization_sum_percent
        if total is None or total <= limit:
            continue
        assert gpu.sm_percent is not None and gpu.memory_access_percent is not None
        out.append(
            Finding(
                rule=ID,
                subject=Subject(gpu.index),
                severity=Severity.INFO,
                label=f"SM+mem {total:.0f}%: overlap",
                summary=(
                    f"SM {gpu.sm_percent:.0f} % + memory-access {gpu.memory_access_percent:.0f} % "
                    f"= {total:.0f} %: two overlapping fractions of the same time, not shares "
                    "of one whole -- kernels read memory while they run, so the sum can reach "
                    "200 %."
                ),
                advice=(
                    "Nothing to fix: this is how NVML's two counters work.",
                    "SM % counts time with at least one kernel running, not how full the SMs "
                    + (
                        "are; occupancy needs DCGM profiling metrics (sm_active, sm_occupancy)."
                        if gpu.sm_active_percent is None
                        else f"are: GPM's SM activity, {gpu.sm_active_percent:.0f} % now, is "
                        "the share of SM cycles with work resident."
                    ),
                ),
                evidence=(
                    Evidence("SM %", gpu.sm_percent, "now"),
                    Evidence("memory-access %", gpu.memory_access_percent, "now"),
                    Evidence("sum", total, f"> {limit:g}"),
                ),
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=OverlapExplained,
    title="SM % + memory % over 100",
    sentence=(
        "SM % and memory-access % are two overlapping fractions of the same time (kernels read "
        "memory while they run), so their sum can reach 200 %; SM % is time with a kernel "
        "running, not how full the SMs are."
    ),
    subject="gpu",
    needs=(METRIC_SM, METRIC_MEMORY_ACCESS),
)
