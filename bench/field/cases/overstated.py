"""Family 6: utilization that overstates work.

NVML's utilization counts time with ANY kernel running. NCCL launches its
collective kernel at once and the kernel spins on the GPU until every peer has
arrived, so a rank waiting for a slow or hung peer reads 100 % at near-idle
power (NCCL user guide, "Troubleshooting": hangs; NCCL_DEBUG). Tiny kernels
launched back to back read a high utilization while the SMs are mostly empty
and the board draws a fraction of its limit (Nsight Systems user guide, "GPU
utilization"; DCGM's SM activity vs NVML utilization).
"""

from __future__ import annotations

import random
from dataclasses import replace

from field.case import Case, process, scenario
from field.hardware import A100_40GB, A100_80GB, GIB, H100_80GB, RTX_4090, GpuModel
from field.simulate import HostSpec, ProcessSpec
from field.timeline import Activity, TimelineBuilder, VramPoint
from field.verdicts import Verdict, expect
from field.workloads import SPIN, TrainLoop, lockstep, steady

FAMILY = "overstated"
RANK_COMMAND = (
    "python -u train.py --nnodes 1 --nproc-per-node {n} --local-rank {r} --model llama-7b"
)


def _ranks(
    name: str,
    model: GpuModel,
    loops: list[TrainLoop],
    duration: float,
    hang_at: float | None = None,
    hung: int | None = None,
) -> list[ProcessSpec]:
    """Data-parallel ranks in lockstep; from ``hang_at`` rank ``hung`` stops coming (or none do)."""
    rng = random.Random(f"field-ranks-{name}")
    builders = [TimelineBuilder() for _ in loops]
    lockstep(builders, rng, hang_at if hang_at is not None else duration, loops)
    if hang_at is not None:
        for i, b in enumerate(builders):
            if i == hung:
                # Stuck outside the collective (a dead loader, a Python exception in a thread).
                b.add(duration - b.now, Activity(main_cpu=0.5, worker_cpu=0.0))
            else:
                b.add(duration - b.now, SPIN)
    n = len(loops)
    vram = int(0.7 * model.vram_total_bytes)
    return [
        ProcessSpec(
            pid=10100 + 20 * i,
            gpu=i,
            timeline=b.build([VramPoint(0.0, vram)]),
            command=RANK_COMMAND.format(n=n, r=i),
            workers=loops[i].workers,
            core=8 * i,
        )
        for i, b in enumerate(builders)
    ]


def _hang(model: GpuModel, seed: int, n: int, hung: int | None) -> Case:
    kind = f"one-rank-hung-{hung}" if hung is not None else "all-ranks-waiting"
    name = f"{FAMILY}/collective-hang/{kind}/{n}x{model.tag}-s{seed}"
    duration, hang_at = 360.0, 60.0 + 10 * seed
    loop = TrainLoop(step_gpu_s=0.35, batch_cpu_s=1.2, workers=4, power=0.85)
    procs = _ranks(name, model, [loop] * n, duration, hang_at, hung if hung is not None else -1)
    gpus = [model] * n
    subject = expect(
        "collective-hang",
        gpu=hung if hung is not None else range(n),
        pid=10100 + 20 * hung if hung is not None else None,
        onset_s=hang_at,
    )
    return Case(
        name,
        FAMILY,
        scenario(gpus, procs, duration, 1.0, seed, name, host=HostSpec(cores=8 * n)),
        Verdict(
            top=subject,
            # Training is healthy (compute-bound) until the hang; from it, never.
            must_not=(expect("compute-bound", onset_s=hang_at),) if hung is None else (),
            why=(
                f"From {hang_at:.0f} s rank {hung} stops arriving: every other rank spins in the "
                "all-reduce at 100 % and near-idle power; the rank to look at is the one that is "
                "not in the collective."
                if hung is not None
                else f"From {hang_at:.0f} s every rank waits in a collective that never "
                "completes: 100 % everywhere at near-idle power."
            ),
        ),
        ("nccl-troubleshooting", "nvml-util", "nvml-power"),
    )


def _tiny_kernels(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/tiny-kernels/{model.tag}-s{seed}"
    # 70 % of the time a kernel runs, the board at about 30 % of its limit.
    share = (0.3 * model.power_limit_watts - model.active_idle_watts) / (
        model.power_limit_watts - model.active_idle_watts
    )
    act = Activity(
        kernel=0.7, memory=0.25, power=share, main_cpu=99.0, main_state="R", worker_cpu=4.0
    )
    p = process(
        10500,
        0,
        name,
        300,
        lambda b, r: steady(b, r, 300, act, wander=0.03),
        int(2.5 * GIB),
        "python train_gnn.py --dataset ogbn-arxiv --hidden 64 --batch-size 64",
        workers=2,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], 300, 1.0, seed, name),
        Verdict(
            top=expect("small-batch", gpu=0, pid=10500),
            must_not=(expect("compute-bound"),),
            why="70 % utilization at 30 % of the power limit: a stream of tiny kernels launched by "
            "a Python thread at a full core -- light work, not a saturated GPU.",
        ),
        ("nvml-util", "nvml-power", "cuda-graphs"),
    )


def _straggler(model: GpuModel, seed: int, n: int, slow: int, starved: bool) -> Case:
    kind = "starved-rank" if starved else "busy-rank"
    name = f"{FAMILY}/straggler-{kind}/{n}x{model.tag}-s{seed}"
    base = TrainLoop(step_gpu_s=0.3, batch_cpu_s=1.2, workers=6, power=0.85)
    if starved:
        # This rank's node slice has one worker: its loader sets the pace of the whole job.
        slow_loop = replace(base, workers=1, batch_cpu_s=0.6)
    else:
        # Longer sequences land on this rank (no length bucketing): more GPU work per step.
        slow_loop = replace(base, step_gpu_s=0.42)
    loops = [slow_loop if i == slow else base for i in range(n)]
    procs = _ranks(name, model, loops, 300.0)
    return Case(
        name,
        FAMILY,
        scenario([model] * n, procs, 300.0, 1.0, seed, name, host=HostSpec(cores=8 * n)),
        Verdict(
            top=expect("straggler", gpu=slow, pid=10100 + 20 * slow),
            why=(
                f"Rank {slow} alone never waits in the all-reduce (its GPU at full power); "
                f"the others spin at 100 % and lower power: rank {slow} sets the pace."
                if not starved
                else f"Rank {slow} waits on its single loader worker (gaps in its own trace); the "
                "others spin in the all-reduce waiting for it."
            ),
        ),
        ("nccl-troubleshooting", "hta-stragglers", "nvml-power"),
    )


def cases() -> list[Case]:
    return [
        _hang(A100_80GB, 0, 4, hung=2),
        _hang(H100_80GB, 1, 8, hung=5),
        _hang(A100_40GB, 2, 4, hung=None),
        _tiny_kernels(A100_40GB, 0),
        _tiny_kernels(RTX_4090, 1),
        _straggler(A100_80GB, 0, 4, slow=1, starved=False),
        _straggler(H100_80GB, 1, 4, slow=3, starved=True),
    ]
