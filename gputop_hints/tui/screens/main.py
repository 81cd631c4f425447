"""The monitor's own screen, under the detail, help and seek screens."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.screen import Screen

from gputop_hints.tui.widgets.steady_render import SteadyRender


class MainScreen(SteadyRender, Screen[None]):
    """Holds the header, GPU panels, CPU panel and process table (the app composes
    them); tells the app when the terminal size changed, so it can re-lay them out."""

    def __init__(self, on_resized: Callable[[], None]) -> None:
        super().__init__(id="main")
        self._on_resized = on_resized

    def on_resize(self, event: events.Resize) -> None:
        self._on_resized()
