"""A one-line prompt at the bottom of the screen: the replay's seek (the table's filter
is a bar on the main screen: widgets/filter_bar.py)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class LinePrompt(ModalScreen[str | None]):
    """Asks for one line; dismisses with the text typed (Enter) or None (Esc).

    The app parses the answer and reports a bad one as a notification.
    """

    DEFAULT_CSS = """
    LinePrompt {
        align: center bottom;
        background: $background 40%;
    }
    LinePrompt > Vertical {
        width: 80%;
        max-width: 90;
        height: auto;
        margin-bottom: 2;
        padding: 0 1;
        border: round $accent;
        background: $surface;
    }
    LinePrompt Static {
        color: $foreground-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str, value: str = "") -> None:
        # No id, like the detail screen: a prompt still being removed must not
        # collide with the next one when `/`, Esc, `/` arrive in one read.
        super().__init__()
        self._title = title
        self._placeholder = placeholder
        self._value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._title)
            yield Input(value=self._value, placeholder=self._placeholder)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
