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

A terminal that hangs up (``tmux kill-server``, an SSH link dropping) reads as
end-of-file, or EIO, at once and for ever: Textual's loop then spins at a full
core, and when the app had already left without stopping the thread, the process
stayed alive spinning (seen: monitors orphaned at ~50-80 % CPU for hours). Here a
hang-up ends the thread and asks the app to quit as on SIGHUP; standard input at
its end that is not a terminal (``< /dev/null``) is no longer watched -- the
monitor keeps drawing and quits on a signal.
"""

from __future__ import annotations

import contextlib
import io
import os
import selectors
import signal
import sys
import threading
from typing import Any

from textual import _time, events
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers import linux_driver
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from gputop_hints.tui import first_frame, partial_output
from gputop_hints.tui.input_decoding import MAX_TERMINAL_CELLS
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


def hang_up() -> None:
    """The terminal is gone: quit as on SIGHUP (the app's handler; once the app has
    left, the default action ends the process, which has nothing left to show)."""
    with contextlib.suppress(OSError):
        os.kill(os.getpid(), signal.SIGHUP)


class _HangUpSafeFile:
    """The stream Textual's writer thread draws on, for a terminal that may hang up.

    On a hung-up terminal a write raises EIO; Textual's writer thread died of it,
    its queue (30 writes) filled, and the next write -- or the quit's
    ``WriterThread.stop`` -- blocked for ever: the process stayed, invisible, after
    its tmux server or SSH session had gone. Here the first failed write asks the
    app to quit (:func:`hang_up`) and later writes are dropped: nobody can see them."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return int(self._stream.write(text))
            except OSError:
                self._hung_up()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError:
                self._hung_up()

    def _hung_up(self) -> None:
        self.gone = True
        hang_up()

    def fileno(self) -> int:
        return int(self._stream.fileno())

    def isatty(self) -> bool:
        return bool(self._stream.isatty())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def within_bounds(message: Message) -> bool:
    """Whether a message from the parser is one a terminal could send: a size, a mouse
    position or a cursor position within :data:`MAX_TERMINAL_CELLS` either way."""
    if isinstance(message, events.Resize):
        width, height = message.size
        return 0 <= width <= MAX_TERMINAL_CELLS and 0 <= height <= MAX_TERMINAL_CELLS
    if isinstance(message, (events.MouseEvent, events.CursorPosition)):
        return abs(message.x) <= MAX_TERMINAL_CELLS and abs(message.y) <= MAX_TERMINAL_CELLS
    return True


class BoundedParser(XTermParser):
    """Textual's input parser, for input nobody vouches for.

    The decoder drops absurd escape sequences (:mod:`.input_decoding`), but Textual's
    parser reads sequences more loosely than a terminal writes them: text after an
    unknown sequence joins it (``ESC[48;1:a`` then ``;99999999999;1;1t`` reads as a
    window size). Here a sequence the parser chokes on is dropped with whatever it
    held -- a fresh parser goes on -- and a size or position past any terminal's is
    not passed on; a crash of the input thread would end the monitor."""

    def __init__(self, debug: bool = False) -> None:
        self._debug_parser = debug
        super().__init__(debug)

    def _restart(self) -> None:
        XTermParser.__init__(self, self._debug_parser)

    def feed(self, data: str) -> list[Message]:
        try:
            messages = list(super().feed(data))
        except ParseError:
            raise
        except Exception:  # any parser bug: drop the sequence, not the app
            self._restart()
            return []
        return [m for m in messages if within_bounds(m)]

    def tick(self) -> list[Message]:
        try:
            messages = list(super().tick())
        except Exception:  # as in feed
            self._restart()
            return []
        return [m for m in messages if within_bounds(m)]


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
        # Decided now: once the terminal hangs up, isatty() on it fails too.
        self._input_is_terminal = os.isatty(self.fileno)
        self._file = _HangUpSafeFile(self._file)  # type: ignore[assignment]

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
        is_terminal = self._input_is_terminal
        parser = BoundedParser(self._debug)
        # Looked up now, as Textual's loop does: input_decoding may have replaced it.
        decoder = linux_driver.getincrementaldecoder("utf-8")()  # type: ignore[attr-defined]
        decode = decoder.decode

        def holding() -> bool:
            """A sequence cut at the end of a read waits in the decoder (input_decoding)."""
            return bool(getattr(decoder, "holding", False))

        def process(events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> bool:
            """Feed what arrived; False once the terminal has hung up."""
            keys = [key for key, mask in events if mask & selectors.EVENT_READ]
            if holding() and all(key.fd != fileno for key in keys):
                # Nothing more came to complete it: the parser has it as it is.
                tail = getattr(decoder, "release", str)()
                for message in parser.feed(tail) if tail else ():
                    self.process_message(message)
            for i, key in enumerate(keys):
                if key.fd == wake:
                    with contextlib.suppress(OSError):
                        os.read(wake, 512)
                    continue
                try:
                    data = os.read(fileno, 4096)
                except OSError:  # EIO: the terminal hung up
                    data = b""
                text = decode(data, final=final and i == len(keys) - 1)
                if not data:
                    selector.unregister(fileno)
                    if is_terminal:
                        return False
                    break  # standard input is a pipe or file at its end: no more keys
                if text:  # "" is the parser's end of input: not a split UTF-8 sequence
                    for message in parser.feed(text):
                        self.process_message(message)
            for message in parser.tick():
                self.process_message(message)
            return True

        try:
            while not self.exit_event.is_set():
                timeout = input_timeout(parser, _time.get_time())
                if holding():
                    timeout = POLL_S if timeout is None else min(timeout, POLL_S)
                if not process(selector.select(timeout)):
                    hang_up()
                    return
            if fileno in selector.get_map():
                selector.unregister(fileno)
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
