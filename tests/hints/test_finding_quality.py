"""Evidence, advice and labels of every finding any rule table or trace test produces.

A finding is only useful if a person can check it against the numbers on
screen: each needs evidence with thresholds (at least one of them crossed),
advice, a summary, a docs link to its rule's section, and a label that fits the
inline column.
"""

from __future__ import annotations

import json

import pytest

from gputop_hints.hints.findings import Finding, Severity
from gputop_hints.hints.rules import ALL_RULES, input_starved
from gputop_hints.history import History
from tests.hints.test_rules_job import _tick as job_tick
from tests.hints.test_traces import OPENAD, openad
from tests.hints.windows import SAWTOOTH, G, P, Run, Tick, apply, one_gpu, rule_tables, shown

TABLES = rule_tables()


def _all_findings() -> list[Finding]:
    out: list[Finding] = []
    for _, cases in TABLES:
        out += [f for c in cases if c.stacks for f in shown(c.build(), c.stacks)]
    histories = [c.build() for _, cases in TABLES for c in cases]
    histories += [
        openad(OPENAD),
        openad([(100, 100)] * 12),
        one_gpu(SAWTOOTH, [P(pid=4000), P(pid=4001, vram_gib=2.0)]),
        one_gpu([12.0] * 12, [P(pid=1), P(pid=2)], gpu=G(rx=20e9, tx=10e9)),
    ]
    run = Run(history_s=600.0)
    run.feed([Tick((G(sm=0.0),), (P(vram_gib=40.0),))] * 310)
    histories.append(run.history)
    # attached to a SLURM job whose cores other processes load (test_rules_job.py)
    job_history = History(120.0, 1.0)
    job_history.extend(job_tick(float(t), foreign=40.0, sm=30.0) for t in range(20))
    histories.append(job_history)
    for h in histories:
        out += shown(h)
    # the rule under test directly as well (shown() keeps one finding per rule and subject)
    out += [f for rule, cases in TABLES for c in cases for f in apply(rule, c.build(), c.stacks)]
    return out


ALL_FINDINGS = _all_findings()


def test_the_quality_checks_cover_every_rule_and_subtype() -> None:
    assert {f.rule for f in ALL_FINDINGS} == {spec.id for spec in ALL_RULES}
    assert {f.subtype for f in ALL_FINDINGS if f.rule == input_starved.SPEC.id} == {
        "num-workers-0",
        "cpu-bound",
        "storage-bound",
        "more-workers",
        "cause-unknown",
    }
    assert {f.severity for f in ALL_FINDINGS} == set(Severity)


UNIQUE_FINDINGS = sorted(
    {(f.rule_label, f.label, f.severity): f for f in ALL_FINDINGS}.values(),
    key=lambda f: (f.rule_label, f.label, f.severity),
)


@pytest.mark.parametrize("f", UNIQUE_FINDINGS, ids=lambda f: f"{f.rule_label}:{f.label}")
def test_every_finding_is_explainable(f: Finding) -> None:
    assert f.evidence, "no evidence"
    assert all(e.threshold.strip() for e in f.evidence)
    assert any(e.met for e in f.evidence), "no evidence item crossed a threshold"
    assert f.advice and all(a.strip() for a in f.advice)
    assert f.summary.strip()
    d = f.to_dict()
    assert d["docs"] == f"docs/hints.md#{f.rule}"
    assert json.loads(json.dumps(d)) == d


@pytest.mark.parametrize("label", sorted({f.label for f in ALL_FINDINGS}))
def test_every_label_fits_24_columns(label: str) -> None:
    assert 0 < len(label) <= 24, f"{label!r} is {len(label)} characters"
