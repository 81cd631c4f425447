"""Fault matrix, a closed standard output (``>&-``): a cron line or a service unit that closes it.

nvitop calls ``sys.stdout.isatty()`` when imported, so with descriptor 1 closed
(Python's ``sys.stdout`` is then None) ``record`` died with a traceback and left
a 0-byte file, and ``--once`` did too. Each test runs the real command line from
a shell that closes its standard output, as a user's ``>&-`` does: ``record``
records (its work is the file, not what it prints), a command whose work is what
it prints exits with a one-line message on stderr and status 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputop_hints.recording.reader import count_ticks, open_recording
from tests.support.paths import REPO


def run_closed(*args: str) -> subprocess.CompletedProcess[str]:
    """``gputop-hints ARGS >&-`` from ``sh``: the program starts with descriptor 1 closed."""
    env = dict(os.environ)
    env.pop("GPUTOP_HINTS_CONFIG", None)
    return subprocess.run(
        ["sh", "-c", 'exec "$0" -m gputop_hints "$@" >&-', sys.executable, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize("source", [(), ("--demo",)], ids=["live", "demo"])
def test_record_with_stdout_closed_records(tmp_path: Path, source: tuple[str, ...]) -> None:
    """record -o X.jsonl >&- (live and demo): the file holds every tick, summary on stderr, exit 0.

    Live here is this machine as it is (CPU-only without a GPU): the path that
    imports nvitop, which died on ``sys.stdout.isatty()``."""
    path = tmp_path / "run.jsonl"
    result = run_closed("record", "-o", str(path), *source, "--duration", "2")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    assert count_ticks(path) == 2
    assert len(list(open_recording(path))) == 2
    assert "2 ticks" in result.stderr


@pytest.mark.parametrize(
    "args",
    [("--once",), ("--once", "--demo"), ("--json", "--demo")],
    ids=["once-live", "once-demo", "json-demo"],
)
def test_once_with_stdout_closed_says_so_in_one_line(args: tuple[str, ...]) -> None:
    """--once >&- (live, demo, --json): one line on stderr saying stdout is closed, exit 2."""
    result = run_closed(*args)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "standard output is closed" in lines[0], result.stderr
