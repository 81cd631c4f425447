"""utilization-overstated: a GPU that reads busy at a fraction of its power limit.

NVML's utilization is the share of its sample period in which any kernel ran, not how
much work the SMs did (NVML API reference, ``nvmlUtilization_t``): one light kernel
running all the time reads 100 %. Power says what the busy time is worth: dense compute
at full utilization draws well over half the limit, a board at rest 10-20 % of it. A GPU
at high utilization and about a third of its limit is not compute-bound: its kernels are
light (tiny kernels back to back, a small batch), wait on streamed data (CPU offload,
weights paged over PCIe), or spin (a collective waiting on a peer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.signals import clock_share, hangs, utilization_overstated
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_POWER, METRIC_SM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "utilization-overstated"


@dataclass(frozen=True)
class UtilizationOverstated:
    """utilization-overstated's thresholds: the ``utilization_overstated:`` section."""

    sm_above_percent: float = field(
        metadata=threshold(0, 100, "%", "mean SM at or above this reads busy")
    )
    power_share_below: float = field(
        metadata=threshold(0, 1, "", "mean power below this share of the enforced limit")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """High utilization at a fraction of the power limit: the busy time is not work."""
    c = t.utilization_overstated
    out: list[Finding] = []
    # Ranks spinning in a detected hang: collective-hang names the rank to look at.
    spinning = {i for h in hangs(win, t) for i in h.waiting}
    for gpu in win.latest.gpus:
        if gpu.index in spinning:
            continue
        share = utilization_overstated(win, t, gpu.index)
        sm = win.gpu_sm_mean(gpu.index)
        if share is None or sm is None:
            continue
        clocks = clock_share(win, gpu.index)
        power = win.gpu_power_mean(gpu.index)
        out.append(
            Finding(
                rule=ID,
                subject=Subject(gpu.index),
                severity=Severity.INFO,
                label="util overstates work",
                summary=(
                    f"GPU {gpu.index} reads {sm:.0f} % busy but draws {share * 100:.0f} % of "
                    f"its {gpu.power_limit_watts or 0:.0f} W limit: utilization counts time "
                    "with any kernel running, not work done, so this GPU is not "
                    "compute-bound. Likely: light kernels (tiny kernels back to back, a small "
                    "batch), kernels waiting on streamed data (CPU offload, weights over "
                    "PCIe), or a collective spinning while it waits for a peer."
                ),
                advice=(
                    "Profile a few steps (torch.profiler, Nsight Systems): many short kernels "
                    "point at launch overhead (larger batch, CUDA graphs, torch.compile); "
                    "long NCCL kernels at a waiting rank; H2D copies at offload.",
                    "DCGM's SM activity and tensor-pipe activity (dcgmi dmon -e 1002,1004) "
                    "measure the work that utilization does not.",
                ),
                evidence=(
                    Evidence("SM % (mean)", sm, f">= {c.sm_above_percent:g}"),
                    Evidence(
                        "power / limit (mean)",
                        share * 100,
                        f"< {c.power_share_below * 100:g}",
                    ),
                    Evidence("power (mean)", power, "for context", "W", met=None),
                    Evidence(
                        "SM clock / max (median)",
                        None if clocks is None else clocks * 100,
                        "for context",
                        met=None,
                    ),
                ),
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=UtilizationOverstated,
    title="Utilization overstates the work",
    sentence=(
        "The GPU reads busy but draws a fraction of its power limit: its kernels are light, "
        "wait on streamed data or spin in a collective -- not compute-bound."
    ),
    subject="gpu",
    needs=(METRIC_SM, METRIC_POWER),
)
