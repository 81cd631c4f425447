"""compute-bound: kernels run nearly all the time, steadily -- the healthy state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.signals import (
    power_capped_at_full_clock,
    sm_active,
    spinning_without_work,
    stalled_duty_cycle,
    stragglers,
    tensor_active,
    utilization_overstated,
)
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_SM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "compute-bound"

STEADY_READINGS = 6
""""Steady" is judged over at least this many readings -- what the 6 s window holds at
NVML's 1 s period. One row of a 5 s or one-a-minute log is a single ~1 s reading
(nvidia-smi ``-l N`` does not average over N): one busy reading, or two, is an instant of
a duty cycle, not a GPU that sets the pace. Live data carries NVML's buffered samples
(``nvmlDeviceGetSamples``, several a second), so there the window itself is enough."""


@dataclass(frozen=True)
class ComputeBound:
    """compute-bound's thresholds: the ``compute_bound:`` section of defaults.yaml."""

    sm_above_percent: float = field(metadata=threshold(0, 100, "%", "mean SM at or above this"))
    min_sm_percent: float = field(
        metadata=threshold(0, 100, "%", "and no sample below this (steady)")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Mean SM at or above its bar and no tick far below: the GPU sets the pace."""
    c = t.compute_bound
    out: list[Finding] = []
    # Peers of a straggler read busy while they spin in collectives waiting for
    # it: calling them healthy would mislead.
    waiting = {p for s in stragglers(win, t) for p in s.peers}
    if not any(g.sm_samples for g in win.latest.gpus):
        # Each tick is one reading (a log without NVML's sub-second samples): judge
        # over at least STEADY_READINGS of them. Live, the sample buffer gives several
        # readings a second and the 6 s window already holds dozens.
        win = win.longer(STEADY_READINGS * win.interval_s)
        if win.ticks < STEADY_READINGS:
            return out
    for gpu in win.latest.gpus:
        if gpu.index in waiting:
            continue
        sm = win.gpu_sm_mean(gpu.index)
        low = win.gpu_sm_min(gpu.index)
        if sm is None or low is None or sm < c.sm_above_percent or low < c.min_sm_percent:
            continue
        if spinning_without_work(win, t, gpu.index):
            continue  # "busy" at near-idle power: kernels spin, they do not compute
        if utilization_overstated(win, t, gpu.index) is not None:
            continue  # busy at a fraction of its power: light, waiting or spinning kernels
        if stalled_duty_cycle(win, t, gpu.index) is not None:
            continue  # bursts between idle gaps: the input, not the GPU, sets the pace
        capped = power_capped_at_full_clock(win, t, gpu)
        at_limit = (
            f" It runs at its {gpu.power_limit_watts:.0f} W power limit with clocks at their "
            "maximum: normal under full load."
            if capped and gpu.power_limit_watts
            else ""
        )
        out.append(
            Finding(
                rule=ID,
                subject=Subject(gpu.index),
                severity=Severity.INFO,
                label="compute-bound: healthy",
                summary=(
                    f"Kernels run {sm:.0f} % of the time (never below {low:.0f} %): the input "
                    "pipeline keeps up and the GPU sets the pace." + at_limit
                ),
                advice=(
                    "Next gains are in the model: bf16 autocast on tensor cores, "
                    "torch.compile, fused kernels (e.g. scaled_dot_product_attention).",
                    _fill_advice(win, gpu.index),
                ),
                evidence=(
                    Evidence("SM % (mean)", sm, f">= {c.sm_above_percent:g}"),
                    Evidence("SM % (lowest tick)", low, f">= {c.min_sm_percent:g}"),
                ),
            )
        )
    return out


def _fill_advice(win: Window, index: int) -> str:
    """What fills the busy time: GPM's figures where the GPU gives them, else where to look."""
    active = sm_active(win, index)
    if active is None:
        return "SM % is time busy, not SMs filled: DCGM's sm_occupancy tells how full."
    tensor = tensor_active(win, index)
    tensor_text = f", tensor pipes {tensor:.0f} % of cycles" if tensor is not None else ""
    return (
        f"SM % is time busy; GPM shows how full: SMs active {active:.0f} % of cycles"
        f"{tensor_text} (the SMACT and TENS rows)."
    )


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=ComputeBound,
    title="Compute-bound (healthy)",
    sentence=(
        "Kernels run nearly all the time and never drop far: the input keeps up and the GPU "
        "sets the pace; further gains are in the model."
    ),
    subject="gpu",
    needs=(METRIC_SM,),
    contradicted=lambda win, t, subject: spinning_without_work(win, t, subject.gpu_index),
    judges_level=True,
)
