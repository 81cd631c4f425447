"""The hints on the field corpus: the classes of issue 10 fixed so far stay right.

Runs the families whose mechanisms the rules now model (healthy and lowered
power limits, heat, PCIe copies pageable and pinned, inference servers and
pre-allocation, hangs and stragglers) through History + HintEngine as live and
asserts each case's documented verdict. The full corpus, with the cases still
wrong, is in ``bench/hints_eval.py`` and ``bench/field_eval.py``; the goal there
(>= 95 % right, no warning on a healthy case) is not reached yet.
"""

from __future__ import annotations

from functools import cache

import pytest
from field.cases import all_cases
from field.evaluate import FieldResult, evaluate

FIXED_FAMILIES = ("limits", "pcie", "serving", "overstated")

STILL_WRONG = {
    # TensorFlow maps 97.5 % of the card: vram-near-limit's critical level is reached
    # before vram-preallocated's 30 s of flat VRAM have passed (hysteresis 2 s).
    "serving/tensorflow-prealloc/a100-40-s0",
    # The ranks train normally (compute-bound, correctly) for 80 s before every rank
    # starts waiting; the case forbids compute-bound at any time.
    "overstated/collective-hang/all-ranks-waiting/4xa100-40-s2",
}


@cache
def result() -> FieldResult:
    return evaluate([c for c in all_cases() if c.family in FIXED_FAMILIES])


def _names() -> list[str]:
    return [c.name for c in all_cases() if c.family in FIXED_FAMILIES]


@pytest.mark.parametrize("name", [n for n in _names() if n not in STILL_WRONG])
def test_case_gets_its_documented_verdict(name: str) -> None:
    case = next(c for c in result().cases if c.name == name)
    assert case.right, case.problems


def test_no_warning_on_a_healthy_default_power_cap_server_or_prefetch() -> None:
    warnings = [w for w in result().healthy_warnings if w.split(":")[0] not in STILL_WRONG]
    assert sum(c.verdict.healthy for c in result().cases) >= 10
    assert warnings == []
