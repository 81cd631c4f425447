"""collective-hang: ~100 % busy at near-idle power names the rank to look at."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import collective_hang
from tests.hints.windows import (
    PID,
    THRESHOLDS,
    TORCHRUN,
    Case,
    Expect,
    G,
    P,
    Run,
    Tick,
    case,
    check_case,
    window,
)

RULE = collective_hang.SPEC


def ranks(
    sms: list[float],
    powers: list[float],
    cpus: list[float] | None = None,
    active: list[float] | None = None,
) -> Run:
    """Four ranks of one job (pid 100+i) with the given SM % and power (W of a 700 W limit);
    ``active``: each GPU's GPM SM activity (None: no GPM)."""
    cpus = cpus or [100.0] * len(sms)
    gpms = [None if active is None else (a, 5.0, 0.0, 1.0) for a in active or sms]
    tick = Tick(
        tuple(
            G(index=i, sm=sm, vram_gib=31.0, power=pw, gpm=gpms[i])
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
    case(
        # GPM: the SMs hold NCCL's few channel blocks, nothing else -- spinning for certain,
        # even at a power (40 % of the limit) that alone would not say so
        "hang/gpm-sm-active-near-zero-decides-over-power",
        lambda: (
            ranks(
                [100.0, 100.0, 0.0, 100.0],
                [280.0, 280.0, 80.0, 280.0],
                [100, 100, 0.5, 100],
                active=[6.0, 6.0, 0.0, 6.0],
            ).history
        ),
        Expect(
            Subject(2, 102),
            Severity.CRITICAL,
            evidence={"SM active % (GPM": 6.0, "power / enforced limit": 40.0},
        ),
    ),
    case(
        # GPM: busy SMs at low power are work (a light but real kernel), not a spin
        "hang/gpm-near-miss-sm-active-15",
        lambda: ranks([100.0] * 4, [110.0] * 4, active=[15.0] * 4).history,
        None,
    ),
]


def test_gpm_evidence_says_certain_and_power_is_context() -> None:
    history = ranks([100.0] * 4, [110.0] * 4, active=[4.0] * 4).history
    findings = collective_hang.check(window(history), THRESHOLDS)
    assert {f.subject.gpu_index for f in findings} == {0, 1, 2, 3}
    f = findings[0]
    spin = next(e for e in f.evidence if e.metric.startswith("SM active % (GPM"))
    assert spin.met is True and "for certain" in spin.threshold
    power = next(e for e in f.evidence if e.metric.startswith("power"))
    assert power.met is None and "SM activity decides" in power.threshold
    assert "SM activity at 4 % (GPM)" in f.summary


def test_without_gpm_power_decides_as_before() -> None:
    [f] = collective_hang.check(
        window(Run().feed([Tick((G(sm=100.0, power=110.0),), (P(),))] * 12).history),
        THRESHOLDS,
    )
    assert not [e for e in f.evidence if "GPM" in e.metric]
    assert "of its power limit" in f.summary


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)
