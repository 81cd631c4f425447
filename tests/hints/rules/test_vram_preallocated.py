"""vram-preallocated: a framework's flat, early reservation is not an OOM risk."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import vram_preallocated
from tests.hints.windows import PID, Case, Expect, G, P, Run, Tick, case, check_case, one_gpu

RULE = vram_preallocated.SPEC
_JAX = "/home/u/.conda/envs/jax/bin/python train.py"


def _growing() -> Run:
    """VRAM creeping up 1 GiB a tick to 78 of 80 GiB: a real approach to the limit."""
    return Run().feed(
        [
            Tick((G(sm=95.0, vram_gib=40.0 + i),), (P(vram_gib=39.0 + i, started_s=20.0),))
            for i in range(39)
        ]
    )


CASES: list[Case] = [
    case(
        "prealloc/tensorflow-flat-97-percent-from-the-start",
        # 0.5 GiB of context, then the whole pool in one step; flat after.
        lambda: (
            Run()
            .feed(
                [
                    Tick(
                        (G(sm=95.0 if i > 3 else 0.0, vram_gib=78.0 if i > 3 else 0.9),),
                        (P(vram_gib=77.6 if i > 3 else 0.5, started_s=5.0),),
                    )
                    for i in range(40)
                ]
            )
            .history
        ),
        Expect(Subject(0, PID), Severity.INFO, evidence={"VRAM share of the card": 97}),
        # Live, vram-near-limit still warns: a PyTorch job filling the card in one step
        # leaves the same free memory (the reserve is judged in logs only, docs/hints.md).
        engine=["compute-bound", "vram-preallocated", "vram-near-limit"],
    ),
    case(
        "prealloc/near-miss-grown-into-over-the-first-steps",
        # A caching allocator: +2 GiB a tick up to 72 GiB, then flat -- never one step.
        lambda: (
            Run()
            .feed(
                [
                    Tick(
                        (G(sm=95.0, vram_gib=min(73.0, 1.0 + 2 * i)),),
                        (P(vram_gib=min(72.0, 0.5 + 2 * i), started_s=5.0),),
                    )
                    for i in range(80)
                ]
            )
            .history
        ),
        None,
    ),
    case(
        "prealloc/near-miss-reached-late",
        # Flat, reached before the monitor started, at 82 % -- no framework's default share.
        lambda: one_gpu([95.0] * 40, [P(vram_gib=66.0, started_s=600.0)], gpu=G(vram_gib=67.0)),
        None,
    ),
    case(
        "prealloc/plateau-at-vllm-default-monitor-started-late",
        # Started 10 min before the monitor, flat at 90 %: vLLM's default, but unnamed.
        lambda: one_gpu([95.0] * 40, [P(vram_gib=72.0, started_s=600.0)], gpu=G(vram_gib=73.0)),
        Expect(Subject(0, PID), Severity.INFO, evidence={"VRAM share of the card": 90}),
    ),
    case(
        "prealloc/plateau-at-jax-default-log-begins-mid-run",
        # No start time at all (a log), flat at 75 %: JAX's default pool, a guess.
        lambda: one_gpu([95.0] * 40, [P(vram_gib=60.0)], gpu=G(vram_gib=61.0)),
        Expect(Subject(0, PID), Severity.INFO, evidence={"VRAM share of the card": 75}),
    ),
    case(
        "prealloc/near-miss-2.4-gib-above-jax-share-is-no-pool",
        # 62.4 of 80 GiB (78 %) flat since first seen: within 3 % of JAX's 75 % but 2.4 GiB
        # above 0.75 x the card -- more than a CUDA context adds; a job that grew there.
        lambda: one_gpu([95.0] * 40, [P(vram_gib=62.4)], gpu=G(vram_gib=63.0)),
        None,
    ),
    case(
        "prealloc/jax-share-plus-a-context-is-a-pool",
        # 61.2 of 80 GiB: JAX's 75 % (60 GiB) plus 1.2 GiB of context and workspaces.
        lambda: one_gpu([95.0] * 40, [P(vram_gib=61.2)], gpu=G(vram_gib=62.0)),
        Expect(Subject(0, PID), Severity.INFO, evidence={"VRAM share of the card": 76.5}),
    ),
    case(
        "prealloc/vllm-engine-core-asks-for-95-percent",
        # vLLM V1's engine process, --gpu-memory-utilization 0.95 on the parent's command line
        # is not visible; its title names the framework, whose pool is at most 0.9 + 3 %.
        lambda: one_gpu(
            [30.0] * 40,
            [P(vram_gib=72.0, command="VLLM::EngineCore", started_s=900.0)],
            gpu=G(vram_gib=73.0),
        ),
        Expect(Subject(0, PID), Severity.INFO, evidence={"VRAM share of the card": 90}),
    ),
    case(
        "prealloc/jax-named-two-snapshots-14s-apart",
        # A table log, two snapshots 14 s apart: a python from a conda env named jax at
        # 74.7 % of the card both times. Fewer than four readings span steady_for_s, so two
        # at the share the command's framework documents are all the log can show.
        lambda: (
            Run(interval_s=14.0)
            .feed(
                [Tick((G(sm=0.0, vram_gib=60.5),), (P(vram_gib=59.8, command=_JAX),))] * 2
            )
            .history
        ),
        Expect(Subject(0, PID), Severity.INFO, evidence={"VRAM share of the card": 74.75}),
    ),
    case(
        "prealloc/near-miss-unnamed-two-snapshots-14s-apart",
        # The same two readings from an unnamed python: 14 s is not flat for 30 s.
        lambda: (
            Run(interval_s=14.0)
            .feed([Tick((G(sm=0.0, vram_gib=60.5),), (P(vram_gib=59.8),))] * 2)
            .history
        ),
        None,
    ),
    case(
        "prealloc/near-miss-jax-named-live-for-5s",
        # Live at 1 Hz the full steady_for_s applies even to a named framework.
        lambda: one_gpu([95.0] * 5, [P(vram_gib=59.8, command=_JAX)], gpu=G(vram_gib=60.5)),
        None,
    ),
    case(
        "prealloc/near-miss-half-the-card",
        lambda: one_gpu([95.0] * 40, [P(vram_gib=40.0, started_s=10.0)], gpu=G(vram_gib=41.0)),
        None,
    ),
    case(
        "prealloc/near-miss-growing",
        lambda: _growing().history,
        None,
        engine=["compute-bound", "vram-near-limit"],
    ),
    case(
        "prealloc/near-miss-start-unknown",
        # A log that begins mid-run at 82 %: no documented pool share, so no guess (this
        # case used 90 %, which is vLLM's default share: now 'pre-allocated?', issue 23).
        lambda: one_gpu([95.0] * 40, [P(vram_gib=66.0)], gpu=G(vram_gib=67.0)),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)
