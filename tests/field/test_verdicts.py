"""Every case and every real log has an expected verdict, in the rule ids the docs define."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from field.cases import all_cases
from field.verdicts import Expect, Verdict, load_trace_verdicts

from gputop_hints.hints.findings import Subject
from gputop_hints.hints.rules import RULES_BY_ID as BY_RULE
from tests.support.paths import TRACES

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "field_corpus.md").read_text(encoding="utf-8")


def _new_ids() -> set[str]:
    """The rule ids docs/field_corpus.md introduces (its table of new ids)."""
    section = DOC.split("## New rule ids", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.MULTILINE))


KNOWN = set(BY_RULE) | _new_ids()


def _rules(v: Verdict) -> set[str]:
    return {e.rule for e in (*v.expected, *v.must_not, *v.accept)}


def test_the_docs_define_the_new_ids_the_cases_use() -> None:
    assert {"collective-hang", "serving-idle", "vram-preallocated", "warm-up"} <= _new_ids()
    # Every id the verdicts use is a rule now (simulation-bound and cpu-offload last).
    assert _new_ids() - set(BY_RULE) == set()


def test_every_case_has_a_verdict_in_known_rule_ids_and_cites_its_sources() -> None:
    cited = set(re.findall(r"^- \*\*([a-z0-9-]+)\*\*", DOC, flags=re.MULTILINE))
    for case in all_cases():
        v = case.verdict
        assert v.top is not None or v.healthy, case.name
        assert v.why, case.name
        assert _rules(v) <= KNOWN, (case.name, _rules(v) - KNOWN)
        assert case.sources and set(case.sources) <= cited, (case.name, set(case.sources) - cited)


def test_every_real_log_has_a_verdict() -> None:
    verdicts = load_trace_verdicts()
    for v in verdicts.values():
        assert v.top is not None or v.healthy
        assert v.why
        assert _rules(v) <= KNOWN
    if not TRACES.is_dir():
        pytest.skip(f"{TRACES} is not here")
    files = {p.name for p in TRACES.iterdir() if p.is_file() and p.name != "README.md"}
    assert files == set(verdicts)


def test_an_expectation_matches_its_rule_subtype_and_subject() -> None:
    e = Expect.parse("input-starved/num-workers-0@gpu:0|1@pid:4100", onset_s=5)
    assert e.matches("input-starved", "num-workers-0", Subject(1, 4100))
    assert not e.matches("input-starved", "cpu-bound", Subject(0, 4100))
    assert not e.matches("input-starved", "num-workers-0", Subject(2, 4100))
    assert not e.matches("input-starved", "num-workers-0", Subject(0, 4101))
    assert Expect.parse("compute-bound").matches("compute-bound", None, Subject(3))
    assert str(e) == "input-starved/num-workers-0@gpu:0|1@pid:4100"
    with pytest.raises(ValueError, match="unknown subject"):
        Expect.parse("compute-bound@node:1")
