"""Family 9: whose is it? Device-wide readings on a GPU shared by tenants (issue 23).

NVML's PCIe counters (``nvmlDeviceGetPcieThroughput``) and its buffered
utilization samples are per GPU; its per-process utilization samples exist only
for a process that ran kernels in the period (``nvmlDeviceGetProcessUtilization``).
A host<->device copy is issued by a host thread of the process that owns the
buffers, and a pageable one is staged by a CPU memcpy through a pinned buffer
(CUDA C++ Best Practices Guide, "Pinned memory"): a notebook that runs no kernel
at ~0 % CPU moves no data. So heavy PCIe traffic on a GPU whose only active
process is a training job is that job's, however much VRAM an idle tenant holds.
"""

from __future__ import annotations

from field.case import Case, process, scenario
from field.cases.shared import DURATION, NOTEBOOK, NOTEBOOK_IDLE
from field.hardware import A100_80GB, GIB, RTX_4090, GpuModel
from field.verdicts import Verdict, expect
from field.workloads import TrainLoop, pause

FAMILY = "attribution"


def _pcie_beside_idle(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/pcie-beside-idle-notebook/{model.tag}-s{seed}"
    rate = model.pageable_copy_bytes_per_s
    copy_s = 0.14 + 0.02 * seed
    loop = TrainLoop(
        step_gpu_s=0.08,
        batch_cpu_s=0.3,
        workers=8,
        copy_bytes=rate * copy_s,
        copy_rate=rate,
        copy_overlapped=False,
        main_cpu=60.0,
    )
    job = process(
        11100,
        0,
        name,
        DURATION,
        lambda b, r: loop.run(b, r, DURATION),
        int(0.25 * model.vram_total_bytes),
        "python train.py --features /data/features.npy --batch-size 8192 --num-workers 8",
        workers=8,
    )
    # The idle tenant holds *more* memory than the job: naming the largest holder
    # would blame it.
    nb = process(
        5200,
        0,
        name,
        DURATION,
        lambda b, r: pause(b, DURATION, NOTEBOOK_IDLE),
        int(0.45 * model.vram_total_bytes),
        NOTEBOOK.format(k="5200"),
        user="bob",
        core=20,
        rss_bytes=5 * GIB,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [job, nb], DURATION, 1.0, seed, name),
        Verdict(
            top=expect("pcie-thrash", gpu=0, pid=11100),
            must_show=(expect("idle-holding-vram", gpu=0, pid=5200),),
            must_not=(
                expect("pcie-thrash", pid=5200),
                expect("input-starved"),
                expect("small-batch", pid=5200),
            ),
            why="Pageable copies at ~37 % of the link every step, synchronous to the job's "
            "host thread; the notebook beside it runs no kernel at ~0 % CPU, so the traffic "
            "can only be the job's.",
        ),
        ("nvml-pcie", "nvml-process-util", "cuda-pinned", "cuda-compute-modes"),
    )


def cases() -> list[Case]:
    return [
        _pcie_beside_idle(A100_80GB, 0),
        _pcie_beside_idle(RTX_4090, 1),
    ]
