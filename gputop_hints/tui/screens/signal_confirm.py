"""The confirmation before a signal: names the pid, user and command; ``y`` sends,
``n`` or Esc cancels. Nothing is ever signalled on a single key press."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from gputop_hints.sources.live.signals import SignalTarget
from gputop_hints.text import visible


class SignalConfirmScreen(ModalScreen[bool]):
    """Asks "Send SIGTERM to pid 1234?"; dismisses with True only on ``y``."""

    DEFAULT_CSS = """
    SignalConfirmScreen {
        align: center middle;
    }
    SignalConfirmScreen > Vertical {
        width: 72;
        max-width: 100%;
        height: auto;
        border: round $error;
        background: $surface;
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes, send"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "Cancel"),
    ]

    def __init__(self, target: SignalTarget, signal_name: str) -> None:
        super().__init__()
        self.target = target
        self.signal_name = signal_name

    def compose(self) -> ComposeResult:
        target = self.target
        command = visible(target.command or "?")
        if len(command) > 200:
            command = command[:199] + "…"
        with Vertical():
            question = f"Send {self.signal_name} to pid {target.pid}?"
            yield Static(question, id="signal-question", markup=False)
            user = f"user: {visible(target.user or 'unknown')}"
            yield Static(user, id="signal-user", markup=False)
            yield Static(f"command: {command}", id="signal-command", markup=False)
            yield Static("y: send    n / Esc: cancel", id="signal-keys", markup=False)

    def action_answer(self, send: bool) -> None:
        self.dismiss(send)
