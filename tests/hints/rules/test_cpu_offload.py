"""cpu-offload: a threaded host optimizer step, PCIe both ways, the GPU waiting."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Scope, Severity
from gputop_hints.hints.rules import cpu_offload, input_starved
from tests.hints.windows import (
    P0,
    Case,
    Expect,
    G,
    P,
    Run,
    Tick,
    apply,
    case,
    check_case,
)

RULE = cpu_offload.SPEC

DEEPSPEED = "python train.py --deepspeed --deepspeed_config ds_zero2_offload.json"


def step(
    cpu: float = 650.0,
    rx: float = 3e9,
    tx: float = 3e9,
    busy_sm: float = 95.0,
    idle_sm: float = 0.0,
    command: str = DEEPSPEED,
    ticks: int = 12,
) -> Run:
    """ZeRO-Offload at one step in 3 s: backward streams gradients out (tx), the host
    steps the optimizer on many threads (the GPU idle), parameters come back in (rx)."""
    proc = P(cpu=cpu, command=command)
    phases = [
        G(sm=busy_sm, tx=tx, rx=0.0),
        G(sm=idle_sm, rx=0.0, tx=0.0),
        G(sm=idle_sm, rx=rx, tx=0.0),
    ]
    return Run().feed([Tick((phases[i % 3],), (proc,)) for i in range(ticks)])


CASES: list[Case] = [
    case(
        "offload/deepspeed-named",
        lambda: step().history,
        Expect(
            P0,
            Severity.WARNING,
            evidence={
                "main process CPU (mean)": 650,
                "PCIe host -> device (mean)": 1e9,
                "PCIe device -> host (mean)": 1e9,
            },
            scope=Scope.PROCESS,
        ),
    ),
    case(
        "offload/unnamed-is-a-question",
        lambda: step(command="python train.py --config big.yaml").history,
        Expect(P0, Severity.WARNING, evidence={"main process CPU (mean)": 650}),
    ),
    case(
        "offload/near-miss-main-on-under-3-cores",
        lambda: step(cpu=290.0).history,
        None,
    ),
    case(
        "offload/near-miss-one-way-traffic-is-plain-training",
        lambda: step(tx=0.0).history,
        None,
    ),
    case(
        "offload/near-miss-back-traffic-under-a-quarter",
        # rx 1 GB/s mean, tx 0.24 GB/s: the smaller way is 24 % of the larger
        lambda: step(tx=0.72e9).history,
        None,
    ),
    case(
        "offload/near-miss-under-0.2-gb-per-s",
        lambda: step(rx=0.57e9, tx=0.57e9).history,
        None,
    ),
    case(
        "offload/near-miss-gpu-never-waits",
        lambda: step(idle_sm=90.0).history,
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_the_label_says_whether_the_command_line_confirms_it() -> None:
    (named,) = apply(RULE, step().history)
    (unnamed,) = apply(RULE, step(command="python train.py").history)
    assert not named.label.endswith("?") and unnamed.label.endswith("?")
    assert "DeepSpeed" in named.summary


def test_input_starved_leaves_a_threaded_host_step_alone() -> None:
    """The GPU's gaps are the host computing on many threads, not a DataLoader: no
    num_workers advice, even when the PCIe readings do not (yet) show both ways."""
    assert apply(input_starved.SPEC, step().history) == []
    one_way = step(tx=0.0).history  # offload not shown: PCIe seen one way only
    assert apply(RULE, one_way) == []
    assert apply(input_starved.SPEC, one_way) == []
    # The same GPU pattern with a main process on one core is a loader in the loop.
    (starved,) = apply(input_starved.SPEC, step(cpu=99.0, tx=0.0).history)
    assert starved.subtype == "num-workers-0"
