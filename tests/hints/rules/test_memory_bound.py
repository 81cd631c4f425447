"""memory-bound: memory-access % high and at or above SM %."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import memory_bound
from tests.hints.windows import (
    G0,
    THRESHOLDS,
    Case,
    Expect,
    G,
    P,
    case,
    check_case,
    one_gpu,
    window,
)

RULE = memory_bound.SPEC
BIG = [P(vram_gib=40.0)]


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
        # GPM: 82 % of peak DRAM bandwidth (HBM's practical ceiling is ~80-90 %) with
        # kernels on the SMs -- even though the time shares alone (SM 99, mem 99) say nothing
        "memory-bound/gpm-dram-near-practical-peak",
        lambda: one_gpu([99.0] * 12, BIG, gpu=G(mem=99.0, gpm=(70.0, 40.0, 5.0, 82.0))),
        Expect(
            G0,
            Severity.WARNING,
            evidence={"DRAM bandwidth % (GPM": 82, "SM active % (GPM": 70},
        ),
    ),
    case(
        # GPM: DRAM at 60 % of peak is not at the ceiling, though the time shares would fire
        "memory-bound/gpm-near-miss-dram-69",
        lambda: one_gpu([80.0] * 12, BIG, gpu=G(mem=85.0, gpm=(60.0, 30.0, 5.0, 69.0))),
        None,
    ),
    case(
        # GPM: the bandwidth is used by copies, not kernels (SM active under 20 %)
        "memory-bound/gpm-near-miss-copies-not-kernels",
        lambda: one_gpu([30.0] * 12, BIG, gpu=G(mem=85.0, gpm=(19.0, 5.0, 0.0, 85.0))),
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


def test_gpm_evidence_says_measured() -> None:
    history = one_gpu(
        [99.0] * 12, BIG, gpu=G(mem=99.0, gpm=(70.0, 40.0, 5.0, 82.0))
    )
    [f] = memory_bound.check(window(history), THRESHOLDS)
    dram = next(e for e in f.evidence if e.metric.startswith("DRAM"))
    assert "certain" in dram.threshold and "80-90" in dram.threshold
    assert "82 % of the device memory's peak bandwidth (GPM)" in f.summary
