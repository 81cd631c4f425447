"""WHERE IT WAITS: the process's own stack, read by py-spy (issue 45, docs/stacks.md).

Shows the last stack reading of the process -- each category's share of the main
thread's samples with its top frame (user code first), and where its workers spend
their busy samples -- or what is happening instead: sampling now, or why it could not
(py-spy missing or refused, said with what would allow it). Read-only: the app asks
for the sampling, the classification is :mod:`gputop_hints.stacks`'.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip

from gputop_hints.stacks import WORDS, StackReading
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import Line
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.units import duration_text

MAX_WORKERS_SHOWN = 3


@dataclass(frozen=True)
class StackState:
    """What the section shows: a reading and its age, or sampling now, or nothing yet."""

    reading: StackReading | None = None
    age_s: float | None = None
    sampling: bool = False
    disabled: str | None = None
    """Why stacks are not sampled at all (``--no-stacks``, a replay)."""


class WhereItWaits(StripWidget):
    """The detail view's WHERE IT WAITS section; as tall as its rows."""

    DEFAULT_CSS = """
    WhereItWaits {
        height: auto;
        max-height: 35%;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="where-it-waits")
        self.state = StackState()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._rows())

    def _rows(self) -> list[tuple[str, str]]:
        """(text, style name) of each line: decided here once, drawn in build_lines."""
        s = self.state
        reading = s.reading
        head = " WHERE IT WAITS"
        if reading is not None and reading.samples:
            age = f", {duration_text(s.age_s)} ago" if s.age_s is not None else ""
            head += f"  (py-spy, {reading.samples} samples of the main thread{age}; w again)"
        rows: list[tuple[str, str]] = [(head, "header_accent")]
        if s.disabled:
            return [*rows, (f" {s.disabled}", "muted")]
        if s.sampling:
            rows.append((" sampling its stacks with py-spy (about 3 s)...", "muted"))
            if reading is None:
                return rows
        if reading is None:
            return [*rows, (" press w to sample its stacks (py-spy, ~3 s)", "muted")]
        if not reading.samples:
            why = reading.reason or "py-spy returned no samples"
            return [*rows, (f" not sampled: {why}", "warning")]
        for category in reading.categories:
            where = ""
            if category.top_frames:
                where = category.top_frames[0].frame.where()
            words = WORDS.get(category.name, category.name)
            rows.append((f" {category.share * 100:4.0f} %  {words:<28} {where}", "text"))
        for worker in reading.workers[:MAX_WORKERS_SHOWN]:
            if worker.reason:
                rows.append((f" worker {worker.pid}: not sampled ({worker.reason})", "muted"))
            elif worker.top_frames:
                top = worker.top_frames[0]
                rows.append(
                    (
                        f" worker {worker.pid}: {top.frame.where()} in {top.samples} of "
                        f"{worker.busy_samples} busy samples",
                        "workers",
                    )
                )
            else:
                rows.append((f" worker {worker.pid}: idle in every sample", "muted"))
        rows += [(f" {note}", "muted") for note in reading.notes]
        return rows

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        lines = []
        for text, style in self._rows()[: max(1, height)]:
            lines.append(Line().add_text(text, getattr(palette, style)).strip(width, base))
        return lines
