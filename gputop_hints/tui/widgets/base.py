"""The one pattern every live widget follows: cached strips, rebuilt lazily.

A widget stores the data it was last given and marks itself dirty; its lines
are rebuilt on the next paint (not on every update, and not at all while it
is hidden behind another screen), then served from the cache until the data,
the size or the theme changes. This is what keeps a 1 Hz refresh of a full
160x50 screen at a few percent of one core (see DESIGN.md, "Performance notes").
"""

from __future__ import annotations

from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from gputop_hints.tui.palette import Palette, on_base, palette_for


class StripWidget(Widget):
    """Base for widgets whose whole content is a list of cached :class:`Strip`."""

    DEFAULT_CSS = """
    StripWidget {
        height: 1;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Strip] = []
        self._built_for: Size | None = None
        self._dirty = True
        self.builds = 0
        """How many times the lines were rebuilt (for tests and profiling)."""

    def invalidate(self) -> None:
        """The data changed: rebuild on the next paint."""
        self._dirty = True
        self.refresh()

    @property
    def palette(self) -> Palette:
        return palette_for(self.app)

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        """Return the widget's lines for the given size; subclasses override.

        ``palette`` already sits on ``base`` (the widget's CSS colour and background).
        """
        raise NotImplementedError

    def notify_style_update(self) -> None:
        # CSS changed (a new theme, a new class): colours must be looked up again.
        super().notify_style_update()
        self._dirty = True

    def render_line(self, y: int) -> Strip:
        size = self.size
        if self._dirty or size != self._built_for:
            width, height = size
            base = self.rich_style
            self._lines = self.build_lines(width, height, base, on_base(self.palette, base))
            self._built_for = size
            self._dirty = False
            self.builds += 1
        if 0 <= y < len(self._lines):
            return self._lines[y]
        return Strip.blank(size.width, self.rich_style)

    def text_lines(self) -> list[str]:
        """The current lines as plain text (what a test or a screen reader sees)."""
        width, height = self.size
        if width <= 0 or height <= 0:
            return []
        return [self.render_line(y).text for y in range(height)]
