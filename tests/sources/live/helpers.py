"""Small helpers the live-source tests share."""

from __future__ import annotations

import time

import psutil

from gputop_hints.model import Snapshot
from gputop_hints.sources.live import procfs
from gputop_hints.sources.live.source import LiveSource

TICK_S = 0.8
"""A gap between two ticks long enough for a CPU % to mean something."""


def unused_pid() -> int:
    """A pid that no process has (pid_max is at most 2**22 on Linux)."""
    pid = 4_194_000
    while psutil.pid_exists(pid):
        pid -= 1
    return pid


def two_ticks(source: LiveSource, gap_s: float = TICK_S) -> tuple[Snapshot, Snapshot]:
    """Two snapshots ``gap_s`` apart: the second has CPU deltas the first cannot."""
    first = source.sample()
    time.sleep(gap_s)
    return first, source.sample()


def children_of(pid: int) -> list[int]:
    """The pids whose parent is ``pid``, from one pass of the live source's /proc scanner."""
    table = procfs.scan_proc()
    assert table is not None, "these tests need Linux's /proc"
    return list(table.children.get(pid, ()))


# -- SLURM fixture texts ---------------------------------------------------------------

JOB = "4242"

V1_CGROUP = """\
12:cpuset:/slurm/uid_1000/job_4242/step_0/task_0
11:memory:/slurm/uid_1000/job_4242/step_0/task_0
3:cpu,cpuacct:/slurm/uid_1000/job_4242/step_0/task_0
1:name=systemd:/system.slice/slurmd.service
"""
"""``/proc/<pid>/cgroup`` of a task in job 4242, step 0, under cgroup v1."""
V2_CGROUP = "0::/system.slice/n01_slurmstepd.scope/job_4242/step_batch/user/task_0\n"
"""The same under cgroup v2 (the batch step)."""
PLAIN_CGROUP = "0::/user.slice/user-1000.slice/session-3.scope\n"
"""A login session's cgroup: no job."""
