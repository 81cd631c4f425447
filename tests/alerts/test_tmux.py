"""In a real tmux pane: the bell rings (tmux marks the window) and the notification's
OSC bytes reach the pane, wrapped for tmux's passthrough, with nothing of them left
as text on the screen. tmux is a real terminal emulator here; what it passes on to
the terminal outside (with ``allow-passthrough on``) is tmux's own doing."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.tmux_harness import SCRIPT, Tmux, tmux_session

ESC = b"\x1b"


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    yield from tmux_session()


def _env() -> dict[str, str]:
    # The tree under test, also when the console script was installed from another.
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": path} if path else {}


def watch(tmux: Tmux, command: list[str], raw: Path) -> None:
    """Run ``command`` in window 0 with every byte it writes copied to ``raw``, while
    another window is the current one (tmux flags a bell in a window not looked at)."""
    tmux.start(["sh", "-c", 'sleep 1; exec "$@"', "sh", *command], 100, 30, env=_env())
    tmux.run("set-option", "-g", "allow-passthrough", "on")
    tmux.run("pipe-pane", "-o", "-t", "t:0", f"cat >> {raw}")
    tmux.run("new-window", "-t", "t", "sleep 600")


def wait_bytes(raw: Path, wanted: bytes, timeout: float) -> bytes:
    end = time.monotonic() + timeout
    data = b""
    while time.monotonic() < end:
        data = raw.read_bytes() if raw.exists() else b""
        if wanted in data:
            return data
        time.sleep(0.2)
    raise AssertionError(f"{wanted!r} never reached the pane; it got {data[-400:]!r}")


def bell_flag(tmux: Tmux) -> str:
    return tmux.run("display-message", "-p", "-t", "t:0", "#{window_bell_flag}").strip()


def assert_notified(tmux: Tmux, data: bytes) -> None:
    osc9 = ESC + b"Ptmux;" + ESC + ESC + b"]9;gputop-hints: warning on GPU 0: starved: "
    osc777 = ESC + b"Ptmux;" + ESC + ESC + b"]777;notify;gputop-hints: warning on GPU 0;starved:"
    assert osc9 in data
    assert osc777 in data
    assert b"\x07" + ESC + b"\\" in data  # each passthrough ends as tmux wants it
    assert b"pid 4000 python: Set DataLoader(num_workers=" in data
    assert bell_flag(tmux) == "1"
    screen = tmux.run("capture-pane", "-p", "-t", "t:0")
    assert "777" not in screen and "tmux;" not in screen and "^[" not in screen


def test_record_rings_the_bell_and_sends_osc_in_a_real_pane(tmux: Tmux, tmp_path: Path) -> None:
    raw = tmp_path / "pane.bytes"
    out = str(tmp_path / "run.jsonl")
    command = [str(SCRIPT), "record", "-o", out, "--demo", "starved-loader", "--duration", "300"]
    watch(tmux, [*command, "--notify", "bell,osc"], raw)
    data = wait_bytes(raw, b"300 ticks", 60)
    assert_notified(tmux, data)
    assert data.count(b"]777;notify;") == 1  # one finding, one notification


def test_the_monitor_rings_the_bell_and_sends_osc_in_a_real_pane(
    tmux: Tmux, tmp_path: Path
) -> None:
    raw = tmp_path / "pane.bytes"
    command = [str(SCRIPT), "--demo", "starved-loader", "--interval", "0.25", "--notify"]
    watch(tmux, command, raw)
    # The demo's loader starves from its 13th simulated second: some 52 ticks.
    data = wait_bytes(raw, b"]777;notify;", 90)
    data = wait_bytes(raw, b"\x07" + ESC + b"\\\x07", 10)  # the bell after the OSCs
    assert_notified(tmux, data)
    tmux.run("send-keys", "-t", "t:0", "q")
    assert tmux.wait_until_exited() == 0
