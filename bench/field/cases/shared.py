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


def _time_sliced_beside(
    job: ProcessSpec, share: float, pid: int, name: str, vram: int, command: str
) -> ProcessSpec:
    """A GPU-heavy tenant time-sliced with ``job``: it always has work queued, so it takes
    ``share`` of the device while ``job``'s kernels run and nearly all of it while ``job``
    runs none (contexts alternate in time slices; an idle context's slice goes to the
    other: CUDA Programming Guide, "Compute modes"; NVIDIA MPS docs, "Why MPS"). Its
    kernels fill every gap ``job`` leaves, so the device's samples show none."""
    tl = job.timeline

    def fill(b: TimelineBuilder, r: random.Random) -> None:
        for start, end, act in zip(tl.starts, tl.ends, tl.activities, strict=True):
            k = share if act.kernel > 0.0 else 0.97
            b.add(end - start, Activity(kernel=k, memory=0.5 * k, power=0.85 * k,
                                        main_cpu=13.0, worker_cpu=30.0, worker_state="R"))

    return process(pid, 0, name, DURATION, fill, vram, command, workers=4, user="carol", core=16)


BUSY_TENANT = "python -m torch.distributed.run --nproc-per-node 1 finetune_bert.py"


def _beside_busy(
    name: str,
    model: GpuModel,
    seed: int,
    loop: TrainLoop,
    job: tuple[float, str],
    tenant: tuple[float, float],
    verdict: Verdict,
    sources: tuple[str, ...],
) -> Case:
    """Job 4100 running ``loop`` (``job``: its VRAM share and command line) time-sliced
    with busy tenant 6100 (``tenant``: its kernel share while the job's kernels run, and
    its VRAM share) on GPU 0: the three beside-a-busy-tenant cases."""
    vram_share, command = job
    spec = process(
        4100,
        0,
        name,
        DURATION,
        lambda b, r: loop.run(b, r, DURATION),
        int(vram_share * model.vram_total_bytes),
        command,
    )
    share, other_vram = tenant
    other = _time_sliced_beside(
        spec, share, 6100, name, int(other_vram * model.vram_total_bytes), BUSY_TENANT
    )
    return Case(
        name, FAMILY, scenario([model], [spec, other], DURATION, 1.0, seed, name), verdict, sources
    )


def _starved_beside_busy(model: GpuModel, seed: int) -> Case:
    """The lab's second-tenant (docs/lab.md, 2026-12-04): a num_workers=0 program at
    84-95 % of a core, its own share 26-47 % (means 29-33 %), beside a GPU-heavy one at
    52-73 % (59-62 %) with its main process at 10-16 %; the device 92-100 % busy and no
    idle sub-second sample. Here: a 0.2-0.3 s step, its kernels half the device while
    both have work queued, and a 0.2-0.25 s inline load at a full core."""
    name = f"{FAMILY}/starved-beside-busy/{model.tag}-s{seed}"
    step, batch = ((0.3, 0.22), (0.22, 0.18))[seed % 2]
    loop = TrainLoop(step_gpu_s=step, batch_cpu_s=batch, workers=0, main_cpu=90.0,
                     kernel_fill=0.5)
    return _beside_busy(
        name,
        model,
        seed,
        loop,
        (0.3, "python train.py --data /data/cifar100 --batch-size 256 --num-workers 0"),
        (0.47, 0.45),
        Verdict(
            top=expect("input-starved/num-workers-0", gpu=0, pid=4100),
            must_not=(
                expect("input-starved", pid=6100),
                expect("small-batch"),
            ),
            why="The busy tenant's kernels fill the job's gaps, so the device shows no "
            "sawtooth; the job's own share (~30 %) is well under half the device it shares "
            "with one other, its main process loads every batch at a full core with no "
            "workers: it had nothing queued the rest of the time.",
        ),
        ("nvml-process-util", "pytorch-dataloader", "cuda-compute-modes"),
    )


def _fair_share_no_workers(model: GpuModel, seed: int) -> Case:
    """Near-miss: a job training from tensors already on the GPU (no DataLoader workers),
    its main thread spinning in the CUDA sync at a full core, time-sliced with a busy
    tenant: both always have work queued, so each gets about half the device. Its low
    share is the neighbour's, not a loader's."""
    name = f"{FAMILY}/fair-share-no-workers/{model.tag}-s{seed}"
    loop = TrainLoop(step_gpu_s=0.25, workers=0, main_cpu=97.0, kernel_fill=0.49)
    return _beside_busy(
        name,
        model,
        seed,
        loop,
        (0.35, "python train_gpu_resident.py --dataset-on-gpu --batch-size 512"),
        (0.48, 0.4),
        Verdict(
            top=expect("compute-bound", gpu=0),
            healthy=True,
            must_not=(expect("input-starved"), expect("small-batch")),
            why="Two jobs with work always queued time-slice the GPU about evenly; the one "
            "without workers spins in the CUDA sync at a full core, and its half of the "
            "device is what time-slicing gives it.",
        ),
        ("cuda-compute-modes", "nvml-process-util"),
    )


def _launch_bound_beside_busy(model: GpuModel, seed: int) -> Case:
    """Near-miss: a small-batch job (little VRAM, no workers, main thread launching kernels
    at a full core) beside a busy tenant that fills its gaps: small-batch's picture, which
    names num_workers=0 as the other possibility; input-starved stays silent."""
    name = f"{FAMILY}/launch-bound-beside-busy/{model.tag}-s{seed}"
    loop = TrainLoop(step_gpu_s=0.02, batch_cpu_s=0.02, workers=0, main_cpu=99.0,
                     kernel_fill=0.5)
    return _beside_busy(
        name,
        model,
        seed,
        loop,
        (0.08, "python train_mlp.py --batch-size 16"),
        (0.47, 0.45),
        Verdict(
            top=expect("small-batch", gpu=0, pid=4100),
            must_not=(expect("input-starved"),),
            why="Little VRAM, a full core, no workers, a steady share: small-batch's picture "
            "(it names loading in the main thread as the other possibility); the neighbour "
            "fills the device, so there are no gaps for input-starved to rest on.",
        ),
        ("cuda-compute-modes", "nvml-process-util", "pytorch-dataloader"),
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
        _starved_beside_busy(A100_40GB, 0),
        _starved_beside_busy(RTX_4090, 1),
        _fair_share_no_workers(A100_80GB, 0),
        _fair_share_no_workers(V100_32GB, 1),
        _launch_bound_beside_busy(A100_40GB, 0),
        _launch_bound_beside_busy(RTX_4090, 1),
    ]
