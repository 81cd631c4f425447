"""Progress of a long read: on a terminal only, bytes read of the input's size."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from gputop_hints.cli.progress import ReadProgress
from gputop_hints.sources.files import open_streams
from gputop_hints.text import VisibleStream

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def _a_log() -> Path:
    return FIXTURES / "nvsmi_full_2gpu.csv"


def test_progress_line_counts_bytes_the_reader_has_read(tmp_path: Path) -> None:
    log = _a_log()
    size = log.stat().st_size
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as terminal:
            progress = ReadProgress([str(log)], terminal, show_after_s=0)
            stream = open_streams([str(log)])
            try:
                records = iter(stream)  # held: a dropped generator closes its file
                next(records)
                line = progress.line()
            finally:
                stream.close()
    finally:
        os.close(master)
        os.close(slave)
    assert line is not None
    assert line.startswith(f"reading {log.name}: ")
    # The reader buffers: after the first record the small file's bytes are all read.
    assert line.endswith(f"{size / 1e3:,.0f} of {size / 1e3:,.0f} kB (100 %)")


def test_progress_is_drawn_on_a_terminal_and_erased(tmp_path: Path) -> None:
    log = _a_log()
    master, slave = pty.openpty()
    try:
        terminal = os.fdopen(slave, "w", closefd=False)
        stream = open_streams([str(log)])
        # The CLI's stderr shows control characters visibly; the progress line's
        # own carriage return and erase must still work.
        progress = ReadProgress([str(log)], VisibleStream(terminal), show_after_s=0)
        with progress:
            # Hold the file open until the progress thread has drawn a line.
            seen = b""
            while b"reading" not in seen:
                seen += os.read(master, 4096)
            list(stream)
        stream.close()
        terminal.close()
        seen += os.read(master, 4096)
    finally:
        os.close(master)
        os.close(slave)
    assert f"reading {log.name}".encode() in seen
    assert seen.endswith(b"\r\x1b[K")  # erased at the end: the report starts on a clean line


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    log = _a_log()
    done = subprocess.run(
        [sys.executable, "-m", "gputop_hints", "report", str(log)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode in (0, 1)
    assert "reading" not in done.stderr
    assert "\x1b" not in done.stderr
