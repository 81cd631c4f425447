"""Job context without SLURM: parsers, cgroup fixture files, CUDA_VISIBLE_DEVICES
against the fake NVML, and job membership of real child processes."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nvitop.api.libnvml as libnvml
import pytest

from gputop_hints.sources.live.slurm import (
    ForeignLoad,
    GpuId,
    JobMembership,
    cgroup_cpuset,
    cuda_visible_devices_to_nvml,
    detect_job,
    environ_job_id,
    format_cpu_list,
    job_from_cgroup,
    parse_cpu_list,
    parse_cpus_per_node,
    parse_gpu_ids,
    parse_scontrol_job,
    read_proc_rows,
    slurm_gpus_to_nvml,
)
from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import FakeGpu, FakeNvml, FakeProc, fake_uuid

JOB = "4242"


# -- parsers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cores"),
    [
        ("0-3,8,10-11", (0, 1, 2, 3, 8, 10, 11)),
        ("5", (5,)),
        ("", ()),
        (" 0-1 \n", (0, 1)),
        ("3,1,2-2", (1, 2, 3)),
        ("0-6:2", (0, 2, 4, 6)),
    ],
)
def test_cpu_lists(text: str, cores: tuple[int, ...]) -> None:
    assert parse_cpu_list(text) == cores
    assert parse_cpu_list(format_cpu_list(cores)) == cores


@pytest.mark.parametrize("bad", ["a", "3-1", "1-", "0-3:0", "-1"])
def test_bad_cpu_lists(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_cpu_list(bad)


@pytest.mark.parametrize(
    ("text", "counts"),
    [("8", (8,)), ("2(x3)", (2, 2, 2)), ("72(x2),36", (72, 72, 36)), ("4,4", (4, 4))],
)
def test_cpus_per_node(text: str, counts: tuple[int, ...]) -> None:
    assert parse_cpus_per_node(text) == counts


def test_bad_cpus_per_node() -> None:
    with pytest.raises(ValueError):
        parse_cpus_per_node("2(x)")


def test_gpu_ids() -> None:
    assert parse_gpu_ids("0,1") == (0, 1)
    assert parse_gpu_ids("2-3") == (2, 3)
    assert parse_gpu_ids("gpu:0") is None


def test_scontrol_job_detail_for_this_node() -> None:
    text = (
        "JobId=12 JobName=train UserId=ada(1000) GroupId=ada(1000) JobState=RUNNING "
        "NodeList=n[01-02] NumCPUs=16   Nodes=n01 CPU_IDs=0-7 Mem=0 GRES=gpu:2(IDX:0-1)"
        "   Nodes=n02 CPU_IDs=8-15 Mem=0 GRES=gpu:2(IDX:2,3) MinCPUsNode=1 Features=(null)"
    )
    n02 = parse_scontrol_job(text, "n02")
    assert (n02["JobName"], n02["UserId"], n02["JobState"]) == ("train", "ada(1000)", "RUNNING")
    assert (n02["CPU_IDs"], n02["GRES_IDX"]) == ("8-15", "2,3")
    assert parse_scontrol_job(text, "n01")["CPU_IDs"] == "0-7"
    assert "CPU_IDs" not in parse_scontrol_job(text, "elsewhere")  # two groups: ambiguous


# -- cgroups ----------------------------------------------------------------------------

V1_CGROUP = """\
12:cpuset:/slurm/uid_1000/job_4242/step_0/task_0
11:memory:/slurm/uid_1000/job_4242/step_0/task_0
3:cpu,cpuacct:/slurm/uid_1000/job_4242/step_0/task_0
1:name=systemd:/system.slice/slurmd.service
"""
V2_CGROUP = "0::/system.slice/n01_slurmstepd.scope/job_4242/step_batch/user/task_0\n"
PLAIN_CGROUP = "0::/user.slice/user-1000.slice/session-3.scope\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_job_named_by_cgroup_paths() -> None:
    assert job_from_cgroup(V1_CGROUP) == ("4242", "0")
    assert job_from_cgroup(V2_CGROUP) == ("4242", "batch")
    assert job_from_cgroup(PLAIN_CGROUP) == (None, None)
    assert job_from_cgroup("0::/job_42x/step_0\n") == (None, None)


def test_cgroup_v1_cpuset_is_the_jobs_not_the_steps(tmp_path: Path) -> None:
    job_dir = tmp_path / "cpuset/slurm/uid_1000/job_4242"
    _write(job_dir / "cpuset.effective_cpus", "0-3,8\n")
    _write(job_dir / "step_0/task_0/cpuset.effective_cpus", "2\n")
    _write(tmp_path / "cpuset/cpuset.effective_cpus", "0-15\n")
    cores, file = cgroup_cpuset(V1_CGROUP, root=str(tmp_path), job_id=JOB) or ((), "")
    assert cores == (0, 1, 2, 3, 8)
    assert file == str(job_dir / "cpuset.effective_cpus")
    # Without a job id: the process's own cgroup, the step's task.
    assert cgroup_cpuset(V1_CGROUP, root=str(tmp_path)) == (
        (2,),
        str(job_dir / "step_0/task_0/cpuset.effective_cpus"),
    )
    # Another job's id: this cgroup says nothing about it.
    assert cgroup_cpuset(V1_CGROUP, root=str(tmp_path), job_id="7") is None


def test_cgroup_v1_falls_back_to_cpuset_cpus(tmp_path: Path) -> None:
    _write(tmp_path / "cpuset/slurm/uid_1000/job_4242/cpuset.cpus", "4-5\n")
    found = cgroup_cpuset(V1_CGROUP, root=str(tmp_path), job_id=JOB)
    assert found is not None and found[0] == (4, 5)


def test_cgroup_v2_cpuset(tmp_path: Path) -> None:
    job_dir = tmp_path / "system.slice/n01_slurmstepd.scope/job_4242"
    _write(job_dir / "cpuset.cpus.effective", "10-11\n")
    _write(tmp_path / "cpuset.cpus.effective", "0-63\n")
    found = cgroup_cpuset(V2_CGROUP, root=str(tmp_path), job_id=JOB)
    assert found is not None and found[0] == (10, 11)


def test_cgroup_without_a_job_walks_up_to_the_nearest_cpuset(tmp_path: Path) -> None:
    _write(tmp_path / "user.slice/cpuset.cpus.effective", "0-1\n")
    found = cgroup_cpuset(PLAIN_CGROUP, root=str(tmp_path))
    assert found is not None and found[0] == (0, 1)
    assert cgroup_cpuset(PLAIN_CGROUP, root=str(tmp_path), job_id=JOB) is None


def test_job_detected_from_environment_and_fixture_proc(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    _write(proc / "self/cgroup", V2_CGROUP)
    _write(tmp_path / "cg/system.slice/n01_slurmstepd.scope/job_4242/cpuset.cpus.effective", "2-5")
    env = {
        "SLURM_JOB_ID": JOB,
        "SLURM_STEP_ID": "3",
        "SLURM_JOB_NAME": "train",
        "SLURM_JOB_USER": "ada",
        "SLURMD_NODENAME": "n01",
        "SLURM_JOB_CPUS_PER_NODE": "4(x2)",
        "SLURM_JOB_NODELIST": "n01,n02",
        "SLURM_JOB_GPUS": "1,3",
        "CUDA_VISIBLE_DEVICES": "0,1",
    }
    ctx = detect_job(env, proc=str(proc), cgroup_root=str(tmp_path / "cg"), use_scontrol=False)
    assert ctx is not None
    assert (ctx.job_id, ctx.step_id, ctx.name, ctx.user, ctx.node) == (
        JOB,
        "3",
        "train",
        "ada",
        "n01",
    )
    assert ctx.cpus == (2, 3, 4, 5) and ctx.cpus_from.startswith("cgroup ")
    assert ctx.cpus_on_node == 4
    assert ctx.slurm_gpu_ids == (1, 3)
    assert ctx.inside and "SLURM_JOB_ID" in ctx.detected_from
    gpus = [GpuId(i, fake_uuid(i)) for i in range(4)]
    assert ctx.gpu_indices(gpus) == (1, 3)  # SLURM's ids win over the renumbered CUDA ones


def test_no_job_on_a_plain_node(tmp_path: Path) -> None:
    _write(tmp_path / "self/cgroup", PLAIN_CGROUP)
    assert detect_job({}, proc=str(tmp_path), use_scontrol=False) is None


def test_job_found_from_cgroup_alone(tmp_path: Path) -> None:
    """An ssh session adopted into the job (pam_slurm_adopt) has no SLURM_* variables."""
    _write(tmp_path / "self/cgroup", V1_CGROUP)
    ctx = detect_job({}, proc=str(tmp_path), cgroup_root=str(tmp_path), use_scontrol=False)
    assert ctx is not None and ctx.job_id == JOB and ctx.detected_from.startswith("cgroup")
    assert ctx.cpus == tuple(sorted(os.sched_getaffinity(0)))  # nothing better to go on


# -- CUDA_VISIBLE_DEVICES ---------------------------------------------------------------

GPUS = [GpuId(i, fake_uuid(i)) for i in range(4)]


@pytest.mark.parametrize(
    ("value", "indices"),
    [
        (None, None),
        ("", ()),
        ("2,0", (2, 0)),
        ("1,7,2", (1,)),  # stops at the first invalid ordinal, as CUDA does
        ("0,0", ()),  # duplicates: invalid altogether (nvitop)
        (f"{fake_uuid(3)},{fake_uuid(1)}", (3, 1)),
        (fake_uuid(2)[:13], (2,)),  # abbreviated, unique
        ("GPU-0000", ()),  # abbreviated, ambiguous
        (f"MIG-{fake_uuid(2)}/1/0", (2,)),  # MIG-GPU-<uuid>/<gi>/<ci>
        ("NoDevFiles", ()),
        ("-1", ()),
    ],
)
def test_cuda_visible_devices(value: str | None, indices: tuple[int, ...] | None) -> None:
    assert cuda_visible_devices_to_nvml(value, GPUS) == indices


def test_mig_uuid_maps_to_its_parent_through_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [FakeGpu(i) for i in range(3)]
    mig = "MIG-0a1b2c3d-0000-4000-8000-000000000001"
    with FakeNvml(gpus):
        monkeypatch.setattr(
            libnvml,
            "nvmlDeviceGetHandleByUUID",
            lambda uuid: "mig-handle" if uuid == mig else gpus[0],
        )
        monkeypatch.setattr(
            libnvml,
            "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
            lambda handle: gpus[1] if handle == "mig-handle" else None,
        )
        ids = [GpuId(g.index, g.uuid) for g in gpus]
        assert cuda_visible_devices_to_nvml(mig, ids, mig_parent=LiveSource._mig_parent) == (1,)
        assert cuda_visible_devices_to_nvml(mig, ids) == ()  # nobody to ask


def test_slurm_gpu_ids_follow_minor_numbers() -> None:
    gpus = [GpuId(0, minor_number=3), GpuId(1, minor_number=2)]
    assert slurm_gpus_to_nvml([2], gpus) == (1,)
    assert slurm_gpus_to_nvml([1, 0], [GpuId(0), GpuId(1)]) == (1, 0)


def test_live_source_filters_to_the_jobs_gpus_by_uuid() -> None:
    gpus = [FakeGpu(i, sm=10 * i) for i in range(4)]
    env = {"SLURM_JOB_ID": "31337", "CUDA_VISIBLE_DEVICES": f"{gpus[2].uuid},{gpus[0].uuid}"}
    with FakeNvml(gpus):
        source = LiveSource(environ=env)
        snap = source.sample()
        everything = LiveSource(environ=env, all_processes=True).sample()
    assert [g.index for g in snap.gpus] == [0, 2]
    assert snap.job is not None and snap.job.gpu_indices == (0, 2) and snap.job.filtered
    assert [g.index for g in everything.gpus] == [0, 1, 2, 3]
    assert everything.job is not None and not everything.job.filtered


# -- membership of real processes ---------------------------------------------------------

CHILD = """
import os, subprocess, sys, time
if len(sys.argv) > 1:  # spawn a grandchild with an emptied environment
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env={})
print("ready", flush=True)
end = time.monotonic() + 600
while time.monotonic() < end:
    t = time.perf_counter() + 0.01
    while time.perf_counter() < t:
        pass
    time.sleep(0.01)
"""


@pytest.fixture
def job_children() -> Iterator[tuple[subprocess.Popen[str], subprocess.Popen[str]]]:
    env_in = {**os.environ, "SLURM_JOB_ID": "990011"}
    env_out = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    member = subprocess.Popen(
        [sys.executable, "-c", CHILD, "spawn"], env=env_in, stdout=subprocess.PIPE, text=True
    )
    outsider = subprocess.Popen(
        [sys.executable, "-c", CHILD], env=env_out, stdout=subprocess.PIPE, text=True
    )
    try:
        for p in (member, outsider):
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        yield member, outsider
    finally:
        for p in (member, outsider):
            for child in _children(p.pid):
                with contextlib.suppress(OSError):
                    os.kill(child, 9)
            p.kill()
            p.wait(timeout=5)
            if p.stdout is not None:
                p.stdout.close()


def _children(pid: int) -> list[int]:
    rows = read_proc_rows()
    return [r[0] for r in rows if r[4] == pid]


def _tree() -> dict[int, tuple[int, int]]:
    return {pid: (ppid, start) for pid, start, _, _, ppid in read_proc_rows()}


def test_environ_and_process_tree_decide_membership(
    job_children: tuple[subprocess.Popen[str], subprocess.Popen[str]],
) -> None:
    member, outsider = job_children
    assert environ_job_id(member.pid) == "990011"
    assert environ_job_id(outsider.pid) is None
    deadline = time.monotonic() + 5
    while not _children(member.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    (grandchild,) = _children(member.pid)
    assert environ_job_id(grandchild) is None  # env={} : only the tree says it is the job's
    membership = JobMembership("990011")
    members = membership.update(_tree())
    assert member.pid in members
    assert outsider.pid not in members
    assert os.getpid() not in members
    # Nothing read or unreadable tells about the grandchild except the tree -- and
    # with a readable, empty environment it is judged "not the job's" on its own.
    assert grandchild not in members
    assert JobMembership("1").update(_tree()) == frozenset()


def test_live_source_reports_the_jobs_processes_in_cpu_only_mode(
    job_children: tuple[subprocess.Popen[str], subprocess.Popen[str]],
) -> None:
    member, outsider = job_children
    gpu = FakeGpu(0, processes=[FakeProc(member.pid), FakeProc(outsider.pid)])
    env = {"SLURM_JOB_ID": "990011", "SLURM_JOB_NAME": "train"}
    with FakeNvml([gpu]):
        source = LiveSource(0.3, environ=env)
        source.sample()
        time.sleep(0.4)
        snap = source.sample()
        both = LiveSource(0.3, environ=env, all_processes=True).sample()
    assert snap.job is not None and snap.job.job_id == "990011" and snap.job.name == "train"
    assert [(p.pid, p.in_job) for p in snap.processes] == [(member.pid, True)]
    assert {(p.pid, p.in_job) for p in both.processes} == {
        (member.pid, True),
        (outsider.pid, False),
    }
    rows = {p.pid: p for p in snap.job.processes}
    assert member.pid in rows and outsider.pid not in rows
    cpu = rows[member.pid].cpu_percent
    assert cpu is not None and cpu > 10
    assert snap.job.cpu_percent is not None and snap.job.cpu_percent >= cpu
    assert snap.host.allowed_cores == snap.job.cpus


def test_without_nvml_the_job_is_still_reported(
    job_children: tuple[subprocess.Popen[str], subprocess.Popen[str]],
) -> None:
    member, _ = job_children
    import pynvml

    with FakeNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND):
        source = LiveSource(0.3, environ={"SLURM_JOB_ID": "990011"})
        source.sample()
        time.sleep(0.3)
        snap = source.sample()
    assert snap.gpus == () and snap.gpu_unavailable_reason
    assert snap.job is not None and member.pid in {p.pid for p in snap.job.processes}
    assert snap.job.gpu_indices is None


def test_a_plain_node_has_no_job() -> None:
    with FakeNvml([FakeGpu(0)]):
        snap = LiveSource(environ={}).sample()
    assert snap.job is None
    assert snap.host.allowed_cores == tuple(sorted(os.sched_getaffinity(0)))


# -- other jobs on our cores ----------------------------------------------------------------


def test_foreign_load_charges_outsiders_to_their_last_core() -> None:
    load = ForeignLoad(cores=[0, 1])
    rows0 = [(10, 1, 5.0, 0, 1), (11, 1, 5.0, 1, 1), (12, 1, 0.0, 3, 1), (13, 1, 1.0, 0, 2)]
    assert load.update(rows0, members={10}, now=100.0) is None
    rows1 = [
        (10, 1, 6.0, 0, 1),  # member: not foreign
        (11, 1, 6.0, 1, 1),  # outsider on core 1: one core-second
        (12, 1, 2.0, 3, 1),  # outsider elsewhere
        (13, 1, 2.0, 0, 2),  # kernel thread
        (14, 1, 9.0, 0, 1),  # new: no delta yet
    ]
    # 1 core-second over 2 cores x 1 s = 50 %.
    assert load.update(rows1, members={10}, now=101.0) == pytest.approx(50.0)


def test_foreign_load_on_this_machine_is_a_percentage() -> None:
    load = ForeignLoad(sorted(os.sched_getaffinity(0)))
    assert load.update(read_proc_rows(), members=set(), now=time.monotonic()) is None
    time.sleep(0.2)
    value = load.update(read_proc_rows(), members=set(), now=time.monotonic())
    assert value is not None and 0.0 <= value <= 100.0
