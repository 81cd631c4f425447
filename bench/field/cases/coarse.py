"""Family 9: coarse GPU-only logs -- what a reading every 5-60 s can and cannot show.

Mechanism (nvidia-smi(1), ``--query-gpu ... -l N``; NVML ``nvmlDeviceGetUtilizationRates``):
each row is NVML's utilization over its own last sample period (about 1 s), not an
average over the N seconds between rows. Rows N seconds apart are therefore
independent draws of the job's duty cycle: their mean estimates the job's level
(with a standard error of spread / sqrt(n)), while no single row says anything about
a steady state or a sawtooth. The log's spacing is its resolution, not missing data.
Such a log has no processes, no host data and no sub-second samples.

* A job at a few percent for an hour, logged every 5 s: wasted, whatever the interval.
* A job at a steady quarter load for an hour, logged every 10 s: underused.
* A healthy job whose one-a-minute readings swing 25-95 % (mean ~60 %): its level is
  above the low-utilization bar; a handful of low readings is noise of the draw, and
  a few busy rows are not "steady".
"""

from __future__ import annotations

import random

from field.case import Case, as_log, process, scenario
from field.hardware import A100_40GB, A100_80GB, GIB, RTX_4090, GpuModel
from field.simulate import HostSpec
from field.timeline import Activity, TimelineBuilder
from field.verdicts import Verdict, expect
from field.workloads import steady

FAMILY = "coarse"


def _level(
    model: GpuModel, seed: int, level: float, wander: float, duration: float, vram_gib: float
) -> Case:
    """A run at ``level`` % (wandering by ``wander``, relative), seen live at 1 s."""
    name = f"{FAMILY}/level-{level:.0f}pct-{duration / 60:.0f}min/{model.tag}-s{seed}"
    act = Activity(kernel=level / 100, memory=level / 300, power=level / 120, main_cpu=90.0)

    def job(b: TimelineBuilder, r: random.Random) -> None:
        steady(b, r, duration, act, wander=wander, hold_s=(1.0, 20.0))

    p = process(9900, 0, name, duration, job, int(vram_gib * GIB), "python train.py")
    return Case(
        name,
        FAMILY,
        scenario([model], [p], duration, 1.0, seed, name, host=HostSpec()),
        Verdict(top=None),
        ("nvsmi-query-loop", "nvml-util"),
    )


def cases() -> list[Case]:
    wasted = as_log(
        _level(A100_40GB, 0, 4.0, 0.8, 3600, 9.0),
        5.0,
        Verdict(
            top=expect("low-utilization", gpu=0),
            must_not=(expect("compute-bound"), expect("input-starved"), expect("small-batch")),
            why="An hour of 5 s rows averaging ~4 % with 9 GiB held: the GPU is wasted; the "
            "log has no host data, so no cause can be named.",
        ),
    )
    quarter = as_log(
        _level(A100_80GB, 1, 25.0, 0.2, 3600, 12.0),
        10.0,
        Verdict(
            top=expect("low-utilization", gpu=0),
            must_not=(expect("compute-bound"), expect("input-starved")),
            why="An hour of 10 s rows at a steady ~25 %: underused at any resolution.",
        ),
        power=True,
    )
    healthy = as_log(
        _level(RTX_4090, 2, 62.0, 0.35, 90 * 60, 10.0),
        60.0,
        Verdict(
            top=None,
            healthy=True,
            must_not=(expect("compute-bound"), expect("input-starved"), expect("low-utilization")),
            why="90 min of one-a-minute rows swinging ~25-95 % around 60 %: busy enough; one "
            "reading a minute cannot show a steady state or a sawtooth.",
        ),
    )
    return [wasted, quarter, healthy]
