"""low-utilization: a GPU in use but nearly idle, when no specific rule says why."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import low_utilization
from gputop_hints.history import History
from tests.hints.windows import (
    G0,
    PEGGED,
    Case,
    Expect,
    G,
    P,
    Run,
    Tick,
    apply,
    case,
    check_case,
    cycle,
    one_gpu,
)

RULE = low_utilization.SPEC


def imported_log(sm: float, vram_gib: float = 11.0) -> History:
    """An nvidia-smi or W&B log replayed: GPU rows only, no process or host data."""
    tick = Tick((G(sm=sm, vram_gib=vram_gib),), procs=(), source="replay")
    return Run().feed([tick] * 12).history


CASES: list[Case] = [
    case(
        "low-utilization/in-use-at-10-percent-with-no-bursts",
        # peaks of 30 % are too low for a starved burst and too busy to be idle
        lambda: one_gpu(cycle([30.0, 0.0, 0.0], 12), [PEGGED]),
        Expect(G0, Severity.WARNING, evidence={"SM % (mean)": 10, "host cores busy": 20}),
        engine=["low-utilization"],
    ),
    case(
        "low-utilization/near-miss-sm-15",
        lambda: one_gpu([15.0] * 12, [P(vram_gib=40.0)]),
        None,
    ),
    case(
        "low-utilization/no-process-rows-but-vram-in-use",
        lambda: one_gpu([5.0] * 12, procs=()),
        Expect(G0, Severity.WARNING, evidence={"SM % (mean)": 5}),
    ),
    case(
        "low-utilization/near-miss-no-process-and-vram-under-1-GiB",
        lambda: one_gpu([5.0] * 12, procs=(), gpu=G(vram_gib=0.9)),
        None,
    ),
    case(
        "low-utilization/imported-log-below-50-percent",
        lambda: imported_log(40.0),
        Expect(G0, Severity.WARNING, evidence={"SM % (mean)": 40}),
    ),
    case(
        "low-utilization/near-miss-imported-log-at-50-percent",
        lambda: imported_log(50.0),
        None,
    ),
    case(
        "low-utilization/explained-by-input-starved-is-dropped-by-the-engine",
        # mean 13 % with bursts to 40 %: the rule holds, but input-starved says why
        lambda: one_gpu(cycle([40.0, 0.0, 0.0], 12), [PEGGED]),
        Expect(G0, Severity.WARNING, evidence={"SM % (mean)": 40 / 3}),
        engine=["input-starved"],
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_imported_log_says_the_data_cannot_tell_why() -> None:
    [f] = apply(RULE, imported_log(40.0))
    assert "cannot tell" in f.summary
    assert any("gputop-hints record" in a for a in f.advice)


def _log_from_its_start(readings: list[tuple[float, float]]) -> History:
    """A GPU-only log that starts with its job: (SM %, GiB used) a second."""
    ticks = [Tick((G(sm=sm, vram_gib=gib),), procs=(), source="replay") for sm, gib in readings]
    return Run().feed(ticks).history


def test_a_logs_start_up_is_no_level() -> None:
    """A log begun with its job: 25 s of model loading at 0 % (a context's 1.2 GiB), then
    the job at ~92 % with the card's memory taken. Judged over its first minute the GPU
    averages under 50 %; that minute is the job's start-up, a phase like a checkpoint
    save, and the level is the job's."""
    loading = [(0.0, 1.2)] * 25
    running = [(92.0, 79.0)] * 35
    history = _log_from_its_start(loading + running)
    assert apply(RULE, history) == []
    # The same shape mid-log (the window not reaching the log's start) is a level.
    earlier = [(92.0, 79.0)] * 100
    assert apply(RULE, _log_from_its_start(earlier + [(0.0, 79.0)] * 40 + [(92.0, 79.0)] * 20))


def test_a_steady_low_level_after_start_up_is_found() -> None:
    # 9 s of start-up, then a steady ~40 % (an under-filled GPU; no host data)
    history = _log_from_its_start([(0.0, 1.0)] * 9 + [(40.0, 1.1)] * 30)
    [found] = apply(RULE, history)
    assert found.evidence[0].value == pytest.approx(40.0)
