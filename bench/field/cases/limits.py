"""Family 5: power and heat limits -- which are healthy and which hold a job back.

A busy board draws up to its enforced power limit; at the DEFAULT limit the
driver reports ``sw_power_cap`` while the clocks stay at (or within a bin of)
their maximum: the limit is the design point (NVIDIA "GPU Boost" / NVML
``nvmlClocksEventReasonSwPowerCap``). An administrator can LOWER the limit
(``nvidia-smi -pl``): then demand exceeds it by far and the clocks drop. Past
the slowdown temperature the driver pulls clocks for heat (``sw_thermal``,
``hw_thermal``): a cooling problem, not a power one (nvidia-smi -q
"Clocks Event Reasons"; NVML docs).
"""

from __future__ import annotations

from field.case import Case, process, scenario
from field.hardware import A100_40GB, A100_80GB, H100_80GB, RTX_4090, V100_32GB, GpuModel
from field.simulate import GpuSpec
from field.timeline import Activity
from field.verdicts import Verdict, expect
from field.workloads import TrainLoop, steady

FAMILY = "limits"
DURATION = 360.0


def _job(pid: int, name: str, model: GpuModel, power: float) -> object:
    loop = TrainLoop(
        step_gpu_s=0.4, batch_cpu_s=1.5, workers=8, power=power, memory=0.55, main_cpu=90.0
    )
    return process(
        pid,
        0,
        name,
        DURATION,
        lambda b, r: loop.run(b, r, DURATION),
        int(0.7 * model.vram_total_bytes),
        "torchrun --nproc-per-node 1 pretrain.py --model gpt-1.3b --bf16",
        workers=8,
    )


def _default_cap(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/default-power-cap/{model.tag}-s{seed}"
    job = _job(9500, name, model, power=1.03)
    return Case(
        name,
        FAMILY,
        scenario([model], [job], DURATION, 1.0, seed, name),  # type: ignore[list-item]
        Verdict(
            top=expect("compute-bound", gpu=0),
            healthy=True,
            why=f"Dense bf16 GEMMs draw the board's default {model.power_limit_watts:.0f} W; "
            "sw_power_cap is set and the clocks stay at their maximum: the design point.",
        ),
        ("nvml-clock-reasons", "nvidia-boost"),
    )


def _lowered_cap(model: GpuModel, seed: int, limit: float) -> Case:
    name = f"{FAMILY}/lowered-power-limit/{model.tag}-{limit:.0f}w-s{seed}"
    job = _job(9600, name, model, power=0.95)
    gpu = GpuSpec(index=0, model=model, power_limit_watts=limit)
    return Case(
        name,
        FAMILY,
        scenario([gpu], [job], DURATION, 1.0, seed, name),  # type: ignore[list-item]
        Verdict(
            top=expect("throttled/power", gpu=0),
            must_not=(expect("throttled/thermal"),),
            why=f"The limit was lowered to {limit:.0f} W of {model.power_limit_watts:.0f} W: the "
            "job wants more, the clocks drop well below their maximum.",
        ),
        ("nvml-clock-reasons", "nvidia-smi-pl"),
    )


def _thermal(model: GpuModel, seed: int, ambient: float, c_per_w: float) -> Case:
    name = f"{FAMILY}/thermal-throttle/{model.tag}-s{seed}"
    act = Activity(kernel=0.97, memory=0.5, power=0.86, main_cpu=90.0, worker_cpu=40.0)
    job = process(
        9700,
        0,
        name,
        DURATION,
        lambda b, r: steady(b, r, DURATION, act, wander=0.02),
        int(0.6 * model.vram_total_bytes),
        "python train.py --model unet --amp --num-workers 6",
        workers=6,
    )
    gpu = GpuSpec(index=0, model=model, ambient_c=ambient, thermal_c_per_watt=c_per_w)
    return Case(
        name,
        FAMILY,
        scenario([gpu], [job], DURATION, 1.0, seed, name),
        Verdict(
            top=expect("throttled/thermal", gpu=0, onset_s=0.0),
            must_not=(expect("throttled/power"),),
            why="A clogged or hot chassis: the board passes its slowdown temperature under a load "
            "well below its power limit and the driver pulls clocks for heat.",
        ),
        ("nvml-clock-reasons", "nvidia-thermal"),
    )


def cases() -> list[Case]:
    return [
        _default_cap(H100_80GB, 0),
        _default_cap(A100_40GB, 1),
        _default_cap(RTX_4090, 2),
        _lowered_cap(A100_80GB, 0, 250.0),
        _lowered_cap(V100_32GB, 1, 180.0),
        _thermal(RTX_4090, 0, ambient=38.0, c_per_w=0.15),
        _thermal(A100_40GB, 1, ambient=42.0, c_per_w=0.17),
    ]
