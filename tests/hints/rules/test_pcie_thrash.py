"""pcie-thrash: a busy PCIe link (known or unknown capacity) while SM is low."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Scope, Severity
from gputop_hints.hints.rules import pcie_thrash
from tests.hints.windows import (
    P0,
    Case,
    Expect,
    G,
    P,
    Run,
    Tick,
    apply,
    case,
    check_case,
    one_gpu,
)

RULE = pcie_thrash.SPEC


CASES: list[Case] = [
    case(
        # gen 5 x16 = 63.0 GB/s per direction; busy reading = rx+tx >= 0.4 x that = 25.2 GB/s
        "pcie/known-link-busy-half-the-readings",
        lambda: (
            Run()
            .feed(
                [
                    Tick((G(sm=12.0, rx=(20e9 if i % 2 else 0.0), tx=(10e9 if i % 2 else 0.0)),))
                    for i in range(12)
                ]
            )
            .history
        ),
        Expect(
            P0,
            Severity.WARNING,
            evidence={
                "readings with rx+tx >= 0.25 x link (63.0 GB/s per direction)": 50,
                "PCIe rx+tx (mean)": 15e9,
                "device SM % (mean)": 12,
            },
            scope=Scope.DEVICE,
        ),
        engine=["pcie-thrash"],
    ),
    case(
        "pcie/known-link-2-of-6-readings-is-enough",
        lambda: (
            Run()
            .feed([Tick((G(sm=12.0, rx=(30e9 if i % 3 == 0 else 0.0)),)) for i in range(12)])
            .history
        ),
        Expect(P0, Severity.WARNING, evidence={"readings with rx+tx": 100 / 3}),
    ),
    case(
        "pcie/near-miss-known-link-1-of-6-readings",
        lambda: (
            Run()
            .feed([Tick((G(sm=12.0, rx=(30e9 if i % 6 == 0 else 0.0)),)) for i in range(12)])
            .history
        ),
        None,
    ),
    case(
        "pcie/near-miss-known-link-15-GBps-just-under-share",
        # 15 GB/s every tick is far above the 1 GB/s floor, but the link is known (Gen5 x16,
        # 63 GB/s): under a quarter of it, less than even a pageable copy reaches
        lambda: one_gpu([12.0] * 12, gpu=G(rx=9e9, tx=6e9)),
        None,
    ),
    case(
        "pcie/near-miss-sm-50",
        lambda: one_gpu([50.0] * 12, gpu=G(rx=20e9, tx=10e9)),
        None,
    ),
    case(
        # Just under the SM bar, the link busy every tick: flagged (the SM mean is asked
        # before the link's readings are counted, and decides nothing alone).
        "pcie/sm-just-under-50",
        lambda: one_gpu([49.9] * 12, gpu=G(rx=20e9, tx=10e9)),
        Expect(P0, Severity.WARNING, evidence={"device SM % (mean)": 49.9}),
    ),
    case(
        "pcie/unknown-link-1-GBps-floor",
        lambda: one_gpu([12.0] * 12, gpu=G(rx=0.6e9, tx=0.4e9, gen=None, width=None)),
        Expect(
            P0,
            Severity.WARNING,
            evidence={"readings with rx+tx >= 1 GB/s (link capacity unknown)": 100},
        ),
    ),
    case(
        "pcie/near-miss-unknown-link-0.99-GBps",
        lambda: one_gpu([12.0] * 12, gpu=G(rx=0.59e9, tx=0.4e9, gen=None, width=None)),
        None,
    ),
    case(
        "pcie/throughput-unsupported",
        lambda: one_gpu([12.0] * 12, gpu=G(rx=None, tx=None)),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_pcie_thrash_on_a_shared_gpu_names_the_only_active_process_and_says_so() -> None:
    # PCIe is counted per GPU (issue 23): the traffic is the job's, the one process that
    # works on the host, even though an idle tenant (no host work) holds more VRAM.
    history = one_gpu(
        [12.0] * 12,
        [P(pid=1, vram_gib=30.0, cpu=0.3), P(pid=2, vram_gib=8.0, cpu=60.0)],
        gpu=G(rx=20e9, tx=10e9),
    )
    [f] = apply(RULE, history)
    assert f.subject.pid == 2
    assert any(
        e.metric.startswith("PCIe is per GPU: 2 processes share it; the others ran no kernel")
        for e in f.evidence
    )


def test_pcie_thrash_with_several_active_tenants_is_said_of_the_gpu() -> None:
    # Two processes both working: NVML cannot tell whose the copies are; no tenant is blamed.
    history = one_gpu(
        [12.0] * 12,
        [P(pid=1, vram_gib=1.0, cpu=90.0), P(pid=2, vram_gib=30.0, cpu=60.0)],
        gpu=G(rx=20e9, tx=10e9),
    )
    [f] = apply(RULE, history)
    assert f.subject.pid is None and f.subject.gpu_index == 0
    assert any("cannot tell which process" in e.metric for e in f.evidence)
