"""collective-hang: ~100 % busy at near-idle power names the rank to look at."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import collective_hang
from tests.hints.windows import PID, TORCHRUN, Case, Expect, G, P, Run, Tick, case, check_case

RULE = collective_hang.SPEC


def ranks(sms: list[float], powers: list[float], cpus: list[float] | None = None) -> Run:
    """Four ranks of one job (pid 100+i) with the given SM % and power (W of a 700 W limit)."""
    cpus = cpus or [100.0] * len(sms)
    tick = Tick(
        tuple(
            G(index=i, sm=sm, vram_gib=31.0, power=pw)
            for i, (sm, pw) in enumerate(zip(sms, powers, strict=True))
        ),
        tuple(
            P(pid=100 + i, gpu=i, vram_gib=30.0, cpu=cpus[i], command=TORCHRUN)
            for i in range(len(sms))
        ),
    )
    return Run().feed([tick] * 12)


CASES: list[Case] = [
    case(
        "hang/rank-2-stopped-others-spin",
        lambda: (
            ranks(
                [100.0, 100.0, 0.0, 100.0], [110.0, 110.0, 80.0, 110.0], [100, 100, 0.5, 100]
            ).history
        ),
        Expect(Subject(2, 102), Severity.CRITICAL, evidence={"power / enforced limit": 15.7}),
        # The stopped rank is not an idle notebook: no idle-holding-vram for it.
        engine=["collective-hang"],
    ),
    case(
        "hang/near-miss-full-power-is-work",
        lambda: ranks([100.0] * 4, [600.0] * 4).history,
        None,
    ),
    case(
        "hang/near-miss-one-tick-below-95",
        lambda: (
            Run()
            .feed(
                [Tick((G(sm=100.0 if i != 10 else 90.0, power=110.0),), (P(),)) for i in range(12)]
            )
            .history
        ),
        None,
    ),
    case(
        "hang/single-rank-spinning-peer-on-another-node",
        lambda: Run().feed([Tick((G(sm=100.0, power=110.0),), (P(),))] * 12).history,
        Expect(Subject(0, PID), Severity.CRITICAL),
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)
