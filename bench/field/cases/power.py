"""Family 10: what power says that utilization cannot (issue 23).

NVML's utilization is the share of its ~1 s sample period in which any kernel ran
(NVML API reference, ``nvmlUtilization_t``), not work done; power tracks the
arithmetic (a board at rest draws 10-20 % of its limit, dense compute well over half).

* Light kernels at full utilization: a GNN or embedding model at a modest batch whose
  kernels run back to back at about a third of the limit -- busy by utilization, not
  compute-bound (Nsight Systems user guide, "GPU utilization").
* A GPU-only log of a loader that is slower than the GPU: each batch runs at full speed,
  then the GPU idles -- readings alternate between ~0 and ~100 (PyTorch performance
  tuning guide, async data loading); the bursts are not compute-bound, and without host
  data the cause is unknown.
"""

from __future__ import annotations

from field.case import Case, as_log, process, scenario
from field.hardware import A100_80GB, H100_80GB, GpuModel
from field.timeline import Activity, TimelineBuilder
from field.verdicts import Verdict, expect
from field.workloads import steady

FAMILY = "power"


def _light_kernels(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/light-kernels/{model.tag}-s{seed}"
    # 95 % of the time a kernel runs, the board at about a third of its limit.
    share = (0.33 * model.power_limit_watts - model.active_idle_watts) / (
        model.power_limit_watts - model.active_idle_watts
    )
    act = Activity(
        kernel=0.95, memory=0.2, power=share, main_cpu=45.0, main_state="R", worker_cpu=30.0
    )
    p = process(
        11000,
        0,
        name,
        300,
        lambda b, r: steady(b, r, 300, act, wander=0.02),
        int(0.4 * model.vram_total_bytes),
        "python train.py --model dlrm --embedding-dim 64 --batch-size 2048",
        workers=4,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], 300, 1.0, seed, name),
        Verdict(
            top=expect("utilization-overstated", gpu=0),
            must_not=(expect("compute-bound"),),
            why="95 % utilization at a third of the power limit: light kernels back to back, "
            "not a saturated GPU.",
        ),
        ("nvml-util", "nvml-power", "dcgm-fields"),
    )


def _bursts(b: TimelineBuilder, duration: float, on: float, off: float) -> None:
    busy = Activity(kernel=1.0, memory=0.4, power=0.9, main_cpu=60.0, main_state="R")
    wait = Activity(kernel=0.0, memory=0.0, power=0.0, main_cpu=20.0, main_state="S")
    while b.now < duration:
        b.add(on, busy)
        b.add(off, wait)


def _duty_cycle_log(model: GpuModel, seed: int, on: float, off: float) -> Case:
    name = f"{FAMILY}/duty-cycle-{on:g}on-{off:g}off/{model.tag}-s{seed}"
    p = process(
        11100,
        0,
        name,
        600,
        lambda b, r: _bursts(b, 600, on, off),
        int(0.5 * model.vram_total_bytes),
        "python train.py --data /nfs/imagenet --workers 2",
    )
    live = Case(
        name,
        FAMILY,
        scenario([model], [p], 600, 1.0, seed, name),
        Verdict(top=expect("input-starved", gpu=0)),
        ("nvml-util", "pytorch-dataloader", "pytorch-perf"),
    )
    return as_log(
        live,
        1.0,
        Verdict(
            top=expect("input-starved", gpu=0),
            must_not=(expect("compute-bound"),),
            why=f"{on:g} s bursts at full speed between {off:g} s waits for the next batch: the "
            "input-stall signature in a GPU-only log; its cause needs host data.",
        ),
    )


def cases() -> list[Case]:
    return [
        _light_kernels(A100_80GB, 0),
        _light_kernels(H100_80GB, 1),
        _duty_cycle_log(A100_80GB, 0, 5.0, 5.0),
        _duty_cycle_log(H100_80GB, 1, 7.0, 4.0),
    ]
