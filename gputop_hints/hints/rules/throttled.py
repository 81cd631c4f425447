"""throttled: the driver holds the clocks down for power or heat while the GPU is busy.

A busy board reaching its power limit is how GPU boost works: the driver keeps
the draw at the limit and trims the clock only when demand exceeds it by more
than the boost range absorbs (nvidia-smi docs, "Clocks Event Reasons: SW Power
Cap"). At the DEFAULT limit a dense training step therefore often reports
``sw_power_cap`` with the clock still at its maximum: that costs nothing and is
no finding (compute-bound mentions the limit instead). It is a warning when
the clocks actually drop below their maximum, or when the enforced limit is
below the board's default (an administrator ran ``nvidia-smi -pl``). Heat
(``sw_thermal``, ``hw_thermal``) is always a warning: the board is hotter than
its slowdown temperature, and the advice is about cooling, not power.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.signals import clock_share
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import HOLDING_CLOCK_REASONS, METRIC_SM, METRIC_THROTTLE, GpuSample

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "throttled"


@dataclass(frozen=True)
class Throttled:
    """throttled's thresholds: the ``throttled:`` section of defaults.yaml."""

    min_fraction: float = field(
        metadata=threshold(0, 1, "", "share of ticks with a power/thermal reason")
    )
    busy_sm_above_percent: float = field(
        metadata=threshold(0, 100, "%", "only while the GPU is busier than this")
    )
    full_clock_share: float = field(
        metadata=threshold(
            0, 1, "", "clocks at or above this share of their maximum have not dropped"
        )
    )
    near_boost_clock_share: float = field(
        metadata=threshold(
            0,
            1,
            "",
            "without the default limit, clocks at or above this share of their maximum are "
            "the boost range at a stock limit (info)",
        )
    )
    hysteresis: Hysteresis


_POWER_ADVICE = (
    "Check the enforced power limit against the board's default (nvidia-smi -q -d POWER); "
    "a lowered limit (nvidia-smi -pl) makes the node slower for every job on it.",
    "If the limit is the default and clocks still drop, the work draws more than the board "
    "may: expected for dense bf16/fp8 GEMMs; ask the admins before raising it.",
)
_THERMAL_ADVICE = (
    "The board is above its slowdown temperature: check fans, airflow, blanking panels and "
    "inlet temperature with the admins (nvidia-smi -q -d TEMPERATURE shows the slowdown point).",
    "A neighbouring hot card or a blocked intake raises this one's temperature: compare the "
    "node's GPUs side by side.",
)


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Thermal reasons, or power reasons that actually cost clock, while the GPU is busy."""
    c = t.throttled
    out: list[Finding] = []
    reasons = frozenset(HOLDING_CLOCK_REASONS)
    for gpu in win.latest.gpus:
        fraction, seen = win.throttle_fraction(gpu.index, reasons)
        sm = win.gpu_sm_mean(gpu.index)
        if fraction < c.min_fraction or sm is None or sm < c.busy_sm_above_percent:
            continue
        kinds = {HOLDING_CLOCK_REASONS[r] for r in seen}
        share = clock_share(win, gpu.index)
        lowered = gpu.power_limit_lowered
        if "thermal" not in kinds:
            clocks_drop = share is not None and share < c.full_clock_share
            if not clocks_drop and lowered is not True:
                continue  # at its limit, clocks at their maximum: the boost working as designed
            if lowered is None and share is not None and share >= c.near_boost_clock_share:
                # No default limit in the data (older recordings, imported logs): the limit
                # is most likely the stock one, and clocks inside the boost range are GPU
                # boost trading clock for power as designed, not a slowdown.
                out.append(_near_boost(win, gpu, share, fraction, seen, sm, t))
                continue
        # Heat names the cause whenever it is present: its advice is what helps.
        subtype = "thermal" if "thermal" in kinds else "power"
        clock = _clock_text(gpu, share)
        limit = gpu.power_limit_watts
        if subtype == "power":
            why = (
                f"its enforced limit {limit:.0f} W is below the default "
                f"{gpu.default_power_limit_watts:.0f} W"
                if lowered and limit is not None and gpu.default_power_limit_watts
                else f"it draws its {limit:.0f} W limit"
                if limit
                else "it reaches its power limit"
            )
            summary = (
                f"GPU {gpu.index} runs its clocks{clock} because {why} "
                f"({', '.join(sorted(seen))} in {fraction * 100:.0f} % of busy ticks)."
            )
            advice = _POWER_ADVICE
        else:
            temp = win.gpu_temperature_peak(gpu.index)
            hot = f" at up to {temp:.0f} C" if temp is not None else ""
            summary = (
                f"GPU {gpu.index} is too hot{hot}: the driver holds its clocks{clock} "
                f"({', '.join(sorted(seen))} in {fraction * 100:.0f} % of busy ticks)."
            )
            advice = _THERMAL_ADVICE
        out.append(
            Finding(
                rule=ID,
                subtype=subtype,
                subject=Subject(gpu.index),
                severity=Severity.WARNING,
                label=f"throttled: {subtype}",
                summary=summary,
                advice=advice,
                evidence=(
                    Evidence(
                        "ticks with power/thermal reasons",
                        fraction * 100,
                        f">= {c.min_fraction * 100:g}",
                    ),
                    Evidence("SM % (mean)", sm, f">= {c.busy_sm_above_percent:g}"),
                    Evidence(
                        "SM clock / max (median)",
                        None if share is None else share * 100,
                        f"dropped below {c.full_clock_share * 100:g}",
                        "%",
                        met=None if share is None else share < c.full_clock_share,
                    ),
                    Evidence(
                        "temperature (peak)",
                        win.gpu_temperature_peak(gpu.index),
                        "for context",
                        "C",
                        met=None,
                    ),
                    Evidence(
                        "power (mean)",
                        win.gpu_power_mean(gpu.index),
                        f"limit {limit or 0:.0f} W"
                        + (
                            f", default {gpu.default_power_limit_watts:.0f} W"
                            if gpu.default_power_limit_watts
                            else ""
                        ),
                        "W",
                        met=None,
                    ),
                ),
            )
        )
    return out


def _near_boost(
    win: Window,
    gpu: GpuSample,
    share: float,
    fraction: float,
    seen: set[str],
    sm: float,
    t: Thresholds,
) -> Finding:
    """At its power limit with clocks near boost, and no default limit to compare with: info."""
    c = t.throttled
    limit = gpu.power_limit_watts
    at = f" {limit:.0f} W" if limit else ""
    return Finding(
        rule=ID,
        subtype="at-limit",
        subject=Subject(gpu.index),
        severity=Severity.INFO,
        label="at power limit, clocks near boost",
        summary=(
            f"GPU {gpu.index} runs at its{at} power limit with clocks{_clock_text(gpu, share)} "
            f"({', '.join(sorted(seen))} in {fraction * 100:.0f} % of busy ticks): inside the "
            "boost range, GPU boost trading clock for power as designed. This data carries no "
            "default limit, so a lowered limit cannot be told from the stock one."
        ),
        advice=(
            "Compare the enforced limit with the board's default (nvidia-smi -q -d POWER): "
            "only a lowered limit (nvidia-smi -pl) or clocks well below boost cost speed.",
        ),
        evidence=(
            Evidence(
                "ticks with power reasons", fraction * 100, f">= {c.min_fraction * 100:g}"
            ),
            Evidence("SM % (mean)", sm, f">= {c.busy_sm_above_percent:g}"),
            Evidence(
                "SM clock / max (median)",
                share * 100,
                f">= {c.near_boost_clock_share * 100:g} (near boost)",
            ),
            Evidence(
                "power (mean)",
                win.gpu_power_mean(gpu.index),
                f"limit {limit or 0:.0f} W, default unknown",
                "W",
                met=None,
            ),
        ),
    )


def _clock_text(gpu: GpuSample, share: float | None) -> str:
    """ " at 1305 of 1980 MHz" (median share of the window), or "" when clocks are unknown."""
    if share is None or not gpu.max_sm_clock_mhz:
        return " down"
    return f" at {share * gpu.max_sm_clock_mhz:.0f} of {gpu.max_sm_clock_mhz} MHz"


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=Throttled,
    title="Throttled",
    sentence=(
        "The driver holds the clocks down while the GPU is busy: it is hotter than its slowdown "
        "temperature, or its power limit (lowered, or reached with clocks dropping) costs speed."
    ),
    subject="gpu",
    needs=(METRIC_THROTTLE, METRIC_SM),
)
