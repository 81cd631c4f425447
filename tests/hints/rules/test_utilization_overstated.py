"""utilization-overstated: busy by utilization, at a fraction of the power limit."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import compute_bound, utilization_overstated
from tests.hints.windows import G0, Case, Expect, G, apply, case, check_case, one_gpu

RULE = utilization_overstated.SPEC

CASES: list[Case] = [
    case(
        "utilization-overstated/busy-at-a-third-of-the-limit",
        lambda: one_gpu([95.0] * 12, gpu=G(power=230.0, limit=700.0)),
        Expect(G0, Severity.INFO, evidence={"SM % (mean)": 95, "power / limit": 230 / 7}),
    ),
    case(
        "utilization-overstated/near-miss-dense-compute-power",
        lambda: one_gpu([95.0] * 12, gpu=G(power=600.0, limit=700.0)),
        None,
    ),
    case(
        "utilization-overstated/near-miss-not-busy",
        lambda: one_gpu([50.0] * 12, gpu=G(power=200.0, limit=700.0)),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_busy_at_low_power_is_not_compute_bound() -> None:
    history = one_gpu([97.0] * 12, gpu=G(power=230.0, limit=700.0))
    assert not apply(compute_bound.SPEC, history)
    [f] = apply(RULE, history)
    assert "not compute-bound" in f.summary and "spinning" in f.summary
