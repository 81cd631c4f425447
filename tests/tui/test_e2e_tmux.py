"""The installed console script in a real terminal: tmux runs it, we read the screen.

This is the path a person takes: ``gputop-hints`` from the venv's bin/, a real
pseudo-terminal, keys typed with ``send-keys``, the screen read with
``capture-pane``. Locally the test skips when tmux or the installed script is
missing; in CI (``CI=true``) that is a failure instead.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.tmux_harness import SCRIPT, Tmux, process_state, tmux_session

pytestmark = pytest.mark.tmux


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    yield from tmux_session()


def test_demo_runs_in_tmux_keys_work_and_q_quits(tmux: Tmux) -> None:
    tmux.start([str(SCRIPT), "--demo"], 80, 24)
    screen = tmux.wait_for("DEMO")
    assert "GPU" in screen
    # The demo's processes appear in the table: command lines of training jobs.
    screen = tmux.wait_for("python")
    # The monitor opens no network connection: OpenSSL (~4 MB resident, which asyncio
    # would pull in) stays out of its process (cli/monitor.py hides ssl from asyncio).
    assert "libssl" not in Path(f"/proc/{tmux.pid()}/maps").read_text()

    tmux.keys("?")
    tmux.wait_for("esc Back")  # the help screen explains the metrics
    assert "SM %" in tmux.screen()
    # A lone Esc is told from the start of an escape sequence only by a timeout: the
    # input thread, asleep while no key comes, must still wake for it.
    tmux.keys("Escape")
    tmux.wait_gone("esc Back")

    tmux.keys("p")
    tmux.wait_for("PAUSED")
    tmux.keys("p")

    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


def test_without_a_driver_it_starts_cpu_only_and_says_why(tmux: Tmux) -> None:
    tmux.start([str(SCRIPT)], 100, 30)
    screen = tmux.wait_for("--demo")
    assert "NVML" in screen or "driver" in screen
    assert "CPU" in screen
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


def test_require_gpu_without_a_driver_exits_2(tmux: Tmux) -> None:
    tmux.start([str(SCRIPT), "--require-gpu"], 100, 30)
    assert tmux.wait_until_exited() == 2


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        return process_state(pid) != "Z"
    except OSError:
        return False


def test_the_monitor_ends_when_its_terminal_goes_away(tmux: Tmux) -> None:
    """tmux kill-server (or an SSH session dropping) under a running monitor: it exits.

    On a hung-up terminal every write fails with EIO and every read returns at once;
    Textual's writer thread died of the first, the quit then blocked on its full
    queue, or the input thread spun on the second: monitors stayed behind invisibly
    for hours at 50-80 % of a core. The race depends on where the hang-up lands, so
    the terminal is taken away at several moments (~40 % of tries stayed before)."""
    for delay in (0.0, 0.2, 0.5, 1.0, 1.5, 2.5):
        tmux = Tmux()  # a server per try (the fixture's checked that tmux is there)
        try:
            tmux.start([str(SCRIPT), "--demo"], 120, 40)
            tmux.wait_for("python")
            pid = tmux.pid()
            time.sleep(delay)
            tmux.kill()
            end = time.monotonic() + 15
            while _alive(pid) and time.monotonic() < end:
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
                pytest.fail(f"the monitor (pid {pid}) outlived its terminal (delay {delay} s)")
        finally:
            tmux.kill()


def test_on_a_busy_node_the_troubled_processes_come_first_at_80x24(tmux: Tmux) -> None:
    """Issue 44: the promise is "which process is in trouble". On the README's 8 x 64
    demo at 80 x 24 the rows start with the ones that have a warning, and the header says
    how many processes there are, how many have hints and which rows show."""
    tmux.start([str(SCRIPT), "--demo", "--gpus", "8", "--processes", "64"], 80, 24)
    tmux.wait_for(" of 64 with hints")
    # The hints confirm over a few seconds; the first warning moves its row up.
    tmux.wait_for("% ! ")
    time.sleep(3)  # a few ticks: the other troubled rows join it
    lines = tmux.screen().splitlines()
    header = next(i for i, line in enumerate(lines) if "PID" in line and "HINT" in line)
    assert re.search(r" 1-\d+\s*$", lines[header]), lines[header]  # which rows show
    first = lines[header + 1 : header + 4]
    assert sum(1 for line in first if " ! " in line) >= 2, first
    # A new order brings the top of the list into view, its first row selected.
    tmux.keys("s")
    screen = tmux.wait_for("GPU▲")
    assert re.search(r"GPU▲.* 1-\d+\s*$", screen, re.MULTILINE)
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


def test_explain_draws_the_guide_on_a_terminal_and_prints_markdown_when_piped(
    tmux: Tmux,
) -> None:
    """Issue 44: ``explain`` printed raw Markdown on a terminal. Drawn there (no ``**``,
    no backticks, the heading as text); piped, the Markdown as it is, for a pager or grep."""
    tmux.start([str(SCRIPT), "explain", "warm-up"], 100, 90)  # the whole section fits
    assert tmux.wait_until_exited() == 0
    screen = tmux.screen()
    assert "Warm-up" in screen and "warm_up.max_age_s" in screen
    assert "**" not in screen and "`" not in screen and "## " not in screen
    piped = subprocess.run(
        [str(SCRIPT), "explain", "warm-up"], capture_output=True, text=True, check=True
    )
    assert piped.stdout.startswith("## warm-up") and "**" in piped.stdout
