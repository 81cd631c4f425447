"""The evaluation: a result per case, the top finding as documented, and the scores."""

from __future__ import annotations

from field.case import Case
from field.cases import all_cases
from field.evaluate import (
    Seen,
    evaluate,
    format_cases,
    format_rules,
    format_summary,
    judge,
    top_finding,
)
from field.verdicts import Verdict, expect

from gputop_hints.hints.findings import Severity, Subject

SUBSET = [
    "single/healthy-compute/a100-40-s0",
    "slow/low-26pct-60min/v100-s1/log-60s",
    "shared/starved-beside-notebook/a100-40-s0",
]


def _case(name: str) -> Case:
    return next(c for c in all_cases() if c.name == name)


def test_the_evaluation_returns_a_result_per_case_and_prints_its_tables() -> None:
    result = evaluate(_case(n) for n in SUBSET)
    assert [c.name for c in result.cases] == SUBSET
    for c in result.cases:
        assert c.ticks > 0
        assert c.right == (not c.problems)
        assert set(c.detect_s) == {str(e) for e in c.verdict.expected}
    assert 0.0 <= result.accuracy <= 1.0
    expected = sum(len(c.verdict.expected) for c in result.cases)
    assert sum(r.true_positives + r.misses for r in result.rules.values()) == expected
    text = format_cases(result) + format_rules(result) + format_summary(result)
    assert all(name in text for name in SUBSET)
    assert "overall:" in text


def _seen(
    rule: str, severity: Severity, visible: float, first: float, pid: int | None = None
) -> Seen:
    s = Seen(rule, Subject(0, pid), severity, first, visible_s=visible)
    s.subtypes[""] = visible
    return s


def test_the_top_finding_is_the_worst_then_the_longest_then_the_first() -> None:
    info_long = _seen("compute-bound", Severity.INFO, 300, 0)
    warn_short = _seen("idle-holding-vram", Severity.WARNING, 20, 50, pid=7)
    warn_long = _seen("small-batch", Severity.WARNING, 40, 90, pid=7)
    overlap = _seen("overlap-explained", Severity.CRITICAL, 500, 0)
    assert top_finding([info_long, warn_short, warn_long, overlap]) is warn_long
    tie = _seen("low-utilization", Severity.WARNING, 40, 10)
    assert top_finding([warn_long, tie]) is tie
    assert top_finding([overlap]) is None


def test_a_warning_on_a_healthy_case_or_a_forbidden_finding_makes_it_wrong() -> None:
    case = _case("single/healthy-compute/a100-40-s0")
    ok = judge(case, [_seen("compute-bound", Severity.INFO, 200, 5)], 300)
    assert ok.right
    warned = judge(
        case,
        [
            _seen("compute-bound", Severity.INFO, 200, 5),
            _seen("throttled", Severity.WARNING, 10, 9),
        ],
        300,
    )
    assert not warned.right
    assert any("warning on healthy" in p for p in warned.problems)
    forbidden = judge(
        case,
        [
            _seen("compute-bound", Severity.INFO, 200, 5),
            _seen("small-batch", Severity.INFO, 5, 9, pid=4100),
        ],
        300,
    )
    assert not forbidden.right
    assert any("forbidden" in p for p in forbidden.problems)


def test_time_to_detect_runs_from_the_onset() -> None:
    case = _case("single/healthy-compute/a100-40-s0")
    late = Case(
        case.name,
        case.family,
        case.scenario,
        Verdict(top=expect("compute-bound", gpu=0, onset_s=30.0), healthy=True),
        case.sources,
    )
    result = judge(late, [_seen("compute-bound", Severity.INFO, 200, 42)], 300)
    assert result.detect_s == {"compute-bound@gpu:0": 12.0}
