"""simulation-bound: busy children, a light and steady GPU, no sawtooth."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Scope, Severity
from gputop_hints.hints.rules import simulation_bound
from tests.hints.windows import (
    P0,
    Case,
    Expect,
    G,
    P,
    Run,
    Tick,
    W,
    apply,
    case,
    check_case,
    cycle,
    one_gpu,
)

RULE = simulation_bound.SPEC

PPO = "python train_ppo.py --env-id ALE/Breakout-v5 --num-envs 16"
ENVS = (W(96.0, "R"),) * 16
"""Sixteen environment processes, a core each."""
STEADY = (20.0, 18.0, 22.0, 19.0, 21.0, 20.0)
"""One second of many short policy forwards at NVML's 1/6 s samples: no idle sample."""


def learner(cpu: float = 60.0, command: str = PPO, workers: tuple[W, ...] = ENVS) -> P:
    return P(vram_gib=2.5, cpu=cpu, workers=workers, command=command)


CASES: list[Case] = [
    case(
        "sim/ppo-16-envs",
        lambda: one_gpu([20.0] * 12, [learner()], samples=[STEADY] * 12),
        Expect(
            P0,
            Severity.WARNING,
            evidence={"busy child processes (of 16)": 16, "SM % (mean)": 20},
            scope=Scope.DEVICE,
        ),
        engine=["simulation-bound"],
    ),
    case(
        "sim/unnamed-is-a-question",
        lambda: one_gpu(
            [20.0] * 12, [learner(command="python main.py")], samples=[STEADY] * 12
        ),
        Expect(P0, Severity.WARNING, evidence={"busy child processes (of 16)": 16}),
    ),
    case(
        "sim/near-miss-one-busy-child",
        lambda: one_gpu(
            [20.0] * 12,
            [learner(workers=(W(96.0, "R"), *(W(5.0, "S"),) * 15))],
            samples=[STEADY] * 12,
        ),
        None,
    ),
    case(
        "sim/near-miss-sawtooth-is-input-starved",
        lambda: one_gpu(cycle([90.0, 0.0, 0.0], 12), [learner()]),
        None,
        engine=["input-starved"],
    ),
    case(
        "sim/near-miss-gpu-at-50",
        lambda: one_gpu([50.0] * 12, [learner()], samples=[(50.0,) * 6] * 12),
        None,
    ),
    case(
        "sim/near-miss-one-reading-a-tick-cannot-say-steady",
        lambda: one_gpu([20.0] * 12, [learner()]),
        None,
    ),
    case(
        "sim/near-miss-idle-gpu",
        lambda: one_gpu([1.0] * 12, [learner()], samples=[(1.0,) * 6] * 12),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_a_gpu_busy_with_another_tenant_is_shared_not_waiting() -> None:
    """Two jobs on one GPU, each with its own SM under 50 % and busy loader workers: the
    GPU is full, so neither is bound by CPU simulation."""
    a = P(pid=4100, sm=45.0, vram_gib=20.0, cpu=85.0, workers=(W(60.0, "R"),) * 8)
    b = P(pid=4200, sm=48.0, vram_gib=20.0, cpu=85.0, workers=(W(60.0, "R"),) * 8)
    busy = G(sm=96.0, samples=(96.0,) * 6)
    history = Run().feed([Tick((busy,), (a, b)) for _ in range(12)]).history
    assert apply(RULE, history) == []
    # The same process alone on a GPU that waits is.
    waiting = G(sm=45.0, samples=(44.0, 46.0, 45.0, 45.0, 44.0, 46.0))
    alone = Run().feed([Tick((waiting,), (a,)) for _ in range(12)]).history
    (found,) = apply(RULE, alone)
    assert found.label.endswith("?")
