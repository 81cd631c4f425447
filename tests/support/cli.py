"""Running the real CLI in a child process, as a user would, isolated from their config."""

from __future__ import annotations

import os
import subprocess
import sys


def run_cli(
    *args: str, timeout: float = 120, columns: int | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m gputop_hints ARGS`` with no user config (``$GPUTOP_HINTS_CONFIG``
    unset), stdin closed; ``columns`` fixes the width text output wraps at."""
    env = dict(os.environ)
    env.pop("GPUTOP_HINTS_CONFIG", None)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "gputop_hints", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def reap(proc: subprocess.Popen[str], timeout: float = 20) -> None:
    """Wait for a child that was asked to stop (SIGTERM); kill it if it takes longer
    than ``timeout`` seconds, so no test or benchmark leaves one behind."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
