"""The fault matrix of the command line and the recorder: signals, bad arguments,
files in the way, readers that go away. Each test's docstring says, in its first
line, what was tried and what the user must see.

Everything runs the real entry point (``python -m gputop_hints``) in a
subprocess, with real signals, real pipes and real files, the way a user or a
job script meets it. Nothing here needs a GPU.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gputop_hints.sources.files.recording import count_ticks, open_recording
from tests.support.paths import REPO

SAFETY_TIMEOUT_S = 30.0
"""A bound on every wait: a hang fails the test instead of stalling the suite."""


def cli_env() -> dict[str, str]:
    """The environment a user's shell gives: no config override, no colour tricks."""
    env = dict(os.environ)
    env.pop("GPUTOP_HINTS_CONFIG", None)
    return env


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``gputop-hints ARGS`` to completion, without a terminal; output captured."""
    return subprocess.run(
        [sys.executable, "-m", "gputop_hints", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        check=False,
    )


def start_recorder(path: Path, *extra: str) -> subprocess.Popen[str]:
    """``gputop-hints record -o PATH --demo`` running, four ticks a second."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gputop_hints",
            "record",
            "-o",
            str(path),
            "--demo",
            "--interval",
            "0.25",
            *extra,
        ],
        cwd=REPO,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_ticks(path: Path, ticks: int, proc: subprocess.Popen[str]) -> None:
    """Until ``path`` holds ``ticks`` ticks (the recorder is then in its loop)."""
    deadline = time.monotonic() + SAFETY_TIMEOUT_S
    while time.monotonic() < deadline:
        if path.exists() and count_ticks(path) >= ticks:
            return
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    raise AssertionError(f"the recorder wrote fewer than {ticks} ticks")


# -- the recorder ---------------------------------------------------------------------------


def test_sighup_closes_a_gzip_recording_with_its_trailer(tmp_path: Path) -> None:
    """SIGHUP (SSH dropped) to record -o X.gz: file complete with gzip trailer, summary, exit 0.

    Left to Python's default, a hang-up killed the recorder mid-stream: no
    trailer (gzip readers report a truncated file) and no summary line.
    """
    path = tmp_path / "run.jsonl.gz"
    proc = start_recorder(path)
    wait_for_ticks(path, 3, proc)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=SAFETY_TIMEOUT_S)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "ticks" in err and str(path) in err
    # gzip raises EOFError on a stream without its trailer; this one reads to the end.
    with gzip.open(path, "rb") as f:
        assert f.read().endswith(b"\n")
    stream = open_recording(path)
    assert len(list(stream)) >= 3
    assert not stream.truncated and stream.info.bad_lines == 0
