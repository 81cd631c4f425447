"""Family: frameworks whose processes do not look like a training loop's.

* vLLM V1 runs the model in a child that retitles itself ``VLLM::EngineCore``
  (setproctitle) and reserves ``gpu_memory_utilization`` (default 0.9) of the
  card (docs.vllm.ai, "Engine arguments"); a monitor started after the server
  never sees the reservation being taken, only a flat plateau.
"""

from __future__ import annotations

from field.case import Case, process, scenario
from field.hardware import H100_80GB
from field.verdicts import Verdict, expect
from field.workloads import Server

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


def cases() -> list[Case]:
    return [_vllm_engine_core_started_earlier()]
