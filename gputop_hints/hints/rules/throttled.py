"""throttled: the driver holds the clocks down for power or heat while the GPU is busy."""

from __future__ import annotations

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import Window
from gputop_hints.model import HOLDING_CLOCK_REASONS, METRIC_SM, METRIC_THROTTLE

ID = "throttled"


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Power or thermal clock reasons in enough ticks while the GPU is busy."""
    c = t.throttled
    out: list[Finding] = []
    reasons = frozenset(HOLDING_CLOCK_REASONS)
    for gpu in win.latest.gpus:
        fraction, seen = win.throttle_fraction(gpu.index, reasons)
        sm = win.gpu_sm_mean(gpu.index)
        if fraction < c.min_fraction or sm is None or sm < c.busy_sm_above_percent:
            continue
        kinds = sorted({HOLDING_CLOCK_REASONS[r] for r in seen})
        # "power" or "thermal" when one cause holds the clocks, "power-thermal" for both.
        subtype = kinds[0] if len(kinds) == 1 else "power-thermal"
        clock = (
            f" at {gpu.sm_clock_mhz} of {gpu.max_sm_clock_mhz} MHz"
            if gpu.sm_clock_mhz and gpu.max_sm_clock_mhz
            else ""
        )
        out.append(
            Finding(
                rule=ID,
                subtype=subtype,
                subject=Subject(gpu.index),
                severity=Severity.WARNING,
                label=f"throttled: {subtype}",
                summary=(
                    f"GPU {gpu.index} runs its clocks{clock} held down by "
                    f"{', '.join(sorted(seen))} in {fraction * 100:.0f} % of ticks while busy."
                ),
                advice=(
                    "Power: check the power limit (nvidia-smi -q -d POWER) against the card's "
                    "default; a capped node is slower for everyone.",
                    "Thermal: check fans, airflow and inlet temperature with the admins.",
                ),
                evidence=(
                    Evidence(
                        "ticks with power/thermal reasons",
                        fraction * 100,
                        f">= {c.min_fraction * 100:g}",
                    ),
                    Evidence("SM % (mean)", sm, f">= {c.busy_sm_above_percent:g}"),
                    Evidence("temperature", gpu.temperature_c, "for context", "C", met=None),
                    Evidence(
                        "power",
                        gpu.power_watts,
                        f"limit {gpu.power_limit_watts or 0:.0f} W",
                        "W",
                        met=None,
                    ),
                ),
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds="throttled",
    title="Throttled",
    sentence="The driver holds the clocks down for power or heat while the GPU is busy.",
    subject="gpu",
    needs=(METRIC_THROTTLE, METRIC_SM),
)
