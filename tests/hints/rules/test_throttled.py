"""throttled: power and thermal clock reasons while busy."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import throttled
from tests.hints.windows import (
    G0,
    THRESHOLDS,
    Case,
    Expect,
    G,
    Run,
    Tick,
    case,
    check_case,
    one_gpu,
    window,
)

RULE = throttled.SPEC


CASES: list[Case] = [
    case(
        "throttled/power-clocks-drop",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=("sw_power_cap",), clock=1500)),
        Expect(
            G0,
            Severity.WARNING,
            "power",
            {"ticks with power/thermal reasons": 100, "SM % (mean)": 95},
        ),
    ),
    case(
        # Full load at the default limit with clocks at their maximum: the boost at work.
        "throttled/near-miss-default-limit-full-clock",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=("sw_power_cap",), power=690.0)),
        None,
    ),
    case(
        "throttled/power-limit-lowered",
        lambda: one_gpu(
            [95.0] * 12,
            gpu=G(throttle=("sw_power_cap",), power=495.0, limit=500.0, default_limit=700.0),
        ),
        Expect(G0, Severity.WARNING, "power"),
    ),
    case(
        "throttled/thermal",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=("hw_thermal", "sw_thermal"))),
        Expect(G0, Severity.WARNING, "thermal"),
    ),
    case(
        "throttled/power-and-thermal",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=("sw_power_cap", "hw_slowdown"))),
        # Heat names the cause: its advice (cooling) is what helps.
        Expect(G0, Severity.WARNING, "thermal"),
    ),
    case(
        "throttled/idle-gpu-costs-nothing",
        lambda: one_gpu([5.0] * 12, gpu=G(throttle=("sw_power_cap",))),
        None,
    ),
    case(
        "throttled/gpu-idle-reason-is-harmless",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=("gpu_idle",))),
        None,
    ),
    case(
        "throttled/half-the-ticks-is-enough",
        lambda: (
            Run()
            .feed(
                [
                    Tick((G(sm=95.0, clock=1500, throttle=("sw_power_cap",) if i % 2 else ()),))
                    for i in range(12)
                ]
            )
            .history
        ),
        Expect(G0, Severity.WARNING, "power", {"ticks with power/thermal": 50}),
    ),
    case(
        "throttled/near-miss-a-third-of-the-ticks",
        lambda: (
            Run()
            .feed(
                [
                    Tick((G(sm=95.0, throttle=("sw_power_cap",) if i % 3 == 0 else ()),))
                    for i in range(12)
                ]
            )
            .history
        ),
        None,
    ),
    case(
        "throttled/near-miss-reasons-unknown",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=None)),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_stock_limit_unknown_clocks_near_boost_is_info_not_throttled() -> None:
    # sw_power_cap all the time, clocks at 1755 of 1980 MHz (89 %), no default limit in the data
    history = one_gpu([97.0] * 12, gpu=G(throttle=("sw_power_cap",), clock=1755, power=698.0))
    [f] = throttled.SPEC.check(window(history), THRESHOLDS)
    assert f.severity is Severity.INFO and f.subtype == "at-limit"
    assert "clocks near boost" in f.label and "no default limit" in f.summary


def test_stock_limit_known_or_clocks_well_below_boost_still_warn() -> None:
    far = one_gpu([97.0] * 12, gpu=G(throttle=("sw_power_cap",), clock=1300, power=698.0))
    [f] = throttled.SPEC.check(window(far), THRESHOLDS)
    assert f.severity is Severity.WARNING and f.subtype == "power"
    known = one_gpu(
        [97.0] * 12,
        gpu=G(throttle=("sw_power_cap",), clock=1755, power=698.0, default_limit=700.0),
    )
    [g] = throttled.SPEC.check(window(known), THRESHOLDS)
    assert g.severity is Severity.WARNING
