"""The first frame, drawn before Textual is loaded: process rows on screen at once.

Importing Textual and building the app take ~0.3 s on a small machine, where
nvitop (curses) shows its process rows after ~0.2 s (``bench/vs_nvitop.py``,
"launch -> rows"). The sampler's first tick comes back long before that, so
:class:`FirstFrame` draws it at once on the terminal Textual will draw on, in
the alternate screen Textual then takes over: a header, one line per GPU, and
the process table with the same columns, widths and order as the real one
(:mod:`.widgets.process_columns`), without hints (the engine has not run yet).

The frame is plain text with no colour, drawn once, from the sampler's thread,
only while Textual's driver has not started (:meth:`FirstFrame.hand_over`, under
a lock: the two never write at once). If the monitor stops before the driver
starts (an error building the app), :meth:`FirstFrame.abandon` leaves the
alternate screen so the shell comes back as it was. The terminal's modes (echo,
line discipline) are not touched: Textual saves them when it starts and restores
them at exit, and would otherwise "restore" ours.

Nothing here imports Textual or Rich (``rich.cells`` is Rich's width table, a
small module the columns already use).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from typing import IO

from gputop_hints.model import Snapshot
from gputop_hints.text import visible
from gputop_hints.tui.hint_text import fit_text
from gputop_hints.tui.widgets.process_columns import (
    SORT_KEYS,
    aligned_cell,
    sort_processes,
    visible_columns,
)
from gputop_hints.units import UNKNOWN, human_bytes, percent

MARK = "(starting; hints follow)"
"""On the first frame's header line, and only there: what tells it from the full view."""
ENTER = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"
"""Alternate screen, cursor hidden, home, cleared: where Textual will draw next."""
LEAVE = "\x1b[2J\x1b[?25h\x1b[?1049l"
"""Back to the normal screen with the cursor shown (what Textual does at exit)."""


def is_terminal(stream: IO[str] | None) -> bool:
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


def frame_lines(snapshot: Snapshot, width: int, height: int) -> list[str]:
    """The first frame's lines, each at most ``width`` cells, at most ``height`` lines."""
    if width < 20 or height < 3:
        return []
    lines = [f" gputop-hints  {visible(snapshot.host.hostname)}  {MARK}", ""]
    for gpu in snapshot.gpus:
        name = visible(gpu.name or "GPU")
        vram = f"{human_bytes(gpu.vram_used_bytes)} / {human_bytes(gpu.vram_total_bytes)}"
        lines.append(
            f" GPU {gpu.index}  {name}  SM {percent(gpu.sm_percent)}  "
            f"MEM {percent(gpu.memory_access_percent)}  VRAM {vram}"
        )
    lines.append("")
    lines.extend(_process_lines(snapshot, width))
    return [fit_text(line, width) for line in lines[:height]]


def _process_lines(snapshot: Snapshot, width: int) -> list[str]:
    processes = sort_processes(snapshot.processes, SORT_KEYS[0])
    if not processes:
        return [" no GPU processes"]
    columns = visible_columns(width, containers=any(p.container for p in processes))
    header = " " + "".join(aligned_cell(c.title, c) + " " for c in columns) + "COMMAND"
    rows = [header]
    for proc in processes:
        cells = "".join(aligned_cell(c.cell(proc, None), c) + " " for c in columns)
        rows.append(" " + cells + visible(proc.command or proc.name or UNKNOWN))
    return rows


class FirstFrame:
    """Draws :func:`frame_lines` once on ``stream`` unless Textual has taken over."""

    def __init__(self, stream: IO[str], size: tuple[int, int], owns_stream: bool = False) -> None:
        self._stream = stream
        self._size = size
        self._owns = owns_stream
        self._lock = threading.Lock()
        self._state = "waiting"
        """waiting -> drawn -> handed-over | abandoned; waiting -> handed-over | abandoned."""
        self._tried = threading.Event()

    @classmethod
    def for_terminal(cls) -> FirstFrame | None:
        """On the terminal Textual's driver will draw on (standard error, else the
        controlling terminal: :mod:`.tty_driver`); None when there is none."""
        stderr = sys.__stderr__
        if is_terminal(stderr):
            assert stderr is not None
            stream: IO[str] = stderr
            owns = False
        else:
            tty = controlling_terminal()
            if tty is None:
                return None
            stream, owns = tty, True
        try:
            size = os.get_terminal_size(stream.fileno())
        except OSError:
            if owns:
                stream.close()
            return None
        return cls(stream, (size.columns, size.lines), owns)

    def draw(self, snapshot: Snapshot) -> None:
        """Draw ``snapshot`` (the first call only, and only before :meth:`hand_over`)."""
        with self._lock:
            try:
                if self._state != "waiting":
                    return
                lines = frame_lines(snapshot, *self._size)
                if not lines:
                    return
                self._write(ENTER + "\r\n".join(lines))
                self._state = "drawn"
            finally:
                self._tried.set()

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the first tick to be drawn (or found too small
        to draw); whether it came. The monitor waits a moment for it before importing
        Textual: the import would take the GIL from the sampler and the frame would
        come late (a first tick of the fake node takes ~0.2 s beside the import, a
        few ms alone)."""
        return self._tried.wait(timeout_s)

    def hand_over(self) -> None:
        """Textual's driver starts now: from here on only it draws."""
        with self._lock:
            if self._state in ("waiting", "drawn"):
                self._state = "handed-over"
            self._close()

    def abandon(self) -> None:
        """The monitor stops without Textual having started: undo what was drawn."""
        with self._lock:
            if self._state == "drawn":
                self._write(LEAVE)
            if self._state != "handed-over":
                self._state = "abandoned"
            self._close()

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stream.write(text)
            self._stream.flush()

    def _close(self) -> None:
        if self._owns:
            with contextlib.suppress(OSError):
                self._stream.close()
            self._owns = False


_current: FirstFrame | None = None


def install(frame: FirstFrame | None) -> None:
    """Make ``frame`` the one the driver hands over from when it starts."""
    global _current
    _current = frame


def hand_over_current() -> None:
    """Called by the driver as it starts: the first frame (if any) stops drawing."""
    global _current
    frame, _current = _current, None
    if frame is not None:
        frame.hand_over()
