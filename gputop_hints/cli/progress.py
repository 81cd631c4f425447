"""Progress of a long read on stderr: ``reading run.jsonl: 120 of 800 MB (15 %)``.

Shown only when stderr is a terminal, and only once the read has taken longer
than :data:`SHOW_AFTER_S`, so a quick report prints nothing extra and a report
piped into a file or a job epilog's log never carries progress lines. The line
is redrawn in place and erased when the read ends. Positions come from
:func:`gputop_hints.streams.read_positions`: how far into each input file the
readers are, in bytes on disk.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import TextIO

from gputop_hints.streams import read_positions
from gputop_hints.text import VisibleStream, visible

SHOW_AFTER_S = 1.0
"""A read shorter than this shows no progress at all."""
REDRAW_S = 0.5


class ReadProgress:
    """A context manager drawing the progress of reading ``paths`` on ``stream``."""

    def __init__(
        self,
        paths: Sequence[str],
        stream: TextIO | VisibleStream,
        *,
        show_after_s: float = SHOW_AFTER_S,
    ) -> None:
        self._paths = [os.fspath(p) for p in paths]
        # The line's own \r and erase are ours to send; the file name is made visible.
        self._stream: TextIO = stream.inner if isinstance(stream, VisibleStream) else stream
        self._show_after_s = show_after_s
        self._done = threading.Event()
        self._drawn = False
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ReadProgress:
        try:
            on_terminal = self._stream.isatty()
        except (OSError, ValueError):
            on_terminal = False
        if on_terminal:
            self._thread = threading.Thread(
                target=self._run, name="gputop-hints-progress", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self._drawn:
            self._write("\r\x1b[K")

    def line(self) -> str | None:
        """The progress line now, or None when no input file is being read."""
        sizes = {p: _size(p) for p in self._paths}
        total = sum(sizes.values())
        if total <= 0:
            return None
        positions = read_positions()
        done = sum(min(positions.get(p, 0), size) for p, size in sizes.items())
        name = visible(os.path.basename(self._paths[0]))
        if len(self._paths) > 1:
            name += f" (+{len(self._paths) - 1} more)"
        unit, scale = ("MB", 1e6) if total >= 1e6 else ("kB", 1e3)
        return (
            f"reading {name}: {done / scale:,.0f} of {total / scale:,.0f} {unit} "
            f"({100 * done / total:.0f} %)"
        )

    def _run(self) -> None:
        if self._done.wait(self._show_after_s):
            return
        while not self._done.is_set():
            text = self.line()
            if text is not None:
                self._write(f"\r\x1b[K{text}")
                self._drawn = True
            self._done.wait(REDRAW_S)

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # the terminal went away: progress is not worth an error
            self._done.set()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
