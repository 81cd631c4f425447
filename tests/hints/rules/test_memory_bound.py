"""memory-bound: memory-access % high and at or above SM %."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import memory_bound
from tests.hints.windows import (
    G0,
    Case,
    Expect,
    G,
    P,
    case,
    check_case,
    one_gpu,
)

RULE = memory_bound.SPEC


CASES: list[Case] = [
    case(
        "memory-bound/fires",
        lambda: one_gpu([80.0] * 12, [P(vram_gib=40.0, cpu=60.0)], gpu=G(mem=85.0)),
        Expect(
            G0,
            Severity.WARNING,
            evidence={"memory-access % (mean)": 85, "SM % (mean)": 80},
        ),
        engine=["memory-bound", "overlap-explained"],
    ),
    case(
        "memory-bound/near-miss-memory-59",
        lambda: one_gpu([50.0] * 12, [P(vram_gib=40.0)], gpu=G(mem=59.0)),
        None,
    ),
    case(
        "memory-bound/near-miss-11-points-below-sm",
        lambda: one_gpu([81.0] * 12, [P(vram_gib=40.0)], gpu=G(mem=70.0)),
        None,
    ),
    case(
        # kernels run 93 % of the time, memory is busy 95 %: the busiest resource
        "memory-bound/busy-gpu-memory-busier-than-kernels",
        lambda: one_gpu([93.0] * 12, [P(vram_gib=40.0)], gpu=G(mem=95.0)),
        Expect(G0, Severity.WARNING, evidence={"memory-access % (mean)": 95}),
    ),
    case(
        # at 90 % SM and above the 10-point margin goes: memory must be busier
        "memory-bound/near-miss-busy-gpu-memory-equal",
        lambda: one_gpu([93.0] * 12, [P(vram_gib=40.0)], gpu=G(mem=93.0)),
        None,
    ),
    case(
        # both pinned at 100: saturated time shares tell nothing (compute-bound)
        "memory-bound/near-miss-saturated-at-99",
        lambda: one_gpu([99.0] * 12, [P(vram_gib=40.0)], gpu=G(mem=100.0)),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)
