"""Where an alert event goes: bytes for the terminal, and ``--notify-cmd``.

:func:`terminal_bytes` only makes the bytes (the TUI hands them to its driver,
``record`` to its terminal); nothing here draws. The event's strings are already
safe (:func:`gputop_hints.text.visible`); a ``;`` would end an OSC 777 field
early, so the title loses its semicolons.

Inside tmux (``$TMUX`` set) an OSC sequence reaches the outer terminal only as a
DCS passthrough, ``ESC P tmux; ... ESC \\`` with each inner ESC doubled, and only
with ``set -g allow-passthrough on`` in tmux.conf. The bell needs no wrapping:
tmux passes it on by itself (``bell-action``).

:class:`CommandChannel` runs the command in its own thread, one at a time, with
the event as one JSON object on standard input; a tick only puts the event in a
bounded queue (a full queue drops it and counts the drop).
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
from collections.abc import Callable, Sequence

from gputop_hints.alerts.engine import AlertEvent
from gputop_hints.text import visible

BEL = "\a"
ESC = "\x1b"


def osc_sequences(event: AlertEvent) -> tuple[str, str]:
    """OSC 9 (iTerm2, WezTerm, kitty, foot, Windows Terminal) and OSC 777 (rxvt-unicode,
    Ghostty, VTE terminals) for ``event``."""
    title = event.title.replace(";", ",")
    body = event.body
    return (
        f"{ESC}]9;{title}: {body}{BEL}",
        f"{ESC}]777;notify;{title};{body}{BEL}",
    )


def tmux_passthrough(sequence: str) -> str:
    """``sequence`` wrapped for tmux's passthrough: ``ESC P tmux; ... ESC \\``."""
    return f"{ESC}Ptmux;{sequence.replace(ESC, ESC + ESC)}{ESC}\\"


def terminal_bytes(event: AlertEvent, channels: frozenset[str], in_tmux: bool) -> str:
    """What to write to the terminal for ``event`` on the ``bell`` and ``osc`` channels."""
    out: list[str] = []
    if "osc" in channels:
        out.extend(tmux_passthrough(seq) if in_tmux else seq for seq in osc_sequences(event))
    if "bell" in channels:
        out.append(BEL)
    return "".join(out)


_STOP = object()


class CommandChannel:
    """``--notify-cmd``: one worker thread runs the command per event, never a tick."""

    def __init__(
        self,
        argv: Sequence[str],
        timeout_s: float,
        queue_size: int,
        on_problem: Callable[[str], None],
    ) -> None:
        self.argv = tuple(argv)
        self.timeout_s = timeout_s
        self._queue: queue.Queue[object] = queue.Queue(maxsize=queue_size)
        self._on_problem = on_problem
        self._reported = False
        self._closing = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self.dropped = 0
        """Events dropped because the queue was full (the command is slower than alerts)."""
        self.ran = 0
        self.failed = 0
        self._thread = threading.Thread(target=self._work, name="notify-cmd", daemon=True)
        self._thread.start()

    def send(self, event: AlertEvent) -> None:
        """Queue ``event`` for the command; never waits."""
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    def close(self, wait_s: float | None = None) -> None:
        """Let the queued events go out for at most ``wait_s`` (None: one command's
        timeout); then drop what is left and stop a command still running."""
        wait = self.timeout_s if wait_s is None else wait_s
        self._closing.set()
        with contextlib.suppress(queue.Full):  # full: the worker sees _closing once it drains
            self._queue.put(_STOP, timeout=wait)
        self._thread.join(wait)
        if not self._thread.is_alive():
            return
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
            self.dropped += 1
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(_STOP)
        proc = self._proc
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
        self._thread.join(1.0)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            assert isinstance(item, AlertEvent)
            self._run(item)
            if self._closing.is_set() and self._queue.empty():
                return

    def _run(self, event: AlertEvent) -> None:
        data = (json.dumps(event.to_dict()) + "\n").encode("utf-8")
        name = visible(self.argv[0])
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            self._problem(f"cannot run {name}: {exc.strerror or exc}")
            return
        self._proc = proc
        try:
            _out, err = proc.communicate(data, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self._problem(f"{name} did not finish within {self.timeout_s:g} s (stopped)")
            return
        finally:
            self._proc = None
        self.ran += 1
        if proc.returncode != 0:
            said = err.decode("utf-8", "replace").strip().splitlines()
            tail = f": {visible(said[-1][:200])}" if said else ""
            how = (
                f"was killed by signal {-proc.returncode}"
                if proc.returncode < 0
                else f"exited with status {proc.returncode}"
            )
            self._problem(f"{name} {how}{tail}")

    def _problem(self, message: str) -> None:
        self.failed += 1
        if self._reported:
            return
        self._reported = True
        self._on_problem(
            f"--notify-cmd: {message}; alerts still go to the command, failures are not "
            "reported again"
        )
