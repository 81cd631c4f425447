"""Family 8: one training job alone on its GPU -- the textbook cases, from their mechanism.

* Healthy: enough DataLoader workers, pinned prefetching copies; kernels back to
  back at 90-99 % (PyTorch "Performance Tuning Guide": workers, pin_memory).
* Memory-bound: bandwidth-heavy kernels (embeddings, attention at small batch,
  elementwise chains) keep device memory busy as long as the SMs.
* VRAM growing toward the limit: a leak (tensors kept with their graph, caching
  allocator growth with varying shapes) -- PyTorch "CUDA semantics: memory management".
* Small batch / launch-bound: each step is too small to fill the GPU; the Python
  thread that launches kernels sets the pace at one full core.
* Input-starved: num_workers=0 (loading inline), too few CPU-bound workers on a
  SLURM cpuset, workers waiting on storage.
"""

from __future__ import annotations

from dataclasses import replace

from field.case import Case, process, scenario
from field.hardware import A100_40GB, A100_80GB, GIB, H100_80GB, RTX_4090, V100_32GB, GpuModel
from field.simulate import HostSpec
from field.timeline import Activity, VramPoint
from field.verdicts import Verdict, expect
from field.workloads import TrainLoop, steady

FAMILY = "single"
TRAIN = "python train.py --data /data/imagenet --arch {arch} --batch-size {batch} --workers {w}"


def _healthy(model: GpuModel, seed: int, interval: float) -> Case:
    name = f"{FAMILY}/healthy-compute/{model.tag}-s{seed}"
    loop = TrainLoop(
        step_gpu_s=0.21 + 0.02 * seed,
        power=0.82,
        memory=0.45,
        main_cpu=85.0,
        batch_cpu_s=1.1,
        workers=8,
        copy_bytes=0.3e9,
        copy_rate=model.pinned_copy_bytes_per_s,
        kernel_fill=0.975,
    )
    p = process(
        4100,
        0,
        name,
        300,
        lambda b, r: loop.run(b, r, 300),
        int(0.55 * model.vram_total_bytes),
        TRAIN.format(arch="resnet50", batch=256, w=8),
        workers=8,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], 300, interval, seed, name),
        Verdict(
            top=expect("compute-bound", gpu=0),
            healthy=True,
            must_not=(expect("input-starved"), expect("small-batch"), expect("pcie-thrash")),
            why="Eight workers make a batch every 0.14 s, the GPU needs 0.21 s: kernels run "
            "back to back, copies overlap; nothing holds the job back.",
        ),
        ("pytorch-perf", "nvml-util"),
    )


def _memory_bound(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/memory-bound/{model.tag}-s{seed}"
    act = Activity(kernel=0.93, memory=0.95 + 0.01 * seed, power=0.62, main_cpu=80.0)
    p = process(
        4200,
        0,
        name,
        300,
        lambda b, r: steady(b, r, 300, act, wander=0.02),
        int(0.6 * model.vram_total_bytes),
        "python train_dlrm.py --embedding-dim 128",
        workers=4,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], 300, 1.0, seed, name),
        Verdict(
            top=expect("memory-bound", gpu=0),
            must_not=(expect("input-starved"), expect("small-batch")),
            why="Embedding lookups and elementwise kernels: device memory is read or written "
            "for as much of the time as kernels run.",
        ),
        ("nvml-util", "dcgm-fields"),
    )


def _vram_growing(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/vram-growing/{model.tag}-s{seed}"
    total = model.vram_total_bytes
    duration = 360.0
    start, end = int(0.72 * total), int(0.965 * total)
    onset = duration * (0.9 * total - start) / (end - start)
    loop = TrainLoop(step_gpu_s=0.3, batch_cpu_s=1.2, workers=8, power=0.8)
    p = process(
        4300,
        0,
        name,
        duration,
        lambda b, r: loop.run(b, r, duration),
        [VramPoint(0.0, start), VramPoint(duration, end)],
        "python finetune.py --model gpt2-xl --max-len 2048 --keep-history",
        workers=8,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], duration, 1.0, seed, name),
        Verdict(
            top=expect("vram-near-limit", gpu=0, onset_s=onset),
            why="Device memory climbs steadily (a leak or ever larger shapes) past 90 % and "
            "keeps climbing: the next spike ends in CUDA out-of-memory.",
        ),
        ("pytorch-cuda-memory",),
    )


def _small_batch(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/small-batch/{model.tag}-s{seed}"
    act = Activity(kernel=0.42 + 0.03 * seed, memory=0.2, power=0.3, main_cpu=99.0, main_state="R")
    p = process(
        4400,
        0,
        name,
        300,
        lambda b, r: steady(b, r, 300, _worker(act, 4.0), wander=0.03),
        3 * GIB,
        "python train.py --model mlp --batch-size 16 --workers 4",
        workers=4,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], 300, 1.0, seed, name),
        Verdict(
            top=expect("small-batch", gpu=0, pid=4400),
            must_not=(expect("input-starved"), expect("compute-bound")),
            why="Batch 16 on a large GPU: kernels are tiny, the Python thread launching them "
            "is pegged at one core, SM % is a steady moderate level with no gaps, workers idle.",
        ),
        ("pytorch-perf", "nvml-util", "cuda-graphs"),
    )


def _worker(act: Activity, cpu: float) -> Activity:
    return replace(act, worker_cpu=cpu)


def _starved_inline(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/starved-num-workers-0/{model.tag}-s{seed}"
    # Small images decode fast and step fast (seed 0); large ones take seconds (seed 1).
    step, batch = ((0.12, 0.3), (0.5, 1.4))[seed % 2]
    loop = TrainLoop(step_gpu_s=step, batch_cpu_s=batch, workers=0, main_cpu=75.0)
    p = process(
        4500,
        0,
        name,
        300,
        lambda b, r: loop.run(b, r, 300),
        int(0.35 * model.vram_total_bytes),
        TRAIN.format(arch="resnet18", batch=128, w=0),
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], 300, 1.0, seed, name),
        Verdict(
            top=expect("input-starved/num-workers-0", gpu=0, pid=4500),
            why="DataLoader(num_workers=0): each batch is decoded in the training process, "
            "the GPU idles meanwhile (sawtooth); main process at a full core, no workers.",
        ),
        ("pytorch-dataloader", "nvml-samples"),
    )


def _starved_cpu(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/starved-cpu-bound/{model.tag}-s{seed}"
    step, batch = ((0.15, 2.4), (0.45, 8.0))[seed % 2]
    loop = TrainLoop(step_gpu_s=step, batch_cpu_s=batch, workers=7, main_cpu=70.0, cores=64)
    p = process(
        4600,
        0,
        name,
        300,
        lambda b, r: loop.run(b, r, 300),
        int(0.4 * model.vram_total_bytes),
        TRAIN.format(arch="vit_b_16", batch=128, w=7),
        workers=7,
        core=8,
    )
    host = HostSpec(cores=64, allowed=tuple(range(8, 16)), background_cpu=1.0)
    return Case(
        name,
        FAMILY,
        scenario([model], [p], 300, 1.0, seed, name, host=host),
        Verdict(
            top=expect("input-starved/cpu-bound", gpu=0, pid=4600),
            why="Seven workers with heavy augmentation on an 8-core SLURM cpuset: every allowed "
            "core is busy and batches still come slower than the GPU uses them.",
        ),
        ("pytorch-dataloader", "slurm-cpus"),
    )


def _starved_storage(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/starved-storage/{model.tag}-s{seed}"
    step, wait = ((0.1, 1.3), (0.4, 5.0))[seed % 2]
    loop = TrainLoop(step_gpu_s=step, batch_cpu_s=0.05, storage_s=wait, workers=8, cores=16)
    p = process(
        4700,
        0,
        name,
        300,
        lambda b, r: loop.run(b, r, 300),
        int(0.3 * model.vram_total_bytes),
        TRAIN.format(arch="resnet50", batch=256, w=8) + " --data-root /nfs/datasets",
        workers=8,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], 300, 1.0, seed, name, host=HostSpec(cores=16)),
        Verdict(
            top=expect("input-starved/storage-bound", gpu=0, pid=4700),
            why="Workers wait on NFS reads (D state, iowait high) with idle CPUs: storage, "
            "not decoding, sets the pace.",
        ),
        ("pytorch-dataloader", "linux-iowait"),
    )


def cases() -> list[Case]:
    out: list[Case] = []
    for seed, model in enumerate((A100_40GB, H100_80GB, V100_32GB, RTX_4090)):
        out.append(_healthy(model, seed, 1.0 if seed % 2 == 0 else 2.0))
    out += [_memory_bound(A100_80GB, 0), _memory_bound(H100_80GB, 1)]
    out += [_vram_growing(A100_40GB, 0), _vram_growing(RTX_4090, 1)]
    out += [_small_batch(A100_80GB, 0), _small_batch(H100_80GB, 1)]
    out += [_starved_inline(A100_40GB, 0), _starved_inline(RTX_4090, 1)]
    out += [_starved_cpu(A100_80GB, 0), _starved_cpu(V100_32GB, 1)]
    out += [_starved_storage(A100_40GB, 0), _starved_storage(H100_80GB, 1)]
    return out
