"""A process's DataLoader workers (its child processes): state, CPU %, RSS, name."""

from __future__ import annotations

from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip

from gputop_hints.history import ProcessHistory
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import Line
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.units import UNKNOWN, human_bytes, percent


class WorkerList(StripWidget):
    """The process's worker children; as tall as its rows, so the hints get the rest."""

    DEFAULT_CSS = """
    WorkerList {
        height: auto;
        max-height: 40%;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="workers")
        self.process: ProcessHistory | None = None

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        workers = self.process.latest.workers if self.process is not None else ()
        return 2 + len(workers)

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        p = palette
        workers = self.process.latest.workers if self.process is not None else ()
        header = Line().add(f" WORKERS ({len(workers)})", p.header_accent)
        lines = [header.strip(width, base)]
        if not workers:
            lines.append(Line().add(" no child processes", p.muted).strip(width, base))
            return lines
        lines.append(
            Line()
            .add(f" {'PID':>7} {'STATE':>5} {'CPU%':>6} {'RSS':>8}  NAME", p.label)
            .strip(width, base)
        )
        for worker in workers[: max(0, height - 2)]:
            line = Line().add(f" {worker.pid:>7} {worker.state or UNKNOWN:>5} ", p.text)
            line.add(f"{percent(worker.cpu_percent):>6}", p.workers)
            line.add(f" {human_bytes(worker.rss_bytes):>8}  ", p.muted)
            line.add_text(worker.name or "", p.text)
            lines.append(line.strip(width, base))
        return lines
