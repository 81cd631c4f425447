"""How a finding reads on screen: severity marks and colours, the GPU-level prefix.

Shared by the process table's HINT column, the GPU panels' title and compact
marker, the detail screen and the ``?`` help, so the same mark means the same
thing everywhere. Nothing here decides anything about a GPU: it only turns
findings into text.
"""

from __future__ import annotations

from rich.cells import cell_len

from gputop_hints.hints.findings import Finding, Severity

SEVERITY_MARK: dict[Severity, str] = {
    Severity.INFO: "·",
    Severity.WARNING: "!",
    Severity.CRITICAL: "‼",
}
"""One cell that tells severities apart by shape too (monochrome theme, NO_COLOR)."""
SEVERITY_STYLE: dict[Severity, str] = {
    Severity.INFO: "info",
    Severity.WARNING: "warning",
    Severity.CRITICAL: "critical",
}
"""The :class:`~gputop_hints.tui.palette.Palette` field per severity (theme ``severity-*``)."""
GPU_LEVEL_PREFIX = "GPU: "
"""Marks a HINT cell whose finding is about the whole GPU, not the process."""
ELLIPSIS = "…"


def fit_text(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, ending in an ellipsis when something was cut."""
    if cell_len(text) <= width:
        return text
    if width <= 0:
        return ""
    kept: list[str] = []
    used = 0
    for char in text:
        size = cell_len(char)
        if used + size > width - 1:
            break
        kept.append(char)
        used += size
    return "".join(kept) + ELLIPSIS


def hint_text(finding: Finding | None) -> str:
    """What the HINT cell says about ``finding`` (empty when there is none)."""
    if finding is None:
        return ""
    prefix = GPU_LEVEL_PREFIX if finding.subject.pid is None else ""
    return f"{SEVERITY_MARK[finding.severity]} {prefix}{finding.label}"


def duration_text(seconds: float) -> str:
    """45 -> '45s', 725 -> '12m05s', 11000 -> '3h03m'."""
    total = max(0, round(seconds))
    if total < 600:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


OVERLAP_RULE = "overlap-explained"
"""The finding the MEM row explains (not repeated in the title's findings)."""
COMPACT_MARKER_WIDTH = 16


def panel_findings(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """The GPU-level findings the title row / compact marker show (overlap has the MEM row)."""
    return tuple(f for f in findings if f.rule != OVERLAP_RULE)


def findings_text(findings: tuple[Finding, ...], compact: bool = False) -> str:
    """'! memory-bound kernels +1' (rich) or '!memory-bound+1' (compact); '' for none."""
    shown = panel_findings(findings)
    if not shown:
        return ""
    worst = shown[0]
    others = f"+{len(shown) - 1}" if len(shown) > 1 else ""
    if compact:
        name = worst.rule[: COMPACT_MARKER_WIDTH - 1 - len(others)]
        return f"{SEVERITY_MARK[worst.severity]}{name}{others}"
    return f"{SEVERITY_MARK[worst.severity]} {worst.label}" + (f" {others}" if others else "")
