"""serving-idle: an inference server idle between request bursts is serving, not stalled."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import serving_idle
from tests.hints.windows import PID, Case, Expect, G, P, Run, Tick, case, check_case, cycle, one_gpu

RULE = serving_idle.SPEC

VLLM = "python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B-Instruct"


def _bursts(command: str, cpu: float = 2.0) -> list[P]:
    return [P(vram_gib=70.0, cpu=cpu, command=command, sm=None)]


CASES: list[Case] = [
    case(
        "serving/vllm-idle-half-the-time",
        # Own samples in the bursts, none between: no sample = ran nothing (0 %).
        lambda: (
            Run()
            .feed(
                [
                    Tick(
                        (G(sm=sm, vram_gib=71.0),),
                        (P(vram_gib=70.0, cpu=2.0, command=VLLM, sm=sm or None),),
                    )
                    for sm in cycle([80.0, 80.0, 0.0, 0.0], 40)
                ]
            )
            .history
        ),
        Expect(Subject(0, PID), Severity.INFO, evidence={"ticks with no kernel": 50}),
        # No starved, small-batch or idle-VRAM advice for a server; its flat 87.5 % is
        # vLLM's pool (default 0.9) even though the log never saw it taken (issue 23).
        engine=["serving-idle", "vram-preallocated"],
    ),
    case(
        "serving/llama-server-fully-idle",
        lambda: one_gpu([0.0] * 20, _bursts("./build/bin/llama-server -m m.gguf -ngl 99")),
        Expect(Subject(0, PID), Severity.INFO, evidence={"ticks with no kernel": 100}),
    ),
    case(
        "serving/near-miss-a-training-script-is-not-a-server",
        lambda: one_gpu([0.0] * 20, _bursts("python train.py --serve-metrics")),
        None,
    ),
    case(
        "serving/near-miss-busy-all-the-time",
        lambda: one_gpu([90.0] * 20, [P(vram_gib=70.0, command=VLLM, sm=90.0)]),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)
