"""A private tmux server driving the installed console script, for end-to-end tests.

Shared by ``test_e2e_tmux.py`` and ``test_terminals.py``: start a command in a
pane of a given size and environment, type keys with ``send-keys``, read the
screen with ``capture-pane``, and wait for the pane to exit with its status.
Locally the tests skip when tmux or the script is missing; in CI (``CI=true``)
that is a failure instead.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from gputop_hints.tui.first_frame import MARK as FIRST_FRAME_MARK
from tests.support.ci import IN_CI

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

    def start(
        self,
        command: list[str],
        width: int = 80,
        height: int = 24,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """Run ``command`` in a fresh pane.

        ``env`` adds to TERM=xterm-256color; a variable given as "" is unset.
        """
        # COLUMNS/LINES (set by some pytest plugins) would pin Textual to one size.
        wanted = {"TERM": "xterm-256color", "COLUMNS": "", "LINES": "", **(env or {})}
        unset = [k for k, v in wanted.items() if v == ""]
        env = {k: v for k, v in wanted.items() if v != ""}
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
        # tmux sets TERM in a pane to its own default-terminal: pass the environment
        # on the command line, so the command sees exactly what a user's shell would.
        settings = [f"-u{k}" for k in unset] + [f"{k}={v}" for k, v in env.items()]
        line = " ".join(shlex.quote(part) for part in ["env", *settings, *command])
        # The pane's shell stays to write the command's exit status to a file: tmux's
        # own #{pane_dead_status} was sometimes missing when a command exited fast
        # or under load, so the status comes from the shell instead.
        self.status_file = os.path.join(
            tempfile.gettempdir(), f"{self.socket}-{uuid.uuid4().hex[:6]}.status"
        )
        line = f"{line}; echo $? > {shlex.quote(self.status_file)}"
        self.run("respawn-pane", "-k", "-t", "t", line)

    def screen(self, escapes: bool = False) -> str:
        """The pane's text; with ``escapes`` also its colours and attributes (``-e``)."""
        return self.run("capture-pane", "-p", *(("-e",) if escapes else ()), "-t", "t")

    def resize(self, width: int, height: int) -> None:
        self.run("resize-window", "-t", "t", "-x", str(width), "-y", str(height))

    def pid(self) -> int:
        """The command's process: the child of the pane's shell (``env`` execs the command)."""
        shell = int(self.pane("#{pane_pid}"))
        end = time.monotonic() + 5
        while time.monotonic() < end:
            try:
                with open(f"/proc/{shell}/task/{shell}/children", encoding="ascii") as f:
                    children = f.read().split()
            except OSError:
                children = []
            if children:
                return int(children[0])
            time.sleep(0.05)
        raise AssertionError(f"the pane's shell {shell} has no child process")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "t", *keys)

    def pane(self, fmt: str) -> str:
        return self.run("display-message", "-p", "-t", "t", fmt).strip()

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        """Wait until ``text`` is on the screen of the full view: the plain first frame
        drawn while Textual loads (gputop_hints/tui/first_frame.py) shows process rows
        too, but no key is read and nothing styled yet."""
        end = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < end:
            screen = self.screen()
            if text in screen and FIRST_FRAME_MARK not in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared; {self._diagnosis()}; screen was:\n{screen}")

    def wait_gone(self, text: str, timeout: float = 20.0) -> str:
        """Wait until ``text`` is no longer on the screen (a screen closed)."""
        end = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < end:
            screen = self.screen()
            if text not in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never went; {self._diagnosis()}; screen was:\n{screen}")

    def _diagnosis(self) -> str:
        """What a failed wait leaves to go on: is the command alive, in what state, and
        does its screen still change (a hung event loop draws nothing more)."""
        before = self.screen()
        time.sleep(2.0)
        changing = "still changing" if self.screen() != before else "unchanged for 2 s"
        try:
            pid = self.pid()
            state = process_state(pid)
        except (AssertionError, OSError, IndexError):
            return f"the command is gone; screen {changing}"
        return f"pid {pid} in state {state}; screen {changing}"

    def wait_until_exited(self, timeout: float = 10.0) -> int:
        """Wait for the command to exit; its exit status (128 + N when killed by signal N)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                with open(self.status_file, encoding="ascii") as f:
                    text = f.read().strip()
            except OSError:
                text = ""
            if text:
                os.unlink(self.status_file)
                return int(text)
            time.sleep(0.1)
        raise AssertionError(f"gputop-hints did not exit; screen:\n{self.screen()}")

    def kill(self) -> None:
        self.run("kill-server", check=False)


def process_state(pid: int) -> str:
    """The one-letter state of ``pid`` (``T`` stopped, ``S`` sleeping, ...)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def tmux_session() -> Iterator[Tmux]:
    """Fixture body: a Tmux, killed afterwards; skip (locally) or fail (CI) without tmux."""
    _require(shutil.which("tmux") is not None, "tmux is not installed")
    _require(SCRIPT.exists(), f"console script not installed at {SCRIPT} (pip install .)")
    t = Tmux()
    try:
        yield t
    finally:
        t.kill()
