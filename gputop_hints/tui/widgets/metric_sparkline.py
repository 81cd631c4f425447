"""One metric of one process over the history window, on a fixed scale."""

from __future__ import annotations

from rich.style import Style
from textual.strip import Strip

from gputop_hints.history import Series
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import Line, sparkline
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.units import UNKNOWN

_LABEL = 15
_VALUE = 9
_NOTE = 28


class MetricSparkline(StripWidget):
    """Label, fixed-scale sparkline of a series, current value and the scale used."""

    def __init__(self, label: str, style_name: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="metric-sparkline")
        self.label = label
        self.style_name = style_name
        self.values: list[float | None] = []
        self.high = 100.0
        self.value_text = UNKNOWN
        self.note = ""

    def set_series(self, series: Series | None, high: float, value_text: str, note: str) -> None:
        self.values = series.last() if series is not None else []
        self.high = high
        self.value_text = value_text
        self.note = note
        self.invalidate()

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        note_width = _NOTE if width >= 70 else 0
        spark_width = max(1, width - _LABEL - _VALUE - note_width - 1)
        line = Line().add(f" {self.label:<{_LABEL - 1}}"[:_LABEL], palette.label)
        style: Style = getattr(palette, self.style_name)
        line.add(sparkline(self.values, spark_width, self.high), style)
        line.add(self.value_text.rjust(_VALUE), palette.text)
        if note_width:
            line.add(" ").add(self.note[: note_width - 1], palette.muted)
        return [line.strip(width, base)]
