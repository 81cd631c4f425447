"""The installed console script in a real terminal: tmux runs it, we read the screen.

This is the path a person takes: ``gputop-hints`` from the venv's bin/, a real
pseudo-terminal, keys typed with ``send-keys``, the screen read with
``capture-pane``. Locally the test skips when tmux or the installed script is
missing; in CI (``CI=true``) that is a failure instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.tmux

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
SCRIPT = Path(sys.executable).parent / "gputop-hints"


def _require(condition: bool, reason: str) -> None:
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{reason} (CI must run this test)")
    pytest.skip(reason)


class Tmux:
    """A private tmux server running one command in one pane."""

    def __init__(self) -> None:
        self.socket = f"gputop-test-{uuid.uuid4().hex[:8]}"

    def run(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    def start(self, command: list[str], width: int = 80, height: int = 24) -> None:
        env = {"TERM": "xterm-256color"}
        # The pane first runs a placeholder, so that remain-on-exit is set before the
        # real command starts: a command that exits at once still leaves its status.
        self.run(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            str(width),
            "-y",
            str(height),
            *(f"-e{k}={v}" for k, v in env.items()),
            "sleep 600",
        )
        self.run("set-option", "-t", "t", "remain-on-exit", "on")
        self.run("respawn-pane", "-k", "-t", "t", " ".join(command))

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "t")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "t", *keys)

    def pane(self, fmt: str) -> str:
        return self.run("display-message", "-p", "-t", "t", fmt).strip()

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        end = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < end:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared; screen was:\n{screen}")

    def wait_until_exited(self, timeout: float = 10.0) -> int:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.pane("#{pane_dead}") == "1":
                status = self.pane("#{pane_dead_status}")
                for _ in range(10):  # tmux may mark the pane dead before it has the status
                    if status:
                        break
                    time.sleep(0.1)
                    status = self.pane("#{pane_dead_status}")
                if not status:
                    signal = self.pane("#{pane_dead_signal}")
                    raise AssertionError(
                        f"gputop-hints was killed by signal {signal}; screen:\n{self.screen()}"
                    )
                return int(status)
            time.sleep(0.1)
        raise AssertionError(f"gputop-hints did not exit; screen:\n{self.screen()}")

    def kill(self) -> None:
        self.run("kill-server", check=False)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    _require(shutil.which("tmux") is not None, "tmux is not installed")
    _require(SCRIPT.exists(), f"console script not installed at {SCRIPT} (pip install .)")
    t = Tmux()
    try:
        yield t
    finally:
        t.kill()


def test_demo_runs_in_tmux_keys_work_and_q_quits(tmux: Tmux) -> None:
    tmux.start([str(SCRIPT), "--demo"], 80, 24)
    screen = tmux.wait_for("DEMO")
    assert "GPU" in screen
    # The demo's processes appear in the table: command lines of training jobs.
    screen = tmux.wait_for("python")

    tmux.keys("?")
    tmux.wait_for("SM %")  # the help screen explains the metrics
    tmux.keys("Escape")
    time.sleep(0.5)

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
