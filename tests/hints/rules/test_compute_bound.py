"""compute-bound: the healthy state, and not on the peers of a straggler."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import compute_bound
from tests.hints.windows import (
    G0,
    TORCHRUN,
    Case,
    Expect,
    P,
    W,
    case,
    check_case,
    ddp,
    one_gpu,
    shown,
)

RULE = compute_bound.SPEC


CASES: list[Case] = [
    case(
        "compute-bound/fires",
        lambda: one_gpu([95.0] * 12, [P(vram_gib=40.0, cpu=60.0, workers=(W(70.0),) * 4)]),
        Expect(
            G0,
            Severity.INFO,
            evidence={"SM % (mean)": 95, "SM % (lowest tick)": 95},
        ),
        engine=["compute-bound"],
    ),
    case(
        "compute-bound/near-miss-mean-89",
        lambda: one_gpu([89.0] * 12, [P(vram_gib=40.0)]),
        None,
    ),
    case(
        "compute-bound/near-miss-one-tick-at-59",
        lambda: one_gpu([100.0] * 11 + [59.0], [P(vram_gib=40.0)]),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_compute_bound_on_peers_of_a_straggler_is_suppressed() -> None:
    straggling = shown(ddp([95.0, 96.0, 45.0, 94.0], [TORCHRUN] * 4))
    assert [(f.rule, f.subject) for f in straggling] == [("straggler", Subject(2, 102))]
    unrelated = shown(ddp([95.0, 96.0, 45.0, 94.0], ["a.py", "b.py", "c.py", "d.py"]))
    assert sorted(f.subject.gpu_index for f in unrelated if f.rule == "compute-bound") == [0, 1, 3]
