"""small-batch: steady moderate SM, little VRAM, a pegged main process."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Scope, Severity
from gputop_hints.hints.rules import small_batch
from tests.hints.windows import (
    P0,
    PEGGED,
    SAWTOOTH,
    Case,
    Expect,
    G,
    P,
    W,
    apply,
    case,
    check_case,
    one_gpu,
    shown,
)

RULE = small_batch.SPEC


CASES: list[Case] = [
    case(
        "confusion/sawtooth-is-starved-not-small-batch",
        lambda: one_gpu(SAWTOOTH, [PEGGED], gpu=G(vram_gib=5.0)),
        None,
        engine=["input-starved"],
    ),
    case(
        "sawtooth-1s/only-1hz-values-small-batch-evidence",
        lambda: one_gpu([45.0] * 12, [P(vram_gib=6.0)]),
        Expect(P0, Severity.WARNING, evidence={"time in idle gaps": 0}),
    ),
    case(
        "small-batch/fires",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=4.0, cpu=99.0)]),
        Expect(
            P0,
            Severity.WARNING,
            evidence={
                "SM % (mean)": 40,
                "time in idle gaps": 0,
                "VRAM share of the card": 5,
                "main process CPU (mean)": 99,
                "busy workers": 0,
            },
            scope=Scope.DEVICE,
        ),
        engine=["small-batch"],
    ),
    case(
        "small-batch/process-sm-known",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=4.0, sm=35.0)]),
        Expect(P0, Severity.WARNING, evidence={"SM % (mean)": 35}, scope=Scope.PROCESS),
    ),
    case(
        "small-batch/sm-15-is-moderate",
        lambda: one_gpu([15.0] * 12, [P(vram_gib=4.0)]),
        Expect(P0, Severity.WARNING),
    ),
    case(
        "small-batch/near-miss-sm-14",
        lambda: one_gpu([14.0] * 12, [P(vram_gib=4.0)]),
        None,
    ),
    case(
        "small-batch/near-miss-sm-70",
        lambda: one_gpu([70.0] * 12, [P(vram_gib=4.0)]),
        None,
    ),
    case(
        "small-batch/near-miss-vram-25-percent",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=20.0)]),
        None,
    ),
    case(
        "small-batch/near-miss-main-84",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=4.0, cpu=84.0)]),
        None,
    ),
    case(
        "small-batch/near-miss-a-busy-worker",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=4.0, workers=(W(21.0),))]),
        None,
    ),
    case(
        # GPM: utilization 92 % (past the 70 % bound) but warps on only 25 % of the SMs:
        # each kernel fills few SMs -- a small step, seen at high utilization too
        "small-batch/gpm-high-utilization-sm-active-low",
        lambda: one_gpu([92.0] * 12, [P(vram_gib=4.0)], gpu=G(gpm=(25.0, 10.0, 5.0, 8.0))),
        Expect(
            P0,
            Severity.WARNING,
            evidence={"SM % (mean)": 92, "SM active % (GPM": 25},
        ),
    ),
    case(
        # GPM: the SMs are full (SM active 50 %+): not a small step, whatever utilization says
        "small-batch/gpm-near-miss-sm-active-50",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=4.0)], gpu=G(gpm=(50.0, 30.0, 20.0, 30.0))),
        None,
    ),
    case(
        "small-batch/near-miss-one-idle-gap",
        lambda: one_gpu([40.0] * 9 + [0.0, 40.0, 40.0], [P(vram_gib=4.0)]),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_small_batch_advice_scales_the_batch_to_the_vram_headroom() -> None:
    [f] = apply(RULE, one_gpu([40.0] * 12, [P(vram_gib=4.0)]))
    # 4 GiB of 80, aiming at 80 % of the card: 16x
    assert "16x" in f.advice[0]


def test_with_gpm_the_summary_names_the_sm_activity() -> None:
    [f] = apply(RULE, one_gpu([92.0] * 12, [P(vram_gib=4.0)], gpu=G(gpm=(25.0, 10.0, 5.0, 8.0))))
    assert "hold warps on only 25 % of the SMs (GPM)" in f.summary


def test_without_gpm_high_utilization_is_not_small_batch() -> None:
    # the same window without GPM: utilization alone above 70 % is not "moderate"
    assert not apply(RULE, one_gpu([92.0] * 12, [P(vram_gib=4.0)]))


def test_without_gpm_the_finding_says_it_is_less_certain_and_with_gpm_it_does_not() -> None:
    """Where the GPU gives no SM activity the engine says the verdict rests on utilization
    (which counts any kernel as busy); where GPM measured it, no such note."""
    [guessed] = [f for f in shown(one_gpu([40.0] * 12, [P(vram_gib=4.0)])) if f.rule == RULE.id]
    notes = [e.metric for e in guessed.evidence if e.threshold == "fallback"]
    assert any("less certain" in n for n in notes)
    gpm = one_gpu([92.0] * 12, [P(vram_gib=4.0)], gpu=G(gpm=(25.0, 10.0, 5.0, 8.0)))
    [measured] = [f for f in shown(gpm) if f.rule == RULE.id]
    assert not any("less certain" in e.metric for e in measured.evidence)
