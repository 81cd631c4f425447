"""Draw on the terminal even when standard error is redirected; wait for keys asleep.

Textual's Linux driver writes the screen to standard error, so
``gputop-hints 2>err.log`` or ``2>/dev/null`` -- what people do to keep warnings
out of a tmux pane -- drew everything into the file and left the terminal blank.
:class:`TerminalDriver` draws on the controlling terminal (``/dev/tty``) when
standard error is not one, and leaves standard error to the errors.

Its input thread also polls the terminal every 0.1 s, to notice that it should
stop and to time out a lone Esc: ten wake-ups a second, about a fifth of the
monitor's whole CPU on a small node (``bench/vs_nvitop.py``, 1 x 1). Here the
thread sleeps until a key arrives, a pending escape sequence times out (the
parser's own deadline), or a pipe written when it is told to stop wakes it.
"""

from __future__ import annotations

import contextlib
import io
import os
import selectors
import sys
import threading
from typing import Any

from textual import _time
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers import linux_driver
from textual.drivers.linux_driver import LinuxDriver

from gputop_hints.tui import first_frame, partial_output
from gputop_hints.tui.textual_version import textual_major

TEXTUAL_MAJOR = 8
"""The Textual major version whose input loop :meth:`TerminalDriver.run_input_thread`
follows; on another, Textual's own loop runs."""

POLL_S = 0.1
"""Textual's own poll period: the longest a pending escape sequence waits here too."""


_UNKNOWN = object()


class _WakingEvent(threading.Event):
    """The driver's stop flag: setting it also wakes the input thread's select, through
    a pipe that lives as long as that thread (Textual calls the driver's ``close`` on
    every Ctrl-Z, and starts a new input thread on ``fg``)."""

    def __init__(self) -> None:
        super().__init__()
        self._wake_fd = -1
        self._lock = threading.Lock()

    def attach(self, wake_fd: int) -> None:
        with self._lock:
            self._wake_fd = wake_fd

    def detach(self) -> None:
        """The pipe is closing: never write to its number again (it may be reused)."""
        with self._lock:
            self._wake_fd = -1

    def set(self) -> None:
        super().set()
        with self._lock:
            if self._wake_fd >= 0:
                with contextlib.suppress(OSError):  # full: it is awake already
                    os.write(self._wake_fd, b"x")


def input_timeout(parser: object, now: float) -> float | None:
    """How long the input thread may sleep: until the parser's deadline for a pending
    escape sequence (a lone Esc), at most :data:`POLL_S`; None (until a key or the wake
    pipe) when nothing is pending. A parser without the deadline polls as Textual does."""
    deadline = getattr(parser, "_timeout_time", _UNKNOWN)
    if deadline is None:
        return None
    if not isinstance(deadline, (int, float)):
        return POLL_S
    return max(0.0, min(POLL_S, deadline - now))


class TerminalDriver(LinuxDriver):
    """Textual's Linux driver, drawing on /dev/tty when standard error is not a terminal."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._exit_event = _WakingEvent()
        self.exit_event = self._exit_event
        self._tty: io.TextIOWrapper | None = None
        if not first_frame.is_terminal(sys.__stderr__):
            tty = first_frame.controlling_terminal()
            if tty is not None:
                self._tty = tty
                self._file = tty

    def start_application_mode(self) -> None:
        """Start (or, after a suspend, resume) drawing: what was on screen is not known now."""
        first_frame.hand_over_current()  # the plain first frame, if any, stops here
        super().start_application_mode()  # type: ignore[no-untyped-call]
        partial_output.forget()

    def run_input_thread(self) -> None:
        """Textual's input loop, asleep between keys (see the module's docstring)."""
        if textual_major() != TEXTUAL_MAJOR:
            super().run_input_thread()
            return
        wake, wake_w = os.pipe()
        os.set_blocking(wake, False)
        os.set_blocking(wake_w, False)
        self._exit_event.attach(wake_w)
        selector = selectors.SelectSelector()  # as Textual's: epoll refuses some ttys
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        fileno = self.fileno
        parser = XTermParser(self._debug)
        # Looked up now, as Textual's loop does: input_decoding may have replaced it.
        decode = linux_driver.getincrementaldecoder("utf-8")().decode  # type: ignore[attr-defined]

        def process(events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
            keys = [key for key, mask in events if mask & selectors.EVENT_READ]
            for i, key in enumerate(keys):
                if key.fd == wake:
                    with contextlib.suppress(OSError):
                        os.read(wake, 512)
                    continue
                text = decode(os.read(fileno, 4096), final=final and i == len(keys) - 1)
                if not text:
                    break  # stdin is a pipe at its end
                for message in parser.feed(text):
                    self.process_message(message)
            for message in parser.tick():
                self.process_message(message)

        try:
            while not self.exit_event.is_set():
                process(selector.select(input_timeout(parser, _time.get_time())))
            selector.unregister(self.fileno)
            process(selector.select(POLL_S), final=True)
        finally:
            selector.close()
            self._exit_event.detach()
            for fd in (wake, wake_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            with contextlib.suppress(EOFError, ParseError):
                for _ in parser.feed(""):
                    pass

    # No close() of the terminal here: Textual calls the driver's close() on every
    # Ctrl-Z too (suspend_application_mode) and draws on the same stream after ``fg``;
    # closing /dev/tty there left a blank screen that no longer answered keys. The
    # stream lives as long as the process.
