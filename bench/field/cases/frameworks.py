"""Family: frameworks whose processes do not look like a training loop's.

* vLLM V1 runs the model in a child that retitles itself ``VLLM::EngineCore``
  (setproctitle) and reserves ``gpu_memory_utilization`` (default 0.9) of the
  card (docs.vllm.ai, "Engine arguments"); a monitor started after the server
  never sees the reservation being taken, only a flat plateau.
* torch.compile's inductor compiles kernels in a SubprocPool whose children run
  ``torch/_inductor/compile_worker/__main__.py`` (PyTorch source), busy on the
  CPU while autotuning runs candidate kernels in short GPU bursts; a
  DataLoader worker is a fork of the main process (PyTorch DataLoader docs).
"""

from __future__ import annotations

import random

from field.case import Case, process, scenario
from field.hardware import A100_80GB, H100_80GB
from field.timeline import Activity, TimelineBuilder
from field.verdicts import Verdict, expect
from field.workloads import Server, TrainLoop

FAMILY = "frameworks"
DURATION = 420.0


def _vllm_engine_core_started_earlier() -> Case:
    model = H100_80GB
    full = f"{FAMILY}/vllm-v1-engine-core-late-monitor/{model.tag}-s0"
    server = Server(busy_s=20, idle_s=40)
    p = process(
        7300,
        0,
        full,
        DURATION,
        lambda b, r: server.run(b, r, DURATION),
        int(0.9 * model.vram_total_bytes),
        "VLLM::EngineCore",
        name="VLLM::EngineCore",
        user="svc-infer",
        created_before_s=3600.0,
    )
    return Case(
        full,
        FAMILY,
        scenario([model], [p], DURATION, 1.0, 0, full),
        Verdict(
            top=expect("serving-idle", gpu=0, pid=7300),
            healthy=True,
            must_show=(expect("vram-preallocated", gpu=0, pid=7300),),
            must_not=(
                expect("input-starved"),
                expect("idle-holding-vram"),
                expect("vram-near-limit"),
            ),
            why="vLLM V1's engine process (named by its process title) has held its 90 % pool "
            "since before the monitor started: a server idle between requests, not a starved "
            "or forgotten job.",
        ),
        ("nvml-util", "vllm-engine-args"),
    )


INDUCTOR = (
    "/opt/venv/bin/python3 /opt/venv/lib/python3.11/site-packages/torch/_inductor/"
    "compile_worker/__main__.py --pickler=torch._inductor.compile_worker.subproc_pool."
    "SubprocPickler --kind=fork --workers=8 --parent=8300"
)


def _recompile_seen_late() -> Case:
    """A recompile (new shapes) half an hour into a run: age is no clue, the children are."""
    model = A100_80GB
    full = f"{FAMILY}/torch-compile-recompile-late-monitor/{model.tag}-s0"
    duration, compile_s = 360.0, 150.0
    loop = TrainLoop(step_gpu_s=0.25, batch_cpu_s=1.0, workers=8, main_cpu=85.0)

    def job(b: TimelineBuilder, r: random.Random) -> None:
        while b.now < compile_s:
            b.add(
                r.uniform(0.2, 0.6),
                Activity(kernel=0.7, memory=0.4, power=0.5, main_cpu=15.0, worker_cpu=85.0),
            )
            b.add(r.uniform(2.0, 5.0), Activity(main_cpu=12.0, worker_cpu=85.0, worker_state="R"))
        loop.run(b, r, duration)

    p = process(
        8300,
        0,
        full,
        duration,
        job,
        int(0.55 * model.vram_total_bytes),
        "python train.py --model llama-1b --compile --batch-size 16",
        workers=8,
        worker_command=INDUCTOR,
        created_before_s=1800.0,
    )
    return Case(
        full,
        FAMILY,
        scenario([model], [p], duration, 1.0, 0, full),
        Verdict(
            top=expect("compute-bound", gpu=0),
            healthy=True,
            must_show=(expect("warm-up", gpu=0, pid=8300),),
            must_not=(expect("input-starved"), expect("idle-holding-vram")),
            why="Inductor's compile workers are busy while autotuning runs short GPU bursts: "
            "warm-up, not a DataLoader too slow; then kernels run back to back.",
        ),
        ("torch-compile",),
    )


def cases() -> list[Case]:
    return [_vllm_engine_core_started_earlier(), _recompile_seen_late()]
