"""Reading all of /proc only every few seconds: between full passes only the GPU
processes and their known descendants are read, so a new worker shows within
the rescan period and one that exits is gone at the next tick.

Real processes: a parent that starts and stops sleeping children on command,
listed by the fake NVML as a GPU process.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from gputop_hints.sources.live import procfs
from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import FakeGpu, FakeNvml, FakeProc

PARENT_SOURCE = """
import subprocess, sys
sleep = [sys.executable, "-c", "import time; time.sleep(600)"]
kids = [subprocess.Popen(sleep)]
print(kids[0].pid, flush=True)
for line in sys.stdin:
    if line.startswith("add"):
        kids.append(subprocess.Popen(sleep))
    else:  # "drop": the newest child exits and is reaped (no zombie left)
        kids[-1].kill()
        kids.pop().wait()
    print(kids[-1].pid if kids else 0, flush=True)
for kid in kids:
    kid.kill()
    kid.wait()
"""

RESCAN_S = 0.5
GAP_S = 0.1


class Parent:
    """The parent process; ``command`` makes it start or stop a child, and tells its pid."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.first_child = self._answer()

    def _answer(self) -> int:
        assert self.proc.stdout is not None
        return int(self.proc.stdout.readline())

    def command(self, word: str) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()
        return self._answer()


@pytest.fixture
def parent() -> Iterator[Parent]:
    proc = subprocess.Popen(
        [sys.executable, "-c", PARENT_SOURCE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield Parent(proc)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the parent kills and reaps its children, then exits
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _workers(source: LiveSource) -> list[int]:
    (row,) = source.sample().processes
    return [w.pid for w in row.workers]


def test_new_worker_shows_within_the_rescan_period_and_a_gone_one_at_the_next_tick(
    parent: Parent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(procfs, "FULL_RESCAN_S", RESCAN_S)
    with FakeNvml([FakeGpu(0, processes=[FakeProc(parent.pid, sm_util=40)])]):
        source = LiveSource(GAP_S)
        assert _workers(source) == [parent.first_child]
        late = parent.command("add")
        # Each gap is at least GAP_S, so after this many ticks a full pass is due.
        ticks = math.ceil(RESCAN_S / GAP_S) + 1
        seen: list[int] = []
        for _ in range(ticks):
            time.sleep(GAP_S)
            seen = _workers(source)
            if late in seen:
                break
        assert seen == [parent.first_child, late]

        parent.command("drop")  # the late worker exits
        assert _workers(source) == [parent.first_child]
        parent.command("drop")
        assert _workers(source) == []


def test_between_full_passes_only_the_known_tree_is_read(parent: Parent) -> None:
    scanner = procfs.ProcScanner(rescan_s=3600)
    first = scanner.scan({parent.pid})
    assert first is not None and scanner.full_scans == 1
    assert first.children[parent.pid] == [parent.first_child]
    assert len(first.stats) > 3  # the whole host

    late = parent.command("add")
    table = scanner.scan({parent.pid})
    assert table is not None and scanner.full_scans == 1
    assert set(table.stats) == {parent.pid, parent.first_child}  # the new child waits

    # A GPU pid the last full pass was not asked about forces one.
    table = scanner.scan({parent.pid, parent.first_child})
    assert table is not None and scanner.full_scans == 2
    assert sorted(table.children[parent.pid]) == sorted([parent.first_child, late])

    parent.command("drop")
    table = scanner.scan({parent.pid})
    assert table is not None and scanner.full_scans == 2
    assert late not in table.stats
    assert scanner.scan({parent.pid}, full=True) is not None and scanner.full_scans == 3
