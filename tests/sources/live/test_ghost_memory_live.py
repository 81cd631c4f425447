"""Ghost memory on the live source (issue 48): a real zombie listed by the fake NVML,
a pid NVML lists that this PID namespace does not have, and the monitor's namespace."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from gputop_hints.hints.findings import Finding
from gputop_hints.hints.rules import ghost_memory
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import Window
from gputop_hints.history import History
from gputop_hints.model import Snapshot
from gputop_hints.sources.live.procfs import pid_namespace_nested
from gputop_hints.sources.live.source import LiveSource
from tests.sources.live.helpers import unused_pid
from tests.support.fake_nvml import GIB, FakeGpu, FakeNvml, FakeProc

# The parent forks a child that exits at once, then sleeps without waiting for it.
PARENT = """
import os, sys, time
pid = os.fork()
if pid == 0:
    os._exit(0)
print(pid, flush=True)
time.sleep(600)
"""


def _findings(snapshot: Snapshot) -> list[Finding]:
    history = History(60.0, 1.0)
    history.append(snapshot)
    return ghost_memory.check(Window(history, 6.0), Thresholds.defaults())


def test_a_real_zombie_holding_memory_names_its_parent() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        zombie = int(parent.stdout.readline())
        deadline = time.monotonic() + 5
        while Path(f"/proc/{zombie}/stat").read_text().split(")")[-1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        gpu = FakeGpu(0, vram_used=int(6.2 * GIB), processes=[FakeProc(zombie, 6 * GIB)])
        with FakeNvml([gpu]):
            snap = LiveSource().sample()
        (row,) = snap.processes
        assert (row.state, row.parent_pid) == ("Z", parent.pid)
        assert (row.parent_name or "").startswith("python") and row.parent_state == "S"
        (f,) = _findings(snap)
        assert f.subtype == "defunct"
        assert f"its parent {parent.pid}" in f.summary
        assert f"kill -CHLD {parent.pid}" in f.advice[0]
        assert "fuser -v /dev/nvidia*" in f.advice[1]
    finally:
        parent.kill()
        parent.wait(timeout=5)


def test_a_listed_pid_this_namespace_lacks_is_told_not_a_bare_error() -> None:
    ghost = unused_pid()
    gpu = FakeGpu(0, vram_used=int(4.2 * GIB), processes=[FakeProc(ghost, 4 * GIB)])
    with FakeNvml([gpu]):
        snap = LiveSource().sample()
    nested = pid_namespace_nested()
    assert snap.pid_namespace_nested is nested
    (f,) = _findings(snap)
    assert f.subtype == ("other-namespace" if nested else "exited")
    assert f"pid {ghost}" in f.summary and "no such process" in f.summary


def test_memory_the_listed_processes_do_not_hold_is_found_and_a_healthy_gpu_is_quiet() -> None:
    ghost_gpu = FakeGpu(0, vram_used=30 * GIB, processes=[])
    healthy = FakeGpu(1, vram_used=int(0.4 * GIB), processes=[])
    with FakeNvml([ghost_gpu, healthy]):
        snap = LiveSource().sample()
    (f,) = _findings(snap)
    assert f.subject.gpu_index == 0
    assert "30.0 GiB is held by nothing listed" in f.summary


def test_nspid_with_two_pids_is_a_nested_namespace(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nNSpid:\t48213\t7\n")
    assert pid_namespace_nested(str(status)) is True
    status.write_text("Name:\tpython\nNSpid:\t48213\n")
    assert pid_namespace_nested(str(status)) is False
    status.write_text("Name:\tpython\n")
    assert pid_namespace_nested(str(status)) is None
