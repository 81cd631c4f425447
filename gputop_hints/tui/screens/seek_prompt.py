"""The replay's ``/`` prompt: one line of input for the time to jump to."""

from __future__ import annotations

from gputop_hints.sampling.replay_time import SEEK_FORMATS_TEXT
from gputop_hints.tui.screens.line_prompt import LinePrompt


class SeekPrompt(LinePrompt):
    """Asks for a time; dismisses with the text typed (Enter) or None (Esc).

    The text is parsed by the app, which knows the position and the recording's
    span, and which reports a bad time as a notification.
    """

    def __init__(self, span: str) -> None:
        super().__init__(f"Seek to a time in the recording ({span})", SEEK_FORMATS_TEXT)

