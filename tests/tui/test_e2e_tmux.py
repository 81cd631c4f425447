"""The installed console script in a real terminal: tmux runs it, we read the screen.

This is the path a person takes: ``gputop-hints`` from the venv's bin/, a real
pseudo-terminal, keys typed with ``send-keys``, the screen read with
``capture-pane``. Locally the test skips when tmux or the installed script is
missing; in CI (``CI=true``) that is a failure instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.tmux_harness import SCRIPT, Tmux, tmux_session

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
