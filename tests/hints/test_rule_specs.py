"""Every rule is complete: configured, documented, tested, and known to the report.

A rule is one module with a ``SPEC`` (gputop_hints/hints/rules/). What it takes
to add one is listed in docs/hints.md, "Adding a rule"; these tests fail, naming
the rule and what it lacks, when any of it is missing -- so a rule cannot ship
without its YAML block, its docs section, its table of test cases, or the
metrics a report needs to say whether a log can evaluate it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from typing import Any

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
from gputop_hints.hints.thresholds import DEFAULTS_PATH, Thresholds, field_type
from gputop_hints.hints.thresholds_base import General, Hysteresis
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
    causes = [f"{spec.id} (cause)" for spec in ALL_RULES if spec.cause_needs]
    assert list(RULE_NEEDS) == [spec.id for spec in ALL_RULES] + causes
    assert "input-starved (cause)" in causes  # the GPU-level duty cycle runs without it
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


RULES_DIR = REPO / "gputop_hints" / "hints" / "rules"
RULES_PACKAGE = "gputop_hints.hints.rules"
HELPERS = {"__init__", "spec", "shared", "signals"}
"""The modules of rules/ that are not rules: what rule modules may import from rules/."""
RULE_MODULES = sorted(p.stem for p in RULES_DIR.glob("*.py") if p.stem not in HELPERS)


def _imports(module: str) -> list[tuple[str, bool]]:
    """(imported module, under ``if TYPE_CHECKING:``) for each import in a rules/ module;
    ``from package import name`` counts as importing ``package.name`` too."""
    tree = ast.parse((RULES_DIR / f"{module}.py").read_text(encoding="utf-8"))
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            guarded.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, id(node) in guarded) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = (
                    RULES_PACKAGE.rsplit(".", node.level - 1)[0]
                    if node.level > 1
                    else RULES_PACKAGE
                )
                base = f"{parent}.{base}" if base else parent
            out.append((base, id(node) in guarded))
            out.extend((f"{base}.{alias.name}", id(node) in guarded) for alias in node.names)
    return out


def test_the_rule_modules_are_the_rules() -> None:
    assert sorted(spec.thresholds for spec in ALL_RULES) == RULE_MODULES


@pytest.mark.parametrize("module", sorted(HELPERS - {"__init__"}) + RULE_MODULES)
def test_no_rule_module_imports_another(module: str) -> None:
    # What one rule computes and others ask lives in rules/signals.py (docs/hints.md).
    siblings = {f"{RULES_PACKAGE}.{m}" for m in RULE_MODULES} - {f"{RULES_PACKAGE}.{module}"}
    bad = sorted({name for name, _ in _imports(module) if name in siblings})
    assert not bad, f"rules/{module}.py imports the rule module(s) {bad}; move it to signals.py"


@pytest.mark.parametrize("module", sorted(HELPERS) + RULE_MODULES)
def test_rules_name_thresholds_only_for_types(module: str) -> None:
    # thresholds imports every rule for its section; a run-time import back is a cycle.
    at_run_time = [
        name
        for name, typing_only in _imports(module)
        if name.startswith("gputop_hints.hints.thresholds")
        and not name.startswith("gputop_hints.hints.thresholds_base")
        and not typing_only
    ]
    assert not at_run_time, f"rules/{module}.py imports thresholds outside TYPE_CHECKING"


@SPECS
def test_rule_thresholds_class_lives_in_its_own_module(spec: RuleSpec) -> None:
    cls: Any = spec.thresholds_class
    assert cls.__module__ == f"{RULES_PACKAGE}.{spec.thresholds}", (
        f"{spec.id}: its thresholds class {cls.__name__} is defined in {cls.__module__}"
    )
    params = getattr(cls, "__dataclass_params__", None)
    assert params is not None and params.frozen, f"{spec.id}: {cls.__name__} is no frozen dataclass"
    last = fields(cls)[-1]
    assert last.name == "hysteresis" and field_type(cls, last.name) is Hysteresis


def test_thresholds_sections_are_general_and_each_rules_class_in_order() -> None:
    declared = [(f.name, field_type(Thresholds, f.name)) for f in fields(Thresholds)]
    assert declared == [("general", General)] + [
        (spec.thresholds, spec.thresholds_class) for spec in ALL_RULES
    ]


def test_a_rule_without_its_thresholds_section_fails_at_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gputop_hints.hints.thresholds as thresholds

    thresholds._check_sections()  # as it is: fine
    monkeypatch.setattr(thresholds, "ALL_RULES", ALL_RULES[:-1])
    with pytest.raises(TypeError, match="each rule's section in ALL_RULES order"):
        thresholds._check_sections()
    monkeypatch.setattr(thresholds, "ALL_RULES", ALL_RULES[1:2] + ALL_RULES[:1] + ALL_RULES[2:])
    with pytest.raises(TypeError):
        thresholds._check_sections()
