"""vram-near-limit: warning at 95 %, critical at 99 % of VRAM."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import vram_near_limit
from tests.hints.windows import (
    G0,
    Case,
    Expect,
    G,
    case,
    check_case,
    one_gpu,
)

RULE = vram_near_limit.SPEC


CASES: list[Case] = [
    case(
        "vram/warning-96-percent",
        lambda: one_gpu([95.0] * 4, gpu=G(vram_gib=76.8)),
        Expect(G0, Severity.WARNING, evidence={"VRAM used / total": 96}),
    ),
    case(
        "vram/critical-99.5-percent",
        lambda: one_gpu([95.0] * 4, gpu=G(vram_gib=79.6)),
        Expect(G0, Severity.CRITICAL, evidence={"VRAM used / total": 99.5}),
    ),
    case(
        "vram/near-miss-94.9-percent",
        lambda: one_gpu([95.0] * 4, gpu=G(vram_gib=75.92)),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)
