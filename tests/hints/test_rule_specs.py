"""Every rule is complete: configured, documented, tested, and known to the report.

A rule is one module with a ``SPEC`` (gputop_hints/hints/rules/). What it takes
to add one is listed in docs/hints.md, "Adding a rule"; these tests fail, naming
the rule and what it lacks, when any of it is missing -- so a rule cannot ship
without its YAML block, its docs section, its table of test cases, or the
metrics a report needs to say whether a log can evaluate it.
"""

from __future__ import annotations

import re
from dataclasses import fields

import pytest
import yaml

from gputop_hints.hints.catalogue import CATALOGUE
from gputop_hints.hints.rules import (
    ALL_RULES,
    ANCHORS,
    LOW_UTILIZATION,
    LOW_UTILIZATION_EXPLAINED_BY,
    RULE_NEEDS,
    RuleSpec,
)
from gputop_hints.hints.thresholds import DEFAULTS_PATH, Thresholds
from gputop_hints.streams import ALL_METRICS
from tests.hints.windows import rule_tables
from tests.support.paths import REPO

SPECS = pytest.mark.parametrize("spec", ALL_RULES, ids=lambda spec: spec.id)


def _slugs(markdown: str) -> set[str]:
    """GitHub-style anchors of a markdown file's headings, plus explicit <a id=...>."""
    out = set(re.findall(r'<a id="([^"]+)"', markdown))
    for heading in re.findall(r"^#+\s+(.*)$", markdown, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


DOCS = (REPO / "docs" / "hints.md").read_text(encoding="utf-8")
DOCS_ANCHORS = _slugs(DOCS)
DEFAULTS_YAML = yaml.safe_load(DEFAULTS_PATH.read_text(encoding="utf-8"))
TABLES = {rule.id: cases for rule, cases in rule_tables()}


def test_rule_ids_and_thresholds_sections_are_unique() -> None:
    ids = [spec.id for spec in ALL_RULES]
    sections = [spec.thresholds for spec in ALL_RULES]
    assert len(set(ids)) == len(ids)
    assert len(set(sections)) == len(sections)


@SPECS
def test_rule_has_a_yaml_block_in_defaults(spec: RuleSpec) -> None:
    block = DEFAULTS_YAML.get(spec.thresholds)
    assert isinstance(block, dict), f"{spec.id}: no '{spec.thresholds}:' block in defaults.yaml"
    assert "hysteresis" in block, f"{spec.id}: its block in defaults.yaml has no hysteresis"
    assert spec.thresholds in {f.name for f in fields(Thresholds)}


@SPECS
def test_rule_has_a_section_in_docs_hints(spec: RuleSpec) -> None:
    assert spec.anchor in DOCS_ANCHORS, f"docs/hints.md has no '## {spec.anchor}' section"


@SPECS
def test_rule_has_its_rows_in_the_overview_and_hysteresis_tables(spec: RuleSpec) -> None:
    assert f"| [`{spec.id}`](#{spec.anchor}) |" in DOCS, f"{spec.id}: no row in the overview"
    row = re.search(rf"^\| {re.escape(spec.id)} \| ([^|]*) \| ([^|]*) \|$", DOCS, re.MULTILINE)
    assert row, f"{spec.id}: no row in docs/hints.md's hysteresis table"
    raise_after, clear_after = spec.hysteresis(Thresholds.defaults())
    assert row.group(1).startswith(f"{raise_after:g} s"), row.group(0)
    assert row.group(2) == f"{clear_after:g} s", row.group(0)


@SPECS
def test_rule_has_a_table_with_a_case_that_fires(spec: RuleSpec) -> None:
    cases = TABLES.get(spec.id)
    assert cases, f"{spec.id}: no tests/hints/rules/test_{spec.thresholds}.py with RULE and CASES"
    assert any(c.expect is not None for c in cases), f"{spec.id}: no case in its table fires"
    assert any(c.expect is None for c in cases), f"{spec.id}: no near miss in its table"


def test_rule_needs_covers_every_rule_with_known_metrics() -> None:
    assert list(RULE_NEEDS) == [spec.id for spec in ALL_RULES]
    for rule, needs in RULE_NEEDS.items():
        assert needs, f"{rule} names no metric it needs"
        assert set(needs) <= set(ALL_METRICS), f"{rule}: unknown metric in {needs}"


def test_docs_name_exactly_the_rules_that_explain_low_utilization() -> None:
    # docs/hints.md#low-utilization says which findings make it stand back.
    section = DOCS.split(f"\n## {LOW_UTILIZATION}\n", 1)[1].split("\n## ", 1)[0]
    named = {spec.id for spec in ALL_RULES if f"`{spec.id}`" in section}
    assert named == LOW_UTILIZATION_EXPLAINED_BY
    assert LOW_UTILIZATION not in LOW_UTILIZATION_EXPLAINED_BY


def test_catalogue_and_anchors_follow_the_specs() -> None:
    assert [(i.rule, i.title, i.sentence, i.subject) for i in CATALOGUE] == [
        (s.id, s.title, s.sentence, s.subject) for s in ALL_RULES
    ]
    assert all(info.anchor in DOCS_ANCHORS for info in CATALOGUE)
    assert set(ANCHORS.values()) <= DOCS_ANCHORS
