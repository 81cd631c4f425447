"""The cost line: GPU-time and energy lost by cause, in words (hints.costs).

One wording for ``report``'s lead, the TUI header and ``--once``::

    8 GPUs x 2.1 h = 16.8 GPU-h; 5.2 GPU-h lost (31 %): input-starved 3.1,
    idle-holding-vram 2.1 (~4.1 kWh drawn meanwhile)

No Textual here.
"""

from __future__ import annotations

from gputop_hints.hints.costs import CostTotals
from gputop_hints.units import duration_text


def gpu_time_text(seconds: float) -> str:
    """GPU-seconds as a person counts them: GPU-h from an hour, GPU-min below."""
    if seconds >= 3600.0:
        hours = seconds / 3600.0
        return f"{hours:.1f} GPU-h" if hours < 100 else f"{hours:,.0f} GPU-h"
    if seconds >= 60.0:
        minutes = seconds / 60.0
        return f"{minutes:.1f} GPU-min" if minutes < 10 else f"{minutes:.0f} GPU-min"
    return f"{seconds:.0f} GPU-s"


def energy_text(joules: float) -> str:
    kwh = joules / 3.6e6
    if kwh >= 1.0:
        return f"{kwh:.1f} kWh"
    return f"{kwh * 1000.0:.0f} Wh"


def _amount(seconds: float, unit_s: float) -> str:
    value = seconds / unit_s
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def cost_line(
    totals: CostTotals,
    gpus: int,
    seconds: float,
    cost_per_gpu_hour: float | None = None,
    top: int = 3,
) -> str:
    """``gpus`` x ``seconds`` observed, what was lost of it and under which causes (the
    ``top`` largest by name, the rest summed), the energy drawn over the lost time where
    power was known, and the money at ``cost_per_gpu_hour``."""
    observed = f"{gpus} GPU{'s' if gpus != 1 else ''} x {duration_text(seconds)}"
    if gpus * seconds >= 60.0:
        observed += f" = {gpu_time_text(gpus * seconds)}"
    lost = totals.lost_s
    if lost < 0.5:
        return f"{observed}; none lost to a warning's cause"
    unit = 3600.0 if lost >= 3600.0 else (60.0 if lost >= 60.0 else 1.0)
    parts = [f"{rule} {_amount(s, unit)}" for rule, s in list(totals.lost_by_rule.items())[:top]]
    rest = sum(list(totals.lost_by_rule.values())[top:])
    if rest >= 0.5:
        parts.append(f"other {_amount(rest, unit)}")
    share = f" ({lost / totals.gpu_seconds * 100:.0f} %)" if totals.gpu_seconds > 0 else ""
    line = f"{observed}; {gpu_time_text(lost)} lost{share}: {', '.join(parts)}"
    extras = []
    if totals.energy_j is not None and totals.energy_j > 0:
        partial = " where power was known" if totals.unpowered_s >= 0.5 else ""
        extras.append(f"~{energy_text(totals.energy_j)} drawn meanwhile{partial}")
    if cost_per_gpu_hour is not None:
        extras.append(f"~{lost / 3600.0 * cost_per_gpu_hour:,.2f} at {cost_per_gpu_hour:g}/GPU-h")
    return line + (f" ({'; '.join(extras)})" if extras else "")


def cost_short(totals: CostTotals, cost_per_gpu_hour: float | None = None) -> str:
    """The running figure for a header: ``lost 1.2 GPU-h (14 %), input-starved most``."""
    lost = totals.lost_s
    if lost < 0.5:
        return "lost: none"
    share = f" ({lost / totals.gpu_seconds * 100:.0f} %)" if totals.gpu_seconds > 0 else ""
    first = next(iter(totals.lost_by_rule))
    money = (
        f", ~{lost / 3600.0 * cost_per_gpu_hour:,.2f}" if cost_per_gpu_hour is not None else ""
    )
    return f"lost {gpu_time_text(lost)}{share}{money}, most to {first}"
