"""The detail screen's top: who the process is, and its latest numbers in one line."""

from __future__ import annotations

from rich.style import Style
from textual.strip import Strip

from gputop_hints.history import ProcessHistory
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import Line
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.tui.widgets.header import clock_text
from gputop_hints.units import UNKNOWN, human_bytes, percent


class ProcessSummary(StripWidget):
    """PID, GPU, user, state, command, then VRAM, SM, CPU, RSS and workers; notes an exit."""

    DEFAULT_CSS = """
    ProcessSummary {
        height: 3;
        background: $surface;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="detail-summary")
        self.process: ProcessHistory | None = None
        self.gone_since: float | None = None

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        p = palette
        ph = self.process
        if ph is None:
            return [
                Line().add(" process no longer in the history window", p.muted).strip(width, base)
            ]
        proc = ph.latest
        first = Line().add(f" PID {proc.pid}", p.header_accent)
        first.add(f"  GPU {proc.gpu_index}", p.text)
        first.add_text(f"  user {proc.user or UNKNOWN}", p.text)
        first.add(f"  state {proc.state or UNKNOWN}", p.muted)
        if proc.container:
            first.add_text(f"  in {proc.container}", p.text)
        if self.gone_since is not None:
            first.add(f"  exited (last seen {clock_text(self.gone_since)})", p.warning)
        second = Line().add(" ").add_text(proc.command or proc.name or "", p.text)
        third = Line().add(
            f" VRAM {human_bytes(proc.vram_bytes)}  SM {percent(proc.sm_percent)}"
            f"  CPU {percent(proc.cpu_percent)}  RSS {human_bytes(proc.rss_bytes)}"
            f"  workers {len(proc.workers)} using {percent(proc.workers_cpu_percent)}",
            p.muted,
        )
        return [first.strip(width, base), second.strip(width, base), third.strip(width, base)]
