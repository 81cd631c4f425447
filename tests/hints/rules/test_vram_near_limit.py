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
    P,
    Run,
    Tick,
    apply,
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
    case(
        # The same level reached by growing while watched: a job filling the card warns.
        "vram/grown-into-the-reserve-band",
        lambda: (
            Run()
            .feed(
                [
                    Tick((G(sm=95.0, vram_gib=70.0 + i),), (P(vram_gib=69.9 + i),))
                    for i in range(9)
                ]
            )
            .history
        ),
        Expect(G0, Severity.WARNING, evidence={"VRAM used / total": 97.5}),
    ),
    case(
        # Under TensorFlow's smallest reserve free: not its pool, whatever the history.
        "vram/under-the-smallest-reserve",
        lambda: one_gpu([95.0] * 4, (P(vram_gib=79.85),), gpu=G(vram_gib=79.9)),
        Expect(G0, Severity.CRITICAL, evidence={"VRAM used / total": 99.9}),
    ),
    case(
        # Live, TensorFlow's libraries in the process's maps, the card left with its
        # reserve (2 GiB free of 80): its pool, not a job about to run out of memory.
        "vram/near-miss-tensorflow-pool-live",
        lambda: one_gpu(
            [95.0] * 40, (P(vram_gib=77.6, frameworks=("tensorflow",)),), gpu=G(vram_gib=78.0)
        ),
        None,
    ),
    case(
        # The same card and process without TensorFlow mapped: a PyTorch job there warns.
        "vram/same-level-live-without-tensorflow",
        lambda: one_gpu([95.0] * 40, (P(vram_gib=77.6),), gpu=G(vram_gib=78.0)),
        Expect(G0, Severity.WARNING, evidence={"VRAM used / total": 97.5}),
    ),
    case(
        # Held flat for over settled_for_s (1800 s): its peaks have fitted; not at risk.
        "vram/near-miss-settled-for-half-an-hour",
        lambda: (
            Run(interval_s=60.0, history_s=3600.0)
            .feed([Tick((G(sm=95.0, vram_gib=77.0),), (P(vram_gib=20.0),))] * 32)
            .history
        ),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_a_log_without_processes_says_a_framework_pool_reads_the_same() -> None:
    """A GPU-only log that grew to 99 % of VRAM: an out-of-memory risk, or a pool taken
    late -- the log cannot tell, and the finding says so. Where processes
    are listed (here an unknown one) it does not."""
    grew = [
        Tick((G(sm=92.0, vram_gib=gib),), procs=(), source="replay")
        for gib in (60.0, 70.0, 79.2, 79.2, 79.2, 79.2)
    ]
    [found] = apply(RULE, Run().feed(grew).history)
    assert "names no process" in found.summary and "JAX" in found.summary
    # Flat at TensorFlow's reserve from the log's first reading: the pool it maps at
    # start (signals.device_pool), never seen to grow -- not one batch from OOM.
    gpu_only = Tick((G(sm=92.0, vram_gib=79.2),), procs=(), source="replay")
    assert apply(RULE, Run().feed([gpu_only] * 6).history) == []
    [live] = apply(RULE, one_gpu([95.0] * 4, gpu=G(vram_gib=79.2)))
    assert "names no process" not in live.summary
