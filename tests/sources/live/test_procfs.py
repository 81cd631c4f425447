"""The one /proc scanner against real processes: what each process's stat line
gives (parent, state, CPU time, RSS, start, last core), names that would trip
a naive parser, and processes that are gone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from gputop_hints.sources.live import procfs
from tests.sources.live.helpers import unused_pid

# A name with a space and both parentheses: "pid (comm) state ..." must still
# split at the right place. /proc/self/comm holds at most 15 bytes.
ODD_NAME = "tr) (ain x 1"

CHILD_SOURCE = f"""
import os, sys, time
with open("/proc/self/comm", "w") as f:
    f.write({ODD_NAME!r})
ballast = bytearray(64 * 1024 * 1024)  # 64 MiB, touched: resident
for i in range(0, len(ballast), 4096):
    ballast[i] = 1
print("ready", flush=True)
end = time.monotonic() + 600
while time.monotonic() < end:
    t = time.perf_counter() + 0.01
    while time.perf_counter() < t:
        pass
    time.sleep(0.01)
"""


@pytest.fixture
def child() -> Iterator[psutil.Process]:
    """A half-busy child with an awkward name and 64 MiB resident, pinned to one core."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD_SOURCE], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        os.sched_setaffinity(proc.pid, {min(os.sched_getaffinity(0))})
        time.sleep(0.2)  # run on the pinned core and use some CPU time
        yield psutil.Process(proc.pid)
    finally:
        proc.kill()
        proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()


def _scan() -> procfs.ProcTable:
    table = procfs.scan_proc()
    assert table is not None, "these tests need Linux's /proc"
    return table


def test_a_child_is_read_as_psutil_reads_it(child: psutil.Process) -> None:
    table = _scan()
    times = child.cpu_times()
    stat = table.stats[child.pid]
    assert stat.ppid == os.getpid()
    assert child.pid in table.children[os.getpid()]
    assert stat.state in {"R", "S"}
    cpu_s = stat.cpu_ticks / procfs.CLOCK_TICKS
    assert cpu_s > 0
    assert cpu_s == pytest.approx(times.user + times.system, abs=0.1)
    assert stat.rss_pages * procfs.PAGE_SIZE == pytest.approx(
        child.memory_info().rss, abs=4 * 1024 * 1024
    )
    assert stat.rss_pages * procfs.PAGE_SIZE > 64 * 1024 * 1024
    assert stat.last_cpu == min(os.sched_getaffinity(0))
    # The start time identifies the process across ticks: it is psutil's creation time.
    started = psutil.boot_time() + stat.start / procfs.CLOCK_TICKS
    assert started == pytest.approx(child.create_time(), abs=0.05)


def test_a_name_with_spaces_and_parentheses_does_not_shift_the_fields(
    child: psutil.Process,
) -> None:
    assert procfs.process_name(child.pid) == ODD_NAME
    stat = _scan().stats[child.pid]
    assert stat.ppid == os.getpid()
    assert stat.state in {"R", "S"}


def test_tree_and_cpu_rows_describe_the_same_pass(child: psutil.Process) -> None:
    table = _scan()
    stat = table.stats[child.pid]
    assert table.tree()[child.pid] == (os.getpid(), stat.start)
    rows = {row[0]: row for row in table.cpu_rows()}
    assert set(rows) == set(table.stats)
    assert rows[child.pid] == (
        child.pid,
        stat.start,
        stat.cpu_ticks / procfs.CLOCK_TICKS,
        stat.last_cpu,
        os.getpid(),
    )


def test_cpu_time_grows_between_passes_of_a_busy_process(child: psutil.Process) -> None:
    first = _scan()
    time.sleep(0.4)
    second = _scan()
    assert second.taken_at > first.taken_at
    used = second.stats[child.pid].cpu_ticks - first.stats[child.pid].cpu_ticks
    assert used > 0
    assert second.stats[child.pid].start == first.stats[child.pid].start


def test_a_process_that_exited_is_not_in_the_next_pass() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=10)  # exited and reaped
    assert proc.pid not in _scan().stats
    assert procfs.process_name(proc.pid) is None
    assert procfs.process_name(unused_pid()) is None
