"""Draw on the terminal even when standard error is redirected.

Textual's Linux driver writes the screen to standard error, so
``gputop-hints 2>err.log`` or ``2>/dev/null`` -- what people do to keep warnings
out of a tmux pane -- drew everything into the file and left the terminal blank.
:class:`TerminalDriver` draws on the controlling terminal (``/dev/tty``) when
standard error is not one, and leaves standard error to the errors.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import IO, Any

from textual.drivers.linux_driver import LinuxDriver

from gputop_hints.tui import partial_output


def _is_terminal(stream: IO[str] | None) -> bool:
    try:
        return stream is not None and os.isatty(stream.fileno())
    except (OSError, ValueError):
        return False


def controlling_terminal() -> io.TextIOWrapper | None:
    """The controlling terminal opened for writing, or None when there is none."""
    try:
        return open("/dev/tty", "w", encoding="utf-8", errors="replace")
    except OSError:
        return None


class TerminalDriver(LinuxDriver):
    """Textual's Linux driver, drawing on /dev/tty when standard error is not a terminal."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._tty: io.TextIOWrapper | None = None
        if not _is_terminal(sys.__stderr__):
            tty = controlling_terminal()
            if tty is not None:
                self._tty = tty
                self._file = tty

    def start_application_mode(self) -> None:
        """Start (or, after a suspend, resume) drawing: what was on screen is not known now."""
        super().start_application_mode()  # type: ignore[no-untyped-call]
        partial_output.forget()

    def close(self) -> None:
        super().close()
        if self._tty is not None:
            with contextlib.suppress(OSError):
                self._tty.close()
            self._tty = None
