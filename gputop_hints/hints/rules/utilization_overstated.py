"""utilization-overstated: a GPU that reads busy at a fraction of its power limit.

NVML's utilization is the share of its sample period in which any kernel ran, not how
much work the SMs did (NVML API reference, ``nvmlUtilization_t``): one light kernel
running all the time reads 100 %. Power says what the busy time is worth: dense compute
at full utilization draws well over half the limit, a board at rest 10-20 % of it. A GPU
at high utilization and about a third of its limit is not compute-bound: its kernels are
light (tiny kernels back to back, a small batch), wait on streamed data (CPU offload,
weights paged over PCIe), or spin (a collective waiting on a peer).

Where the GPU gives GPM's SM activity (Hopper and newer; DCGM ``SMACT`` in a dcgmi log)
it decides instead of power, because it measures what utilization does not: the share
of SM cycles with a warp resident, averaged over the SMs. NVIDIA's DCGM guide calls
SM activity below 0.5 ineffective use of the GPU, so utilization at or above
``sm_above_percent`` with SM activity below ``sm_active_below_percent`` overstates the
work for certain.
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
    sm_active_below_percent: float = field(
        metadata=threshold(0, 100, "%", "with GPM: SM active below this decides instead of power")
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
        verdict = utilization_overstated(win, t, gpu.index)
        sm = win.gpu_sm_mean(gpu.index)
        if verdict is None or sm is None:
            continue
        share = verdict.power_share
        active = verdict.sm_active
        clocks = clock_share(win, gpu.index)
        power = win.gpu_power_mean(gpu.index)
        if active is None:
            assert share is not None
            seen = (
                f"draws {share * 100:.0f} % of its {gpu.power_limit_watts or 0:.0f} W limit"
            )
            decisive: tuple[Evidence, ...] = (
                Evidence(
                    "power / limit (mean)",
                    share * 100,
                    f"< {c.power_share_below * 100:g}",
                ),
            )
        else:
            seen = f"its SMs hold work only {active:.0f} % of the time (GPM SM activity)"
            decisive = (
                Evidence(
                    "SM active % (GPM, mean)",
                    active,
                    f"< {c.sm_active_below_percent:g}: measured, not inferred from power "
                    "-- certain",
                ),
                Evidence(
                    "power / limit (mean)",
                    None if share is None else share * 100,
                    "for context (SM activity decides)",
                    met=None,
                ),
            )
        out.append(
            Finding(
                rule=ID,
                subject=Subject(gpu.index),
                severity=Severity.INFO,
                label="util overstates work",
                summary=(
                    f"GPU {gpu.index} reads {sm:.0f} % busy but {seen}: utilization counts time "
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
                    *decisive,
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
    profiling_sharpens=True,
    id=ID,
    check=check,
    thresholds_class=UtilizationOverstated,
    title="Utilization overstates the work",
    sentence=(
        "The GPU reads busy but draws a fraction of its power limit (or, with GPM, its SMs "
        "hold work a fraction of the time): its kernels are light, wait on streamed data or "
        "spin in a collective -- not compute-bound."
    ),
    subject="gpu",
    needs=(METRIC_SM, METRIC_POWER),
    judges_level=True,
)
