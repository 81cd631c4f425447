"""The lab's num_workers=0 trainer watched from outside by the real TUI, as a user would.

The trainer runs on its own (``pipelab.monitor.start_trainer``); a tmux pane runs
bench/pipelab/watch.py, which installs the fake NVML listing the trainer's pid, feeds the
trainer's board into it and starts the full-screen ``gputop-hints``. The trainer's row in
the process table must name the bottleneck; ``q`` quits with status 0, and no process of
the lab's is left behind. Locally the test skips without tmux; in CI that is a failure.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pipelab.monitor import Lab, replace, start_trainer
from pipelab.scenarios import BY_NAME

from tests.support.tmux_harness import Tmux, tmux_session

pytestmark = pytest.mark.tmux

WATCH = Path(__file__).resolve().parents[2] / "bench" / "pipelab" / "watch.py"
DURATION_S = 15.0
STARVED = ("starved: num_workers=0?", "starved: CPU-bound input")
"""The process table's hint for input-starved/num-workers-0, and for input-starved/cpu-bound,
which a contended 2-core host gives instead (docs/lab.md; tests/bench/test_lab.py)."""


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    yield from tmux_session()


def _row(screen: str, pid: int) -> str | None:
    """The screen line holding ``pid`` as a word and a starved hint, if any."""
    for line in screen.splitlines():
        if str(pid) in line.split() and any(label in line for label in STARVED):
            return line
    return None


def _lab_processes(root: Path) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    return [line for line in ps.stdout.splitlines() if "pipelab" in line and str(root) in line]


def test_the_tui_names_input_starvation_on_the_trainers_row(tmux: Tmux) -> None:
    with Lab() as lab:
        settings = BY_NAME["num-workers-0"].settings
        config = replace(lab.config(**settings), duration_s=DURATION_S)
        with start_trainer(config) as trainer:
            watch = [sys.executable, str(WATCH), "--board", str(trainer.board)]
            tmux.start([*watch, "--pid", str(trainer.pid), "--"], 160, 50)
            screen = tmux.wait_for(str(trainer.pid))
            row = None
            # Until the trainer ends: its row goes with it (the wait is bounded by the
            # trainer's own duration, not by a figure of the test's).
            while row is None and trainer.proc.poll() is None:
                screen = tmux.screen()
                row = _row(screen, trainer.pid)
                time.sleep(0.2)
            assert row is not None, f"no starved hint on pid {trainer.pid}'s row:\n{screen}"
            tmux.keys("q")
            assert tmux.wait_until_exited() == 0
        assert trainer.proc.poll() is not None
        assert not _lab_processes(lab.root)
