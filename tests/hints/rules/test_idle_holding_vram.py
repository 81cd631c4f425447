"""idle-holding-vram: a process holding VRAM on a GPU that runs no kernel."""

from __future__ import annotations

import pytest

from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Scope, Severity
from gputop_hints.hints.rules import idle_holding_vram
from tests.hints.windows import (
    GIB,
    P0,
    THRESHOLDS,
    Case,
    Expect,
    G,
    P,
    Run,
    Tick,
    apply,
    case,
    check_case,
    evidence,
    one_gpu,
)

RULE = idle_holding_vram.SPEC


CASES: list[Case] = [
    case(
        "idle-vram/idle-8s-warning",
        lambda: one_gpu([90.0] * 4 + [0.0] * 8, [P(vram_gib=40.0, cpu=1.0)]),
        Expect(
            P0,
            Severity.WARNING,
            evidence={"no kernel of its own for": 8, "VRAM held": 40 * GIB, "main process CPU": 1},
            scope=Scope.DEVICE,
        ),
    ),
    case(
        "idle-vram/own-sm-known-is-process-scope",
        lambda: one_gpu([90.0] * 4 + [0.0] * 8, [P(vram_gib=40.0, cpu=1.0, sm=0.0)]),
        Expect(P0, Severity.WARNING, scope=Scope.PROCESS),
    ),
    case(
        "idle-vram/near-miss-idle-7s",
        lambda: one_gpu([90.0] * 5 + [0.0] * 7, [P(vram_gib=40.0, cpu=1.0)]),
        None,
    ),
    case(
        "idle-vram/near-miss-no-host-cpu-idle-60s",
        # A GPU-only log (no host CPU): 60 s at 0 % may be a checkpoint save; not yet.
        lambda: one_gpu([90.0] * 4 + [0.0] * 60, [P(vram_gib=40.0, cpu=None)]),
        None,
        engine=["low-utilization"],
    ),
    case(
        "idle-vram/near-miss-holds-0.99-GiB",
        lambda: one_gpu([0.0] * 12, [P(vram_gib=0.99, cpu=1.0)]),
        None,
    ),
    case(
        "idle-vram/near-miss-sm-2",
        lambda: one_gpu([2.0] * 12, [P(vram_gib=40.0, cpu=1.0)]),
        None,
    ),
    case(
        "idle-vram/burst-between-idle-ticks-in-sub-second-samples",
        # every 1 Hz tick reads 0, but the samples 3 s ago caught a burst
        lambda: one_gpu(
            [0.0] * 12,
            [P(vram_gib=40.0, cpu=1.0)],
            samples=[(0.0,) * 6] * 8 + [(0.0, 0.0, 50.0, 0.0, 0.0, 0.0)] + [(0.0,) * 6] * 3,
        ),
        None,
        # What the engine makes of it instead: the one burst splits the window into two
        # gaps, but a main process at 1 % of a core with no workers loads nothing, so it is
        # not input-starved either: the GPU is merely in use at a low level.
        engine=["low-utilization"],
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_idle_holding_vram_warns_then_turns_critical_after_critical_after_s() -> None:
    limit = THRESHOLDS.idle_holding_vram.critical_after_s
    assert limit == 300
    run = Run(history_s=600.0)
    proc = (P(vram_gib=40.0, cpu=0.0),)
    run.feed([Tick((G(sm=95.0),), proc)] * 5)
    run.feed([Tick((G(sm=0.0),), proc)] * 299)
    [f] = apply(RULE, run.history)
    assert f.severity is Severity.WARNING
    assert evidence(f, "no kernel of its own for") == 299
    run.tick(Tick((G(sm=0.0),), proc))
    [f] = apply(RULE, run.history)
    assert f.severity is Severity.CRITICAL
    assert evidence(f, "no kernel of its own for") == 300
    assert f.label == "idle 5 min, holds 40G"


def test_idle_holding_vram_turns_critical_with_the_monitors_default_history() -> None:
    # The monitor's History holds only --window (120 s) of ticks; the engine, updated
    # every tick as the monitor does, remembers when the GPU last ran kernels.
    run = Run(history_s=120.0)
    engine = HintEngine()
    proc = (P(vram_gib=40.0, cpu=0.0),)
    for tick in [Tick((G(sm=95.0),), proc)] * 5 + [Tick((G(sm=0.0),), proc)] * 400:
        run.feed([tick])
        engine.update(run.history)
    [f] = [f for f in engine.active if f.rule == "idle-holding-vram"]
    assert f.severity is Severity.CRITICAL
    assert f.label == "idle 7 min, holds 40G"


def test_idle_holding_vram_waits_idle_for_s_without_host_where_no_host_cpu_is_known() -> None:
    wait = THRESHOLDS.idle_holding_vram.idle_for_s_without_host
    assert wait == 120
    run = Run(history_s=600.0)
    proc = (P(vram_gib=40.0, cpu=None),)
    run.feed([Tick((G(sm=95.0),), proc)] * 5)
    run.feed([Tick((G(sm=0.0),), proc)] * 119)
    assert apply(RULE, run.history) == []
    run.tick(Tick((G(sm=0.0),), proc))
    [f] = apply(RULE, run.history)
    assert f.severity is Severity.WARNING
    assert evidence(f, "no kernel of its own for") == 120
