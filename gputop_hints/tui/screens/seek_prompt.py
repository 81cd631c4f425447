"""The replay's ``/`` prompt: one line of input for the time to jump to."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from gputop_hints.sampling.replay_time import SEEK_FORMATS_TEXT


class SeekPrompt(ModalScreen[str | None]):
    """Asks for a time; dismisses with the text typed (Enter) or None (Esc).

    The text is parsed by the app, which knows the position and the recording's
    span, and which reports a bad time as a notification.
    """

    DEFAULT_CSS = """
    SeekPrompt {
        align: center bottom;
        background: $background 40%;
    }
    SeekPrompt > Vertical {
        width: 80%;
        max-width: 90;
        height: auto;
        margin-bottom: 2;
        padding: 0 1;
        border: round $accent;
        background: $surface;
    }
    SeekPrompt Static {
        color: $foreground-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, span: str) -> None:
        # No id, like the detail screen: a prompt still being removed must not
        # collide with the next one when `/`, Esc, `/` arrive in one read.
        super().__init__()
        self._span = span

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Seek to a time in the recording ({self._span})")
            yield Input(placeholder=SEEK_FORMATS_TEXT, id="seek-input")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
