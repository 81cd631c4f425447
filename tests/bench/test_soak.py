"""bench/soak.py's short run: the real monitor in a tmux pane on the fake NVML, with
process churn, printing a row per step and its plateau line. No figure is asserted
(they are the benchmark's output, not behaviour); only that the run completes and says
what it measured. Locally it skips without tmux; in CI that is a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tmux_harness import _require

pytestmark = pytest.mark.tmux

ROOT = Path(__file__).resolve().parents[2]
SHORT_RUN = ("--minutes", "0.25", "--step-s", "5", "--gpus", "2", "--procs", "8", "--churn", "60")


def test_a_short_soak_with_churn_prints_its_rows_and_the_plateau() -> None:
    _require(shutil.which("tmux") is not None, "tmux is not installed")
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), *SHORT_RUN],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("soak: fake NVML, 2 GPUs x 8 processes"), out.stdout
    rows = [line.split() for line in lines[2:-1]]
    assert len(rows) == 3, out.stdout  # 15 s in 5 s steps
    assert all(len(row) == 4 for row in rows), out.stdout  # minute, CPU %, RSS MB, replaced
    assert int(rows[-1][3]) > 0, out.stdout  # processes were replaced
    assert lines[-1].startswith("plateau: "), out.stdout
