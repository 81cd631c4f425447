"""tensor-cores-idle: with GPM, busy SMs and idle tensor pipes under a training job."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import tensor_cores_idle
from tests.hints.windows import P0, Case, Expect, G, P, apply, case, check_case, one_gpu

RULE = tensor_cores_idle.SPEC

TRAIN = P(vram_gib=40.0, cpu=60.0, frameworks=("torch",))


def gpm(active: float, tensor: float) -> G:
    """An H100 with GPM: SM active, occupancy, tensor active, DRAM active."""
    return G(vram_gib=41.0, mem=40.0, power=500.0, gpm=(active, 35.0, tensor, 40.0))


CASES: list[Case] = [
    case(
        "tensor-cores-idle/fp32-training",
        lambda: one_gpu([98.0] * 12, [TRAIN], gpu=gpm(85.0, 0.0)),
        Expect(
            P0,
            Severity.WARNING,
            evidence={"SM active % (GPM": 85, "tensor active % (GPM": 0},
        ),
    ),
    case(
        "tensor-cores-idle/sm-active-60-fires",
        lambda: one_gpu([98.0] * 12, [TRAIN], gpu=gpm(60.0, 0.5)),
        Expect(P0, Severity.WARNING),
    ),
    case(
        "tensor-cores-idle/near-miss-sm-active-59",
        lambda: one_gpu([98.0] * 12, [TRAIN], gpu=gpm(59.0, 0.0)),
        None,
    ),
    case(
        "tensor-cores-idle/near-miss-bf16-tensor-1",
        lambda: one_gpu([98.0] * 12, [TRAIN], gpu=gpm(85.0, 1.0)),
        None,
    ),
    case(
        # a server's precision is its model's: not a training setting
        "tensor-cores-idle/near-miss-inference-server",
        lambda: one_gpu(
            [98.0] * 12,
            [P(vram_gib=40.0, command="python -m vllm.entrypoints.openai.api_server")],
            gpu=gpm(85.0, 0.0),
        ),
        None,
    ),
    case(
        # without GPM nothing tells FP32 from bf16: the rule says nothing
        "tensor-cores-idle/near-miss-no-gpm",
        lambda: one_gpu([98.0] * 12, [TRAIN], gpu=G(vram_gib=41.0, power=500.0)),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_advice_names_autocast_and_tf32() -> None:
    [f] = apply(RULE, one_gpu([98.0] * 12, [TRAIN], gpu=gpm(85.0, 0.0)))
    advice = " ".join(f.advice)
    assert "autocast" in advice and "bfloat16" in advice
    assert "torch.backends.cuda.matmul.allow_tf32 = True" in advice
    assert 'torch.set_float32_matmul_precision("high")' in advice
    assert "tensor cores are busy 0.0 % (GPM)" in f.summary
