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
        # GPM: SMs hold work 20 % of the time -- overstated, certain, whatever the power
        "utilization-overstated/gpm-sm-active-low-at-full-power",
        lambda: one_gpu([95.0] * 12, gpu=G(power=600.0, limit=700.0, gpm=(20.0, 10.0, 5.0, 10.0))),
        Expect(
            G0,
            Severity.INFO,
            evidence={"SM % (mean)": 95, "SM active % (GPM": 20, "power / limit": 600 / 7},
        ),
    ),
    case(
        # GPM: SMs busy 80 % at low power: real (memory-bound, light) work, not overstated
        "utilization-overstated/gpm-near-miss-sm-active-50",
        lambda: one_gpu([95.0] * 12, gpu=G(power=230.0, limit=700.0, gpm=(50.0, 30.0, 0.0, 60.0))),
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


def test_gpm_evidence_says_measured_and_power_is_context() -> None:
    # (at >= 95 % on every tick with SM active this low it would be collective-hang's spin)
    history = one_gpu([90.0] * 12, gpu=G(power=600.0, limit=700.0, gpm=(8.0, 4.0, 0.0, 2.0)))
    [f] = apply(RULE, history)
    active = next(e for e in f.evidence if e.metric.startswith("SM active"))
    assert active.met is True and "certain" in active.threshold
    power = next(e for e in f.evidence if e.metric.startswith("power / limit"))
    assert power.met is None
    assert "hold work only 8 % of the time (GPM" in f.summary
    assert not apply(compute_bound.SPEC, history)  # never "healthy" where this holds
