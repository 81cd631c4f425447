"""Hints that reason about the SLURM job the monitor is attached to."""

from __future__ import annotations

from gputop_hints.hints.engine import HintEngine
from gputop_hints.history import History
from gputop_hints.model import (
    GpuProcess,
    GpuSample,
    HostSample,
    JobInfo,
    Snapshot,
    UtilizationSample,
    WorkerProcess,
)

GIB = 2**30


def _tick(t: float, foreign: float | None, sm: float, cores_busy: float = 98.0) -> Snapshot:
    job = JobInfo(job_id="4242", cpus=(0, 1, 2, 3), foreign_cpu_percent=foreign)
    host = HostSample(
        "node1",
        cpu_percent_per_core=(cores_busy,) * 4 + (5.0,) * 4,
        allowed_cores=(0, 1, 2, 3),
        iowait_percent=0.0,
    )
    gpu = GpuSample(
        index=0,
        sm_percent=sm,
        memory_access_percent=10.0,
        vram_used_bytes=20 * GIB,
        vram_total_bytes=80 * GIB,
        sm_samples=tuple(
            UtilizationSample(t - 1 + i / 6, 95.0 if i < 2 else 0.0) for i in range(6)
        ),
    )
    proc = GpuProcess(
        pid=100,
        gpu_index=0,
        vram_bytes=20 * GIB,
        sm_percent=sm,
        cpu_percent=60.0,
        workers=tuple(WorkerProcess(200 + i, cpu_percent=95.0, state="R") for i in range(6)),
        command="python train.py",
        in_job=True,
    )
    return Snapshot(t, 1.0, host, (gpu,), (proc,), job=job)


def _run(ticks: list[Snapshot]) -> tuple[str, ...]:
    history = History(120, 1.0)
    engine = HintEngine()
    for s in ticks:
        history.append(s)
        engine.update(history)
    return tuple(f"{f.rule_label}@{f.subject}" for f in engine.active)


def test_other_jobs_on_my_cores_are_flagged_on_the_jobs_processes() -> None:
    shown = _run([_tick(float(t), foreign=40.0, sm=30.0) for t in range(20)])
    assert "cores-contended@pid:100" in shown


def test_no_flag_when_the_job_has_its_cores_to_itself() -> None:
    shown = _run([_tick(float(t), foreign=2.0, sm=30.0) for t in range(20)])
    assert not any(s.startswith("cores-contended") for s in shown)


def test_cpu_bound_starvation_names_the_jobs_allocation() -> None:
    history = History(120, 1.0)
    engine = HintEngine()
    for t in range(20):
        history.append(_tick(float(t), foreign=None, sm=30.0))
        engine.update(history)
    [f] = [f for f in engine.active if f.rule == "input-starved"]
    assert f.subtype == "cpu-bound"
    assert "4 of 4 allocated cores" in f.summary
    assert any("--cpus-per-task, now 4" in a and "job 4242" in a for a in f.advice)
    assert any(e.metric == "job 4242's cores busy (4 allocated)" for e in f.evidence)
