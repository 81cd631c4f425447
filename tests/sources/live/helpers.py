"""Small helpers the live-source tests share."""

from __future__ import annotations

import os
import time

import psutil
import pynvml

from gputop_hints.model import Snapshot
from gputop_hints.sources.live import procfs
from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import GIB, FakeGpu, FakeMig, FakeProc

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


# -- MIG ---------------------------------------------------------------------------

SM_UTIL = pynvml.NVML_GPM_METRIC_SM_UTIL


def mig_gpu(*, parent_lists: bool = True, gpm: bool = False) -> FakeGpu:
    """An H100 cut into a 3g.40gb and two 1g.10gb instances; this test process runs on
    the 3g, another pid on the second 1g."""
    instances = [
        FakeMig(1, 0, "3g.40gb", vram_used=12 * GIB, vram_total=40 * GIB),
        FakeMig(5, 0, "1g.10gb", vram_used=0, vram_total=10 * GIB),
        FakeMig(6, 0, "1g.10gb", vram_used=3 * GIB, vram_total=10 * GIB),
    ]
    if gpm:
        instances[0].gpm = {SM_UTIL: 70.0}
        instances[2].gpm = {SM_UTIL: 10.0}
    return FakeGpu(
        0,
        sm=99,  # what a GPU would answer off MIG: never reported in MIG mode
        mig=instances,
        mig_parent_lists_processes=parent_lists,
        gpm={SM_UTIL: 30.0} if gpm else None,
        processes=[
            FakeProc(os.getpid(), used_bytes=None, sm_util=80, mig=(1, 0)),
            FakeProc(os.getppid(), used_bytes=None, sm_util=80, mig=(6, 0)),
        ],
    )
