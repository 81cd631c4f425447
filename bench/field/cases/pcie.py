"""Family 7: host <-> device copies.

A copy from pageable memory is staged by the driver through a pinned buffer and
is synchronous to the host: on PCIe Gen4 x16 it tops out near 10-13 GB/s (about
35-40 % of the link) and the GPU has nothing to do meanwhile. Pinned memory
reaches about 80 % of the link (~25 GB/s on Gen4 x16) and, with
``non_blocking=True`` and a prefetching loader, overlaps compute (CUDA C++ Best
Practices Guide, "Pinned memory", "Asynchronous transfers"; PyTorch
"pin_memory" notes). NVML samples PCIe throughput over ~20 ms, so readings are
spikes: the link's share of busy time shows as the share of readings near the
copy rate.
"""

from __future__ import annotations

from field.case import Case, process, scenario
from field.hardware import A100_40GB, H100_80GB, RTX_4090, V100_32GB, GpuModel
from field.verdicts import Verdict, expect
from field.workloads import TrainLoop

FAMILY = "pcie"
DURATION = 300.0


def _bound(model: GpuModel, seed: int, pinned: bool) -> Case:
    kind = "pinned" if pinned else "pageable"
    name = f"{FAMILY}/{kind}-copies/{model.tag}-gen{model.pcie_generation}-s{seed}"
    rate = model.pinned_copy_bytes_per_s if pinned else model.pageable_copy_bytes_per_s
    copy_s = 0.13 + 0.02 * seed
    loop = TrainLoop(
        step_gpu_s=0.08,
        batch_cpu_s=0.3,
        workers=8,
        copy_bytes=rate * copy_s,
        copy_rate=rate,
        copy_overlapped=False,
        main_cpu=60.0,
    )
    p = process(
        11100,
        0,
        name,
        DURATION,
        lambda b, r: loop.run(b, r, DURATION),
        int(0.3 * model.vram_total_bytes),
        "python train.py --features /data/features.npy --batch-size 8192 --num-workers 8"
        + (" --pin-memory" if pinned else ""),
        workers=8,
    )
    gb = rate / 1e9
    return Case(
        name,
        FAMILY,
        scenario([model], [p], DURATION, 1.0, seed, name),
        Verdict(
            top=expect("pcie-thrash", gpu=0, pid=11100),
            must_not=(expect("input-starved"), expect("compute-bound")),
            why=f"Every step copies {gb * copy_s:.1f} GB {kind} at ~{gb:.0f} GB/s "
            f"({100 * rate / model.link_bytes_per_s:.0f} % of the Gen{model.pcie_generation} x16 "
            "link) synchronously, and the GPU's gaps line up with the copies; the loader keeps up.",
        ),
        ("cuda-pinned", "nvml-pcie"),
    )


def _prefetch(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/async-prefetch/{model.tag}-s{seed}"
    rate = model.pinned_copy_bytes_per_s
    loop = TrainLoop(
        step_gpu_s=0.25,
        batch_cpu_s=1.0,
        workers=8,
        copy_bytes=0.1 * rate * 0.25,
        copy_rate=rate,
        copy_overlapped=True,
        main_cpu=85.0,
    )
    p = process(
        11200,
        0,
        name,
        DURATION,
        lambda b, r: loop.run(b, r, DURATION),
        int(0.5 * model.vram_total_bytes),
        "python train.py --data /data/imagenet --num-workers 8 --pin-memory --non-blocking",
        workers=8,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], DURATION, 1.0, seed, name),
        Verdict(
            top=expect("compute-bound", gpu=0),
            healthy=True,
            must_not=(expect("pcie-thrash"),),
            why="Pinned, non-blocking copies hide under the previous step: PCIe is busy a tenth "
            "of the time and kernels never wait.",
        ),
        ("cuda-pinned", "pytorch-perf"),
    )


def cases() -> list[Case]:
    return [
        _bound(A100_40GB, 0, pinned=False),
        _bound(RTX_4090, 1, pinned=False),
        _bound(V100_32GB, 2, pinned=False),
        _bound(A100_40GB, 1, pinned=True),
        _bound(H100_80GB, 0, pinned=True),
        _prefetch(A100_40GB, 0),
        _prefetch(H100_80GB, 1),
    ]
