"""Job detection without SLURM: cgroup v1/v2 cpuset fixture files and
``detect_job`` from the environment, a fixture ``/proc`` and cgroups alone."""

from __future__ import annotations

import os
from pathlib import Path

from gputop_hints.sources.live.slurm import (
    GpuId,
    cgroup_cpuset,
    detect_job,
)
from tests.sources.live.helpers import (
    JOB,
    PLAIN_CGROUP,
    V1_CGROUP,
    V2_CGROUP,
)
from tests.support.fake_nvml import fake_uuid

# -- cgroups ----------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


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


def test_a_plain_node_is_told_without_loading_the_detection(tmp_path: Path) -> None:
    """may_run_in_job: False exactly where detect_job (no --job) finds no job, so a
    plain node need not load the rest of the package."""
    from gputop_hints.sources.live.slurm import may_run_in_job

    for cgroup, env, expected in [
        (PLAIN_CGROUP, {}, False),
        (PLAIN_CGROUP, {"SLURM_JOB_ID": JOB}, True),
        (PLAIN_CGROUP, {"SLURM_JOBID": JOB}, True),
        (V1_CGROUP, {}, True),
        (V2_CGROUP, {}, True),
    ]:
        proc = tmp_path / f"proc{len(cgroup)}-{len(env)}-{sorted(env)}"
        _write(proc / "self/cgroup", cgroup)
        assert may_run_in_job(env, str(proc)) is expected
        found = detect_job(env, proc=str(proc), cgroup_root=str(tmp_path), use_scontrol=False)
        assert (found is not None) is expected
    assert may_run_in_job({}, str(tmp_path / "no-proc")) is False
