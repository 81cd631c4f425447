"""Family 1: two or three tenants on one GPU.

Without MPS, contexts of different processes time-slice on the GPU: their kernel
shares add up to the device's utilization (CUDA Programming Guide, "Compute
modes"; NVIDIA MPS docs, "Why MPS"). NVML keeps a per-process utilization sample
only for a process that ran kernels in the period, so an idle notebook has no
sample while its neighbour has one every period. A Jupyter kernel that loaded a
model holds its VRAM (PyTorch's caching allocator does not give it back) at
about 0 % CPU, with no children doing work.
"""

from __future__ import annotations

import random

from field.case import Case, process, scenario
from field.hardware import A100_40GB, A100_80GB, GIB, RTX_4090, V100_32GB, GpuModel
from field.simulate import HostSpec, ProcessSpec
from field.timeline import Activity, TimelineBuilder
from field.verdicts import Verdict, expect
from field.workloads import TrainLoop, pause

FAMILY = "shared"
NOTEBOOK = (
    "/opt/conda/bin/python -m ipykernel_launcher"
    " -f /home/bob/.local/share/jupyter/runtime/kernel-{k}.json"
)
NOTEBOOK_IDLE = Activity(main_cpu=0.3)
DURATION = 420.0
"""Long enough for a notebook's idleness to mean something (jobstats flags zero use after 300 s)."""


def _notebook(pid: int, seed: str, vram: int, core: int) -> ProcessSpec:
    return process(
        pid,
        0,
        seed,
        DURATION,
        lambda b, r: pause(b, DURATION, NOTEBOOK_IDLE),
        vram,
        NOTEBOOK.format(k=f"{pid:x}"),
        user="bob",
        core=core,
        rss_bytes=5 * GIB,
    )


def _starved_beside_notebook(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/starved-beside-notebook/{model.tag}-s{seed}"
    step, batch = ((0.15, 0.35), (0.45, 1.2))[seed % 2]
    loop = TrainLoop(step_gpu_s=step, batch_cpu_s=batch, workers=0, main_cpu=80.0)
    job = process(
        4100,
        0,
        name,
        DURATION,
        lambda b, r: loop.run(b, r, DURATION),
        int(0.3 * model.vram_total_bytes),
        "python train.py --data /data/cifar100 --batch-size 128 --num-workers 0",
    )
    nb = _notebook(5200, name, int(0.25 * model.vram_total_bytes), core=10)
    return Case(
        name,
        FAMILY,
        scenario([model], [job, nb], DURATION, 1.0, seed, name),
        Verdict(
            top=expect("input-starved/num-workers-0", gpu=0, pid=4100),
            must_show=(expect("idle-holding-vram", gpu=0, pid=5200),),
            must_not=(
                expect("input-starved", pid=5200),
                expect("small-batch", pid=5200),
                expect("pcie-thrash", pid=5200),
                expect("small-batch", pid=4100),
            ),
            why="The job's own samples show the sawtooth and its main process is at a full core "
            "with no workers; the notebook runs no kernel (no per-process sample) at ~0 % CPU.",
        ),
        ("nvml-process-util", "pytorch-dataloader", "cuda-compute-modes", "jobstats"),
    )


def _healthy_beside_idle(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/healthy-beside-idle/{model.tag}-s{seed}"
    loop = TrainLoop(step_gpu_s=0.25, batch_cpu_s=1.0, workers=8, main_cpu=85.0)
    job = process(
        4100,
        0,
        name,
        DURATION,
        lambda b, r: loop.run(b, r, DURATION),
        int(0.45 * model.vram_total_bytes),
        "python train.py --data /data/imagenet --batch-size 256 --num-workers 8",
        workers=8,
    )
    nb = _notebook(5200, name, int(0.3 * model.vram_total_bytes), core=20)
    return Case(
        name,
        FAMILY,
        scenario([model], [job, nb], DURATION, 1.0, seed, name),
        Verdict(
            top=expect("idle-holding-vram", gpu=0, pid=5200),
            must_not=(
                expect("input-starved"),
                expect("small-batch"),
                expect("low-utilization"),
            ),
            why="The device is busy with the job's kernels; the notebook beside it has run "
            "nothing for 7 minutes while holding a third of the memory.",
        ),
        ("nvml-process-util", "jobstats"),
    )


def _two_busy(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/two-busy/{model.tag}-s{seed}"
    a = TrainLoop(step_gpu_s=0.2, batch_cpu_s=0.8, workers=6, main_cpu=80.0, kernel_fill=0.49)
    b_ = TrainLoop(step_gpu_s=0.3, batch_cpu_s=1.2, workers=6, main_cpu=80.0, kernel_fill=0.48)
    job_a = process(
        4100,
        0,
        name,
        DURATION,
        lambda b, r: a.run(b, r, DURATION),
        int(0.35 * model.vram_total_bytes),
        "python train.py --data /data/imagenet --batch-size 128 --num-workers 6",
        workers=6,
    )
    job_b = process(
        6100,
        0,
        name,
        DURATION,
        lambda b, r: b_.run(b, r, DURATION),
        int(0.4 * model.vram_total_bytes),
        "python -m torch.distributed.run --nproc-per-node 1 finetune_bert.py",
        workers=6,
        user="carol",
        core=16,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [job_a, job_b], DURATION, 1.0, seed, name),
        Verdict(
            top=expect("compute-bound", gpu=0),
            healthy=True,
            must_not=(expect("input-starved"), expect("small-batch"), expect("idle-holding-vram")),
            why="Two jobs whose loaders keep up time-slice the GPU: each has kernels about half "
            "the time, the device nearly all the time. Each job's gaps are the other's kernels.",
        ),
        ("cuda-compute-modes", "nvml-process-util"),
    )


def _three_tenants(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/three-tenants/{model.tag}-s{seed}"
    loop = TrainLoop(step_gpu_s=0.3, batch_cpu_s=2.0, workers=2, main_cpu=75.0)
    job = process(
        4100,
        0,
        name,
        DURATION,
        lambda b, r: loop.run(b, r, DURATION),
        int(0.3 * model.vram_total_bytes),
        "python train.py --data /data/coco --batch-size 32 --num-workers 2",
        workers=2,
    )
    nb = _notebook(5200, name, int(0.2 * model.vram_total_bytes), core=12)

    def cells(b: TimelineBuilder, r: random.Random) -> None:
        """A user running a cell now and then: a few seconds of kernels, minutes of reading."""
        while b.now < DURATION:
            b.add(r.uniform(40, 90), NOTEBOOK_IDLE)
            b.add(r.uniform(2, 6), Activity(kernel=0.6, memory=0.3, power=0.5, main_cpu=100.0))

    nb2 = process(
        5300,
        0,
        name,
        DURATION,
        cells,
        int(0.15 * model.vram_total_bytes),
        NOTEBOOK.format(k="5300"),
        user="dave",
        core=14,
    )
    host = HostSpec(cores=32)
    return Case(
        name,
        FAMILY,
        scenario([model], [job, nb, nb2], DURATION, 1.0, seed, name, host=host),
        Verdict(
            top=expect("input-starved/more-workers", gpu=0, pid=4100),
            must_not=(
                expect("input-starved", pid=5200),
                expect("input-starved", pid=5300),
                expect("small-batch", pid=5200),
                expect("small-batch", pid=5300),
            ),
            why="Two workers, each at a full core, make batches slower than the GPU uses them, "
            "with 29 cores free; the notebooks beside it run a cell now and then or nothing.",
        ),
        ("pytorch-dataloader", "nvml-process-util", "cuda-compute-modes"),
    )


def cases() -> list[Case]:
    return [
        _starved_beside_notebook(A100_40GB, 0),
        _starved_beside_notebook(RTX_4090, 1),
        _healthy_beside_idle(A100_80GB, 0),
        _healthy_beside_idle(V100_32GB, 1),
        _two_busy(A100_40GB, 0),
        _two_busy(RTX_4090, 1),
        _three_tenants(A100_80GB, 0),
        _three_tenants(V100_32GB, 1),
    ]
