"""GPU processes on the host side: each process's CPU %, RSS, state and
workers, peers that hold a GPU themselves, and processes that exit mid-run.

NVML is faked (tests/support/fake_nvml.py); the processes are real: a small
tree of Python children whose CPU use is read for real, listed as GPU
processes of the fake GPUs.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from gputop_hints.sources.live import procfs
from gputop_hints.sources.live.processes import container_of
from gputop_hints.sources.live.source import LiveSource
from tests.sources.live.helpers import two_ticks, unused_pid
from tests.support.fake_nvml import GIB, FakeGpu, FakeNvml, FakeProc, make_gpus

# Busy for 6 ms, asleep for 14 ms: ~30 % of a core, so a tree of one spinning
# main process and two such workers stays under the 2 cores CI has.
WORKER_SOURCE = """
import time
while True:
    end = time.perf_counter() + 0.006
    while time.perf_counter() < end:
        pass
    time.sleep(0.014)
"""

MAIN_SOURCE = f"""
import subprocess, sys
busy = [subprocess.Popen([sys.executable, "-c", {WORKER_SOURCE!r}]) for _ in range(2)]
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(" ".join(str(p.pid) for p in [*busy, sleeper]), flush=True)
while True:
    pass
"""


@dataclass
class Tree:
    """A training-job look-alike: a spinning main process, 2 busy workers, 1 sleeper."""

    main: int
    busy_workers: tuple[int, int]
    sleeper: int

    @property
    def pids(self) -> list[int]:
        return [self.main, *self.busy_workers, self.sleeper]


def _kill_tree(main: subprocess.Popen[str], descendants: list[int]) -> None:
    """Kill the main process and its children, and wait until none of them runs."""
    procs = [p for p in map(_process_or_none, descendants) if p is not None]
    main.kill()
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    main.wait(timeout=5)
    deadline = time.monotonic() + 5
    while procs and time.monotonic() < deadline:  # dead, even if init has not reaped it yet
        procs = [p for p in procs if _alive(p)]
        time.sleep(0.01)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _process_or_none(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


@pytest.fixture(scope="module")
def tree() -> Iterator[Tree]:
    main = subprocess.Popen([sys.executable, "-c", MAIN_SOURCE], stdout=subprocess.PIPE, text=True)
    pids = [main.pid]
    try:
        assert main.stdout is not None
        line = main.stdout.readline()
        busy_a, busy_b, sleeper = (int(x) for x in line.split())
        pids += [busy_a, busy_b, sleeper]
        yield Tree(main.pid, (busy_a, busy_b), sleeper)
    finally:
        _kill_tree(main, pids[1:])
        if main.stdout is not None:
            main.stdout.close()


SLEEPER_SOURCE = "import time; print('ready', flush=True); time.sleep(600)"


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[str]]]:
    procs = [
        subprocess.Popen([sys.executable, "-c", SLEEPER_SOURCE], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        for p in procs:  # past interpreter start-up, about to sleep
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        time.sleep(0.1)
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=5)
            if p.stdout is not None:
                p.stdout.close()


def test_a_process_on_two_gpus_is_two_rows_with_one_host_reading() -> None:
    me = os.getpid()
    gpus = make_gpus(2, [[me], [me]])
    with FakeNvml(gpus):
        source = LiveSource()
        _, snapshot = two_ticks(source, 0.2)
    rows = snapshot.processes
    assert [(p.pid, p.gpu_index) for p in rows] == [(me, 0), (me, 1)]
    assert rows[0].cpu_percent == rows[1].cpu_percent is not None
    assert rows[0].user == getpass.getuser()


@pytest.mark.parametrize("host_path", ["proc-scan", "psutil-only"])
def test_main_process_and_each_worker_get_their_own_cpu(
    tree: Tree, host_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if host_path == "psutil-only":  # what a host without Linux's /proc gets
        monkeypatch.setattr(procfs, "scan_proc", lambda: None)
    gpu = FakeGpu(0, processes=[FakeProc(tree.main, sm_util=35)])
    main = psutil.Process(tree.main)
    with FakeNvml([gpu]):
        source = LiveSource()
        before, started = main.cpu_times(), time.monotonic()
        first, second = two_ticks(source)
        after, ended = main.cpu_times(), time.monotonic()
    (row_first,) = first.processes
    (row,) = second.processes
    # First sight of a process: no CPU delta yet, so unknown rather than 0.
    assert row_first.cpu_percent is None
    assert all(w.cpu_percent is None for w in row_first.workers)

    # The spinning main process: what psutil saw over (nearly) the same span.
    used = (after.user + after.system) - (before.user + before.system)
    expected = used / (ended - started) * 100
    assert row.cpu_percent is not None
    assert row.cpu_percent == pytest.approx(expected, abs=15)
    # Busy beyond doubt, with slack for a machine shared with other work (the exact
    # figure is checked against psutil just above).
    assert row.cpu_percent > 10
    workers = {w.pid: w for w in row.workers}
    assert set(workers) == {*tree.busy_workers, tree.sleeper}
    for pid in tree.busy_workers:
        cpu = workers[pid].cpu_percent
        assert cpu is not None and 5 < cpu < 80, (pid, cpu)
        rss, name = workers[pid].rss_bytes, workers[pid].name
        assert rss is not None and rss > 0
        assert name is not None and "python" in name
        # Its command line, learnt once per pid like the main process's (issue 23 item 8).
        command = workers[pid].command
        assert command is not None and command.startswith(sys.executable)
    sleeper = workers[tree.sleeper]
    assert sleeper.cpu_percent is not None and sleeper.cpu_percent < 5
    assert sleeper.state == "S"
    assert row.busy_workers(threshold_percent=5) == 2

    assert row.state in {"R", "S"}
    assert row.user == main.username()
    assert row.create_time == main.create_time()
    assert row.rss_bytes is not None and row.rss_bytes > 1_000_000
    assert row.command.startswith(sys.executable + " -c")
    assert row.name is not None and "python" in row.name


def test_a_child_that_holds_a_gpu_itself_is_a_peer_not_a_worker(tree: Tree) -> None:
    rank = tree.busy_workers[0]
    gpus = make_gpus(2, [[tree.main], [rank]])
    with FakeNvml(gpus):
        snapshot = LiveSource().sample()
    main_row, rank_row = snapshot.processes
    assert main_row.pid == tree.main and rank_row.pid == rank
    assert rank not in {w.pid for w in main_row.workers}
    assert {w.pid for w in main_row.workers} == {tree.busy_workers[1], tree.sleeper}


def test_processes_that_exit_or_never_existed_do_not_break_the_tick(
    sleepers: list[subprocess.Popen[str]],
) -> None:
    doomed, survivor = sleepers
    ghost = unused_pid()
    gpu = FakeGpu(0, processes=[FakeProc(p.pid) for p in sleepers] + [FakeProc(ghost)])
    with FakeNvml([gpu]):
        source = LiveSource()
        source.sample()
        doomed.kill()
        doomed.wait(timeout=5)
        # NVML lags behind: it still lists the pid for a moment after the exit.
        stale = {p.pid: p for p in source.sample().processes}
        gpu.processes = [p for p in gpu.processes if p.pid != doomed.pid]
        final = {p.pid: p for p in source.sample().processes}
        tracked = source.tracked_pids

    # Listed by NVML but gone from the host: the row stays (it holds VRAM),
    # with every host-side field unknown.
    for pid in (doomed.pid, ghost):
        row = stale[pid]
        assert row.vram_bytes == 1 * GIB
        assert (row.cpu_percent, row.rss_bytes, row.state, row.user, row.name) == (None,) * 5
        assert row.workers == ()
    assert stale[survivor.pid].state == "S"
    assert stale[survivor.pid].cpu_percent is not None
    # Once NVML drops it, so do we, and the CPU cache forgets it too.
    assert set(final) == {survivor.pid, ghost}
    assert tracked == 1


_MAPS_A_LIBRARY = """
import mmap, sys
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    print("mapped", flush=True)
    sys.stdin.read()
"""


@pytest.mark.parametrize(
    ("library", "expected"),
    [
        ("libtensorflow_framework.so.2", ("tensorflow",)),
        ("libtorch_cuda.so", ("torch",)),
        ("libcudart.so.12", ()),
    ],
)
def test_a_gpu_process_names_the_framework_whose_library_it_has_mapped(
    tmp_path: Path, library: str, expected: tuple[str, ...]
) -> None:
    # A real process maps a file named like the framework's CUDA library; the live
    # source reads its /proc/PID/maps when NVML first lists it.
    lib = str(tmp_path / library)
    with open(lib, "wb") as f:
        f.write(b"\0" * 4096)
    child = subprocess.Popen(
        [sys.executable, "-c", _MAPS_A_LIBRARY, lib],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "mapped"
        with FakeNvml(make_gpus(1, [[child.pid]])):
            _, snapshot = two_ticks(LiveSource(), 0.2)
        [row] = snapshot.processes
        assert row.pid == child.pid
        assert row.frameworks == expected
    finally:
        child.kill()
        child.wait(timeout=5)
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize(
    ("cgroup", "container"),
    [
        # Docker, cgroup v1 with the cgroupfs driver (docs.docker.com, runmetrics).
        (
            "12:memory:/docker/3f2a1b9c0d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a\n",
            "docker 3f2a1b9c0d4e",
        ),
        # Docker, cgroup v2 with the systemd driver.
        (
            "0::/system.slice/docker-3f2a1b9c0d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a.scope\n",
            "docker 3f2a1b9c0d4e",
        ),
        # Kubernetes, systemd driver: the pod's uid in the slice name.
        (
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5c1e2a7b_90ab_"
            "4cde_8f01_23456789abcd.slice/cri-containerd-0123456789abcdef.scope\n",
            "pod 5c1e2a7b-90ab-4cde-8f01-23456789abcd",
        ),
        ("0::/machine.slice/libpod-0123456789abcdef0123.scope/container\n", "podman 0123456789ab"),
        # SLURM's cgroup plugin (v1 layout, then v2 under slurmstepd.scope).
        ("4:memory:/slurm/uid_1000/job_123456/step_0/task_0\n", "slurm job 123456"),
        ("0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n", "slurm job 77"),
        # A login session or a service names no container.
        ("0::/user.slice/user-1000.slice/session-3.scope\n", None),
        ("9:name=systemd:/\n4:memory:/process_api/6dc4992ff1b70396bef2c53886ca890f\n", None),
    ],
)
def test_the_container_or_job_a_cgroup_names(cgroup: str, container: str | None) -> None:
    assert container_of(cgroup) == container


def test_a_gpu_process_row_carries_its_own_cgroups_container() -> None:
    me = os.getpid()
    with open(f"/proc/{me}/cgroup", encoding="utf-8") as f:
        expected = container_of(f.read())
    with FakeNvml(make_gpus(1, [[me]])):
        _, snapshot = two_ticks(LiveSource(), 0.2)
    [row] = snapshot.processes
    assert row.container == expected


_RUNS_A_COMPILER = """
import subprocess, sys
child = subprocess.Popen([sys.argv[1], "600"])
print(child.pid, flush=True)
sys.stdin.read()
child.kill()
"""


def test_a_compiler_a_gpu_process_runs_is_read_as_a_toolchain_child(tmp_path: Path) -> None:
    """A job's compile runs ptxas under it (triton): the live source lists that real
    child among its workers under its /proc name, and the model calls it a toolchain
    process -- what marks the job compiling without py-spy (docs/hints.md, warm-up)."""
    ptxas = tmp_path / "ptxas"
    ptxas.symlink_to(Path("/bin/sleep") if Path("/bin/sleep").exists() else Path("/usr/bin/sleep"))
    job = subprocess.Popen(
        [sys.executable, "-c", _RUNS_A_COMPILER, str(ptxas)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    compiler_pid = 0
    try:
        assert job.stdout is not None
        compiler_pid = int(job.stdout.readline())
        with FakeNvml(make_gpus(1, [[job.pid]])):
            _, snapshot = two_ticks(LiveSource(), 0.2)
        [row] = snapshot.processes
        [worker] = row.workers
        assert (worker.pid, worker.name, worker.is_toolchain) == (compiler_pid, "ptxas", True)
    finally:
        _kill_tree(job, [compiler_pid] if compiler_pid else [])
        for stream in (job.stdin, job.stdout):
            if stream is not None:
                stream.close()
