"""Family 3: jobs that are not a plain DataLoader loop, and phases of healthy jobs.

* RL and self-play: environments step on the CPU (Gymnasium vector envs in
  subprocesses, MCTS actors); the GPU runs small policy batches between env
  steps and a burst of updates per rollout (Stable-Baselines3 / Gymnasium docs,
  "SubprocVecEnv"; PPO's rollout-then-update loop).
* Warm-up: ``torch.compile`` traces and compiles for tens of seconds on the CPU
  (in parallel compile workers) before the first fast step; cuDNN's benchmark
  mode times candidate kernels during the first iterations; datasets index or
  load at start (PyTorch docs, "torch.compile: compile times"; cudnn.benchmark).
* DeepSpeed ZeRO-Offload keeps optimizer state on the CPU: gradients go to the
  host, the CPU Adam step runs on many threads, parameters come back -- steady
  PCIe both ways, little resident VRAM, a moderate GPU (DeepSpeed docs,
  "ZeRO-Offload").
* Checkpointing pauses training to serialise and write state; evaluation passes
  run forward-only with their own loader for a while. Both are normal.
"""

from __future__ import annotations

import random

from field.case import Case, process, scenario
from field.hardware import A100_40GB, A100_80GB, GIB, H100_80GB, RTX_4090, GpuModel
from field.simulate import HostSpec
from field.timeline import Activity, TimelineBuilder, VramPoint
from field.verdicts import Verdict, expect
from field.workloads import TrainLoop, pause

FAMILY = "phases"


def _rl(model: GpuModel, seed: int, selfplay: bool) -> Case:
    kind = "selfplay" if selfplay else "ppo-vecenv"
    name = f"{FAMILY}/{kind}/{model.tag}-s{seed}"
    envs = 24 if selfplay else 16
    duration = 360.0

    def learner(b: TimelineBuilder, r: random.Random) -> None:
        while b.now < duration:
            rollout_end = b.now + r.uniform(10.0, 14.0)
            while b.now < rollout_end:
                # Policy forward for a batch of observations, then wait for the envs.
                b.add(
                    r.uniform(0.004, 0.008),
                    Activity(
                        kernel=0.8,
                        memory=0.3,
                        power=0.3,
                        main_cpu=100.0,
                        worker_cpu=96.0,
                        worker_state="R",
                    ),
                )
                b.add(
                    r.uniform(0.02, 0.04),
                    Activity(main_cpu=45.0, worker_cpu=96.0, worker_state="R"),
                )
            b.add(
                r.uniform(1.5, 3.0),
                Activity(kernel=0.75, memory=0.4, power=0.6, main_cpu=100.0, worker_cpu=2.0),
            )

    command = (
        f"python selfplay.py --game go9x9 --actors {envs} --mcts-sims 400"
        if selfplay
        else f"python train_ppo.py --env-id ALE/Breakout-v5 --num-envs {envs} --total-timesteps 1e7"
    )
    p = process(8100, 0, name, duration, learner, int(2.5 * GIB), command, workers=envs)
    return Case(
        name,
        FAMILY,
        scenario([model], [p], duration, 1.0, seed, name, host=HostSpec(cores=32)),
        Verdict(
            top=expect("simulation-bound", gpu=0, pid=8100),
            must_not=(expect("input-starved"), expect("idle-holding-vram"), expect("small-batch")),
            why="The environments (children at a full core each) step on the CPU; the GPU only "
            "runs small policy batches and a short update per rollout.",
        ),
        ("sb3-vecenv", "nvml-util"),
    )


def _warm_up(model: GpuModel, seed: int, kind: str) -> Case:
    name = f"{FAMILY}/warm-up-{kind}/{model.tag}-s{seed}"
    duration = 360.0
    warm = (70.0, 110.0)[seed % 2] if kind == "compile" else (45.0, 90.0)[seed % 2]
    loop = TrainLoop(step_gpu_s=0.25, batch_cpu_s=1.0, workers=8, main_cpu=85.0)

    def job(b: TimelineBuilder, r: random.Random) -> None:
        if kind == "compile":
            # Dynamo traces on the main thread; Inductor's compile workers build kernels;
            # autotuning runs candidate kernels for short bursts near the end.
            pause(
                b,
                warm * 0.85,
                Activity(main_cpu=100.0, main_state="R", worker_cpu=70.0, worker_state="R"),
            )
            while b.now < warm:
                b.add(
                    r.uniform(0.2, 0.6), Activity(kernel=0.7, memory=0.4, power=0.5, main_cpu=100.0)
                )
                b.add(r.uniform(0.5, 1.5), Activity(main_cpu=100.0, worker_cpu=40.0))
        else:
            # Reading the dataset index / decoding the first shards before the first batch.
            pause(b, warm, Activity(main_cpu=35.0, main_state="D", iowait=3.0))
        loop.run(b, r, duration)

    vram = [
        VramPoint(0.0, int(0.2 * model.vram_total_bytes)),
        VramPoint(warm, int(0.2 * model.vram_total_bytes)),
        VramPoint(warm + 5, int(0.6 * model.vram_total_bytes)),
    ]
    command = (
        "python train.py --model llama-1b --compile --batch-size 16"
        if kind == "compile"
        else "python train.py --data /data/laion-subset --index-on-start --num-workers 8"
    )
    p = process(8200, 0, name, duration, job, vram, command, workers=8)
    return Case(
        name,
        FAMILY,
        scenario([model], [p], duration, 1.0, seed, name),
        Verdict(
            top=expect("compute-bound", gpu=0),
            healthy=True,
            must_show=(expect("warm-up", gpu=0, pid=8200),),
            must_not=(expect("input-starved"), expect("idle-holding-vram")),
            why=f"The first {warm:.0f} s are start-up ({kind}): labelled, not warned on; then "
            "kernels run back to back.",
        ),
        ("torch-compile", "cudnn-benchmark"),
    )


def _offload(model: GpuModel, seed: int) -> Case:
    name = f"{FAMILY}/zero-offload/{model.tag}-s{seed}"
    duration = 300.0
    grads = 3.0e9 if seed % 2 == 0 else 2.2e9
    rate = model.pinned_copy_bytes_per_s

    def job(b: TimelineBuilder, r: random.Random) -> None:
        while b.now < duration:
            # Forward, then backward with gradients streamed to the host as buckets fill.
            b.add(
                r.uniform(0.35, 0.45), Activity(kernel=0.95, memory=0.5, power=0.8, main_cpu=100.0)
            )
            back = r.uniform(0.6, 0.8)
            b.add(
                back, Activity(kernel=0.9, memory=0.5, power=0.75, d2h=grads / back, main_cpu=100.0)
            )
            # DeepSpeedCPUAdam on the host's cores; the GPU waits.
            b.add(r.uniform(0.8, 1.1), Activity(main_cpu=1400.0, main_state="R"))
            b.add(grads / rate, Activity(h2d=rate, memory=0.1, main_cpu=100.0))

    p = process(
        8300,
        0,
        name,
        duration,
        job,
        int(0.18 * model.vram_total_bytes),
        "/usr/bin/python -u train.py --local_rank=0 --deepspeed --deepspeed_config "
        "ds_config_zero2_offload.json",
        main_threads=16,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], duration, 1.0, seed, name),
        Verdict(
            top=expect("cpu-offload", gpu=0, pid=8300),
            must_not=(
                expect("input-starved"),
                expect("idle-holding-vram"),
                expect("vram-near-limit"),
            ),
            why="ZeRO-Offload: gradients stream to the host during backward, the optimizer runs "
            "on 16 CPU threads while the GPU waits, parameters come back: by design.",
        ),
        ("deepspeed-offload",),
    )


def _periodic(model: GpuModel, seed: int, kind: str) -> Case:
    name = f"{FAMILY}/{kind}/{model.tag}-s{seed}"
    duration = 480.0
    loop = TrainLoop(step_gpu_s=0.28, batch_cpu_s=1.2, workers=8, main_cpu=85.0)
    every = (150.0, 200.0)[seed % 2]
    flag = "save" if kind == "checkpointing" else "eval"
    eval_loop = TrainLoop(step_gpu_s=0.08, batch_cpu_s=0.5, workers=4, main_cpu=70.0, power=0.6)

    def job(b: TimelineBuilder, r: random.Random) -> None:
        while b.now < duration:
            loop.run(b, r, b.now + every)
            if kind == "checkpointing":
                # torch.save: serialise on the CPU, write to shared storage.
                pause(b, r.uniform(10, 30), Activity(main_cpu=100.0, main_state="R", iowait=1.5))
            else:
                eval_loop.run(b, r, b.now + r.uniform(20, 40))

    p = process(
        8400,
        0,
        name,
        duration,
        job,
        int(0.5 * model.vram_total_bytes),
        f"python train.py --data /data/imagenet --{flag}-every 2000",
        workers=8,
    )
    return Case(
        name,
        FAMILY,
        scenario([model], [p], duration, 1.0, seed, name),
        Verdict(
            top=expect("compute-bound", gpu=0),
            healthy=True,
            must_not=(expect("idle-holding-vram"), expect("input-starved")),
            why=f"A healthy run with a periodic {kind} pass every {every:.0f} s: normal phases.",
        ),
        ("pytorch-checkpoint",) if kind == "checkpointing" else ("pytorch-dataloader",),
    )


def cases() -> list[Case]:
    return [
        _rl(RTX_4090, 0, selfplay=False),
        _rl(A100_40GB, 1, selfplay=False),
        _rl(A100_80GB, 2, selfplay=True),
        _warm_up(H100_80GB, 0, "compile"),
        _warm_up(A100_80GB, 1, "compile"),
        _warm_up(A100_40GB, 0, "dataset"),
        _warm_up(RTX_4090, 1, "dataset"),
        _offload(A100_40GB, 0),
        _offload(RTX_4090, 1),
        _periodic(A100_80GB, 0, "checkpointing"),
        _periodic(H100_80GB, 1, "checkpointing"),
        _periodic(A100_40GB, 0, "evaluation"),
        _periodic(RTX_4090, 1, "evaluation"),
    ]
