"""warm-up: a job's first minutes on the host are labelled, not warned on."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import warm_up
from tests.hints.windows import PID, Case, Expect, P, W, case, check_case, cycle, one_gpu

RULE = warm_up.SPEC

CASES: list[Case] = [
    case(
        "warm-up/compile-main-and-workers-busy-gpu-idle",
        lambda: one_gpu(
            [0.0] * 30,
            [P(cpu=100.0, workers=(W(70.0, "R"),) * 4, sm=None, started_s=20.0)],
        ),
        Expect(Subject(0, PID), Severity.INFO, evidence={"SM % since start": 0}),
        engine=["warm-up"],
    ),
    case(
        "warm-up/dataset-loading-in-d-state",
        lambda: one_gpu([0.0] * 30, [P(cpu=30.0, state="D", sm=None, started_s=5.0)]),
        Expect(Subject(0, PID), Severity.INFO),
    ),
    case(
        "warm-up/near-miss-old-process",
        lambda: one_gpu([0.0] * 30, [P(cpu=100.0, sm=None, started_s=600.0)]),
        None,
    ),
    case(
        "warm-up/near-miss-already-bursting",
        # A young job that already runs kernels a third of the time trains (maybe starved).
        lambda: one_gpu(cycle([90.0, 0.0, 0.0], 30), [P(cpu=100.0, started_s=5.0)]),
        None,
    ),
    case(
        "warm-up/near-miss-sleeping-notebook",
        lambda: one_gpu([0.0] * 30, [P(cpu=1.0, state="S", sm=None, started_s=20.0)]),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)
