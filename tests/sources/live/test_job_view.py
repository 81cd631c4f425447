"""The live source following a SLURM job without SLURM: the job's GPUs by
UUID, its real processes with their CPU %, CPU-only mode, a plain node."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import replace

import pynvml
import pytest

from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.history import History
from gputop_hints.sources import SourceUnavailable
from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import GIB, FakeGpu, FakeNvml, FakeProc


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


def test_a_job_id_that_is_not_one_is_refused_before_anything_is_asked() -> None:
    with FakeNvml([FakeGpu(0)]), pytest.raises(SourceUnavailable, match="not a SLURM job id"):
        LiveSource(job="train; rm -rf /")


def test_a_jobs_gpu_with_no_process_is_named_unused(
    job_children: tuple[subprocess.Popen[str], subprocess.Popen[str]],
) -> None:
    """Inside job 990011 with two GPUs (CUDA_VISIBLE_DEVICES by UUID): its process works
    on GPU 0, nothing is on GPU 1. The live source says which GPUs are the job's, and
    unused-gpu names GPU 1 (its wait shortened from ten minutes to half a second)."""
    member, _ = job_children
    gpus = [
        FakeGpu(0, sm=90, processes=[FakeProc(member.pid)]),
        FakeGpu(1, sm=0, vram_used=GIB // 2),
    ]
    env = {"SLURM_JOB_ID": "990011", "CUDA_VISIBLE_DEVICES": f"{gpus[0].uuid},{gpus[1].uuid}"}
    defaults = Thresholds.defaults()
    thresholds = replace(defaults, unused_gpu=replace(defaults.unused_gpu, unused_for_s=0.5))
    engine = HintEngine(thresholds)
    history = History(interval_s=0.3)
    found = []
    with FakeNvml(gpus):
        source = LiveSource(0.3, environ=env)
        for _ in range(4):
            history.append(source.sample())
            found = list(engine.update(history))
            time.sleep(0.3)
        source.close()
    snap = history.latest
    assert snap is not None and snap.job is not None and snap.job.gpu_indices == (0, 1)
    unused = [f for f in found if f.rule == "unused-gpu"]
    assert [f.subject.gpu_index for f in unused] == [1], [f.rule_label for f in found]
    assert "allocated to job 990011" in unused[0].summary and "uses GPU 0" in unused[0].summary
