"""The ``/`` filter: a line at the bottom of the monitor's own screen, not a dialog.

A dialog (a modal screen) left the screen under it blank while the text was typed;
this bar sits under the process table, which follows each key as it is typed and
shows the rows that match. Enter keeps the filter, Esc puts back the one before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Input


class FilterBar(Input):
    """Asks for the text a process's command line must hold ("" shows all)."""

    DEFAULT_CSS = """
    FilterBar {
        dock: bottom;
        display: none;
        height: 3;
        border: round $accent;
        border-title-color: $foreground-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self) -> None:
        super().__init__(placeholder="e.g. train.py, vllm, --rank", id="filter-bar")
        self.border_title = "Show only processes whose command line holds (Enter: keep, Esc: undo)"
        self._before = ""
        self._apply: Callable[[str], None] | None = None
        self._done: Callable[[], None] | None = None

    def open(self, current: str, apply: Callable[[str], None], done: Callable[[], None]) -> None:
        """Show the bar with ``current`` in it; ``apply`` each text as it is typed,
        ``done`` when the bar closes (Enter or Esc)."""
        self._before = current
        self._apply, self._done = apply, done
        self.value = current
        self.cursor_position = len(current)
        self.display = True
        self.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._apply is not None and self.display:
            self._apply(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._close()

    def action_cancel(self) -> None:
        if self._apply is not None:
            self._apply(self._before)
        self._close()

    def _close(self) -> None:
        self.display = False
        done, self._done = self._done, None
        self._apply = None
        if done is not None:
            done()
