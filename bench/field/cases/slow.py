"""Family 4: slow patterns, and the same runs as coarse logs.

* Load-then-compute over the network: a job that fetches a shard (10-30 s, its
  reader in D state, iowait up) then trains on it -- the GPU alternates between
  near 0 and near 100 on a tens-of-seconds period.
* ``nvidia-smi --query-gpu=... -l N`` writes one reading every N seconds, and
  each reading is NVML's utilization over its last sample period only (about
  1 s), not over the N seconds: a slow cycle shows as readings near 0 or near
  100 (bimodal), a 1 Hz sawtooth averages out inside every reading. Such a log
  has no host data, no processes and no sub-second samples (nvidia-smi docs,
  "--query-gpu", "-l").
* With NVML's buffered samples (1/6 s) a 1 Hz sawtooth (bursts near 100 between
  stretches near 0) is visible live, and tells starvation from a steady level
  of the same mean (a small batch).
"""

from __future__ import annotations

import random

from field.case import Case, as_log, process, scenario
from field.hardware import A100_40GB, A100_80GB, GIB, H100_80GB, RTX_4090, V100_32GB, GpuModel
from field.simulate import HostSpec
from field.timeline import Activity, TimelineBuilder
from field.verdicts import Verdict, expect
from field.workloads import TrainLoop, steady

FAMILY = "slow"


def _nfs_cycles(model: GpuModel, seed: int, duration: float, interval: float) -> Case:
    name = f"{FAMILY}/nfs-load-compute/{model.tag}-s{seed}-{duration / 60:.0f}min"
    fetch, compute = ((18.0, 16.0), (12.0, 25.0), (25.0, 12.0))[seed % 3]
    loop = TrainLoop(
        step_gpu_s=compute, storage_s=fetch, batch_cpu_s=1.0, workers=0, cores=32, jitter=0.15
    )
    p = process(
        9100,
        0,
        name,
        duration,
        lambda b, r: loop.run(b, r, duration),
        int(0.45 * model.vram_total_bytes),
        "python train.py --shards s3://bucket/webdataset/{000..999}.tar --cache none",
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], duration, interval, seed, name),
        Verdict(
            top=expect("input-starved/storage-bound", gpu=0, pid=9100),
            must_not=(expect("idle-holding-vram"), expect("small-batch")),
            why=f"Each shard takes ~{fetch:.0f} s to fetch (reader in D state, iowait up) and "
            f"~{compute:.0f} s to train on: a slow load-then-compute cycle.",
        ),
        ("nfs-io", "linux-iowait", "nvml-util"),
    )


def _nfs_log(case: Case, interval: float) -> Case:
    return as_log(
        case,
        interval,
        Verdict(
            top=expect("input-starved", gpu=0),
            must_not=(expect("compute-bound"), expect("small-batch")),
            why="Readings jump between near 0 and near 100: bursts of work between stretches of "
            "nothing, seen in the GPU's own trace; with no host data the cause stays open.",
        ),
    )


def _sawtooth(model: GpuModel, seed: int, duration: float, interval: float) -> Case:
    name = f"{FAMILY}/sawtooth-1hz/{model.tag}-s{seed}"
    # Four workers at a full core each make a batch per second; the GPU needs 0.27 s.
    loop = TrainLoop(
        step_gpu_s=0.27, batch_cpu_s=4.0, workers=4, main_cpu=60.0, cores=32, jitter=0.04
    )
    p = process(
        9200,
        0,
        name,
        duration,
        lambda b, r: loop.run(b, r, duration),
        int(0.4 * model.vram_total_bytes),
        "python train.py --data /data/imagenet --batch-size 256 --num-workers 4",
        workers=4,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], duration, interval, seed, name),
        Verdict(
            top=expect("input-starved/more-workers", gpu=0, pid=9200),
            must_not=(expect("compute-bound"), expect("small-batch")),
            why="Sub-second samples show bursts near 100 between stretches near 0 once a second "
            "(27 % mean); four workers at a full core, most cores free.",
        ),
        ("nvml-samples", "pytorch-dataloader"),
    )


def _steady_level(model: GpuModel, seed: int, duration: float, interval: float) -> Case:
    name = f"{FAMILY}/steady-27/{model.tag}-s{seed}"
    act = Activity(
        kernel=0.27, memory=0.12, power=0.25, main_cpu=99.0, main_state="R", worker_cpu=3.0
    )
    p = process(
        9300,
        0,
        name,
        duration,
        lambda b, r: steady(b, r, duration, act, wander=0.04),
        3 * GIB,
        "python train.py --data /data/tabular --batch-size 32 --num-workers 4",
        workers=4,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], duration, interval, seed, name),
        Verdict(
            top=expect("small-batch", gpu=0, pid=9300),
            must_not=(expect("input-starved"), expect("compute-bound")),
            why="A steady 27 % with no gaps in the sub-second samples, little VRAM, the launching "
            "thread at a full core: a small batch, not starvation.",
        ),
        ("nvml-samples", "pytorch-perf"),
    )


def _cannot_tell_log(case: Case, interval: float) -> Case:
    return as_log(
        case,
        interval,
        Verdict(
            top=expect("low-utilization", gpu=0),
            must_not=(expect("compute-bound"), expect("input-starved"), expect("small-batch")),
            why="Every reading is a 1 s average near 27 %: a 1 Hz sawtooth and a steady level "
            "look the same at this resolution, and there is no host data to tell them apart.",
        ),
    )


def _trickle(model: GpuModel, seed: int, duration: float, level: float, interval: float) -> Case:
    """A long run at a low level: occasional small kernels (2 %) or a light model (26 %)."""
    name = f"{FAMILY}/low-{level:.0f}pct-{duration / 60:.0f}min/{model.tag}-s{seed}"

    def job(b: TimelineBuilder, r: random.Random) -> None:
        if level < 10:
            while b.now < duration:
                b.add(r.uniform(3.0, 12.0), Activity(main_cpu=100.0, main_state="R"))
                b.add(
                    r.uniform(0.1, 0.4), Activity(kernel=0.6, memory=0.2, power=0.3, main_cpu=100.0)
                )
        else:
            steady(
                b,
                r,
                duration,
                Activity(kernel=level / 100, memory=0.1, power=0.2, main_cpu=90.0),
                wander=0.12,
            )

    p = process(
        9400, 0, name, duration, job, int(0.2 * model.vram_total_bytes), "python run_experiment.py"
    )
    live = Case(
        name,
        FAMILY,
        scenario([model], [p], duration, 1.0, seed, name, host=HostSpec()),
        Verdict(top=None),
        ("nvml-util",),
    )
    return as_log(
        live,
        interval,
        Verdict(
            top=expect("low-utilization", gpu=0),
            must_not=(expect("compute-bound"),),
            why=f"{duration / 60:.0f} minutes at about {level:.0f} % with VRAM held: the GPU is "
            "mostly unused; a report must lead with that whatever the sample interval.",
        ),
        power=seed % 2 == 1,
    )


def cases() -> list[Case]:
    live_nfs = [_nfs_cycles(A100_80GB, 0, 480, 1.0), _nfs_cycles(V100_32GB, 1, 480, 2.0)]
    long_nfs = [_nfs_cycles(A100_40GB, 0, 1800, 1.0), _nfs_cycles(H100_80GB, 2, 3600, 1.0)]
    logs = [
        _nfs_log(long_nfs[0], 5.0),
        _nfs_log(long_nfs[0], 10.0),
        _nfs_log(long_nfs[1], 30.0),
        _nfs_log(long_nfs[1], 60.0),
    ]
    saw = [_sawtooth(A100_40GB, 0, 300, 1.0), _sawtooth(RTX_4090, 1, 300, 2.0)]
    level = [_steady_level(A100_40GB, 0, 300, 1.0), _steady_level(RTX_4090, 1, 300, 2.0)]
    cannot_tell = [
        _cannot_tell_log(_sawtooth(A100_80GB, 2, 1200, 1.0), 5.0),
        _cannot_tell_log(_steady_level(A100_80GB, 2, 1200, 1.0), 5.0),
    ]
    trickles = [
        _trickle(A100_40GB, 0, 39 * 60, 2.0, 10.0),
        _trickle(RTX_4090, 1, 39 * 60, 2.0, 60.0),
        _trickle(A100_80GB, 0, 3600, 26.0, 30.0),
        _trickle(V100_32GB, 1, 3600, 26.0, 60.0),
    ]
    return [*live_nfs, *logs, *saw, *level, *cannot_tell, *trickles]
