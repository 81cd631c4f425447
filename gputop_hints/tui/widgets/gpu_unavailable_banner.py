"""The banner shown instead of GPU panels when there are no GPUs to draw: why, and
what to try instead (the demo)."""

from __future__ import annotations

import textwrap

from rich.style import Style
from textual.strip import Strip

from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import Line
from gputop_hints.tui.widgets.base import StripWidget

DEMO_COMMAND = "gputop-hints --demo"
NBSP = "\u00a0"


class GpuUnavailableBanner(StripWidget):
    """Why there are no GPU panels, and what to try instead."""

    DEFAULT_CSS = """
    GpuUnavailableBanner {
        height: 2;
        background: $warning-muted;
        display: none;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="no-gpu")
        self.reason: str | None = None
        self.advice = self.ADVICE

    LEAD = "No GPU panels: "
    ADVICE = (
        "CPU and host figures below are live. To see the full monitor without a GPU, run "
        + DEMO_COMMAND.replace(" ", NBSP)
    )

    PROMETHEUS_ADVICE = (
        "The job's GPUs come back on the first tick Prometheus answers; nothing on "
        "screen is live until then."
    )

    def set_reason(self, reason: str | None, source: str = "live") -> None:
        """Show ``reason`` (None: hide). From ``--prometheus`` the reason is the
        server's, and no figure below is live: the advice says so instead."""
        advice = self.PROMETHEUS_ADVICE if source == "prometheus" else self.ADVICE
        if reason != self.reason or advice != self.advice:
            self.reason = reason
            self.advice = advice
            self.display = reason is not None
            self.invalidate()

    def wrapped(self, width: int) -> tuple[list[str], list[str]]:
        """The reason and the advice, word-wrapped to ``width`` (never cut off)."""
        inner = max(10, width - 2)
        reason = textwrap.wrap(self.LEAD + (self.reason or ""), inner) or [self.LEAD]
        advice = textwrap.wrap(self.advice, inner, break_long_words=False, break_on_hyphens=False)
        return reason, advice

    def height_for(self, width: int) -> int:
        if not self.display:
            return 0
        reason, advice = self.wrapped(width)
        return len(reason) + len(advice)

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        reason, advice = self.wrapped(width)
        lines: list[Strip] = []
        for i, text in enumerate(reason):
            line = Line().add(" ")
            if i == 0:
                line.add(self.LEAD, palette.warning + Style(bold=True))
                text = text[len(self.LEAD) :]
            lines.append(line.add_text(text, palette.text).strip(width, base))
        for text in advice:
            line = Line().add(" ")
            head, sep, _ = text.partition(DEMO_COMMAND.replace(" ", NBSP))
            line.add(head, palette.muted)
            if sep:
                line.add(DEMO_COMMAND, palette.header_accent)
            lines.append(line.strip(width, base))
        return lines
