"""The plain first frame drawn before Textual loads (tui/first_frame.py).

What a person sees in the first few hundred milliseconds: the GPU and its
processes, in the real table's columns and order, nothing raw from outside the
program, nothing past the terminal's edge; drawn once, never after Textual has
taken over, and undone when the monitor stops before Textual starts.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time

import pytest
from rich.cells import cell_len

from gputop_hints.cli.monitor import _Signalled, _StopOnSignals
from gputop_hints.model import GpuProcess, GpuSample, HostSample, Snapshot
from gputop_hints.sampling.sampler import Sampler
from gputop_hints.tui import first_frame
from gputop_hints.tui.first_frame import ENTER, LEAVE, FirstFrame, frame_lines


def snapshot(command: str = "python train.py --lr 3e-4") -> Snapshot:
    return Snapshot(
        timestamp=1_700_000_000.0,
        interval_s=1.0,
        host=HostSample("node\x1b[2J7", (10.0, 20.0), allowed_cores=(0, 1)),
        gpus=(
            GpuSample(
                index=0,
                name="NVIDIA H100",
                sm_percent=87.0,
                memory_access_percent=31.0,
                vram_used_bytes=40 * 2**30,
                vram_total_bytes=80 * 2**30,
            ),
        ),
        processes=(
            GpuProcess(pid=4242, gpu_index=0, vram_bytes=2**30, command="python small.py"),
            GpuProcess(pid=777, gpu_index=0, vram_bytes=30 * 2**30, command=command),
        ),
    )


def test_the_frame_shows_the_gpu_and_its_processes_in_the_tables_order() -> None:
    lines = frame_lines(snapshot(), 120, 40)
    text = "\n".join(lines)
    assert "GPU 0  NVIDIA H100  SM 87%  MEM 31%  VRAM 40.0GiB / 80.0GiB" in text
    header = next(line for line in lines if "COMMAND" in line)
    assert header.split()[:3] == ["PID", "USER", "GPU"]
    rows = [line for line in lines if "python" in line]
    # The live table's default order: by GPU, then by PID.
    assert [row.split()[0] for row in rows] == ["777", "4242"]
    assert rows[0].endswith("python train.py --lr 3e-4")


def test_nothing_raw_from_outside_reaches_the_terminal() -> None:
    lines = frame_lines(snapshot(command="python evil.py \x1b]0;owned\x07\x1b[31m"), 120, 40)
    text = "\n".join(lines)
    assert "\x1b" not in text and "\x07" not in text
    assert "evil.py" in text  # shown, escaped
    assert "node" in lines[0]  # the hostname's escape is shown, not obeyed


def test_lines_stop_at_the_terminals_edge_and_bottom() -> None:
    long = "python " + "x" * 300
    lines = frame_lines(snapshot(command=long), 60, 6)
    assert len(lines) == 6
    assert all(cell_len(line) <= 60 for line in lines)
    assert frame_lines(snapshot(), 10, 2) == []  # too small to say anything useful


class Terminal(io.StringIO):
    """A stream standing in for the terminal (the frame only writes and flushes)."""


def test_drawn_once_and_never_after_textual_took_over() -> None:
    term = Terminal()
    frame = FirstFrame(term, (100, 30))
    frame.draw(snapshot())
    first = term.getvalue()
    assert first.startswith(ENTER) and "4242" in first
    frame.draw(snapshot(command="python second.py"))
    assert term.getvalue() == first
    frame.hand_over()
    frame.abandon()  # Textual leaves the screen itself: nothing more is written
    assert term.getvalue() == first

    late = Terminal()
    frame = FirstFrame(late, (100, 30))
    frame.hand_over()  # Textual started before the first tick came back
    frame.draw(snapshot())
    assert late.getvalue() == ""


def test_a_monitor_that_stops_before_textual_gives_the_screen_back() -> None:
    term = Terminal()
    frame = FirstFrame(term, (100, 30))
    frame.draw(snapshot())
    frame.abandon()
    assert term.getvalue().endswith(LEAVE)
    untouched = Terminal()
    FirstFrame(untouched, (100, 30)).abandon()  # nothing drawn: nothing to undo
    assert untouched.getvalue() == ""


def test_the_driver_hands_over_the_installed_frame() -> None:
    term = Terminal()
    frame = FirstFrame(term, (100, 30))
    first_frame.install(frame)
    first_frame.hand_over_current()
    frame.draw(snapshot())
    assert term.getvalue() == ""
    first_frame.hand_over_current()  # once is enough; a second call is harmless


def test_only_a_terminal_gets_a_frame() -> None:
    """A pipe (``gputop-hints 2>log`` without a controlling terminal) is not drawn on."""
    read, write = os.pipe()
    leader, follower = os.openpty()
    try:
        with os.fdopen(write, "w", closefd=False) as pipe, os.fdopen(
            follower, "w", closefd=False
        ) as pty:
            assert not first_frame.is_terminal(pipe)
            assert first_frame.is_terminal(pty)
    finally:
        for fd in (read, write, leader, follower):
            os.close(fd)


class CountingSource:
    kind = "test"
    simulated = False

    def __init__(self) -> None:
        self.calls = 0

    def sample(self) -> Snapshot:
        self.calls += 1
        return snapshot()

    def close(self) -> None:
        pass


def test_the_sampler_shows_held_ticks_and_a_failing_preview_stops_nothing() -> None:
    source = CountingSource()
    seen: list[str] = []

    def preview(snap: Snapshot) -> None:
        seen.append(threading.current_thread().name)
        raise RuntimeError("a broken terminal")

    sampler = Sampler(source, 0.25, None, on_held=preview)
    sampler.start()
    try:
        end = time.monotonic() + 10
        while source.calls < 3 and time.monotonic() < end:
            time.sleep(0.01)
        assert source.calls >= 3  # sampling went on past the failing preview
        got: list[Snapshot] = []
        sampler.attach(got.append)
        assert len(got) >= 2  # and the ticks were kept for the app
        assert seen and set(seen) == {"gputop-hints-sampler"}
    finally:
        sampler.stop()


def test_a_signal_while_the_first_frame_is_up_stops_the_monitor_cleanly() -> None:
    """SIGTERM (or SIGHUP) before Textual runs: the monitor stops there (run_tui leaves
    the frame's screen and exits 128 + N) instead of dying inside the alternate screen;
    the handlers are the previous ones again afterwards."""
    before = signal.getsignal(signal.SIGTERM)
    stopping = _StopOnSignals()
    try:
        with pytest.raises(_Signalled) as raised:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs at the next bytecode: never this long
        assert raised.value.signum == signal.SIGTERM
    finally:
        stopping.restore()
    assert signal.getsignal(signal.SIGTERM) is before
