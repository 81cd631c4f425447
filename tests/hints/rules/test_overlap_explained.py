"""overlap-explained: SM % + memory-access % over 100 is explained, once per GPU."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import overlap_explained
from tests.hints.windows import (
    G0,
    Case,
    Expect,
    G,
    case,
    check_case,
    one_gpu,
)

RULE = overlap_explained.SPEC


CASES: list[Case] = [
    case(
        "overlap/fires-91+66",
        lambda: one_gpu([91.0] * 8, gpu=G(mem=66.0)),
        Expect(
            G0,
            Severity.INFO,
            evidence={"SM %": 91, "memory-access %": 66, "sum": 157},
        ),
    ),
    case(
        "overlap/near-miss-sum-exactly-100",
        lambda: one_gpu([60.0] * 8, gpu=G(mem=40.0)),
        None,
    ),
    case(
        "overlap/memory-unknown",
        lambda: one_gpu([91.0] * 8, gpu=G(mem=None)),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)
