"""host-device-sync: the process's own stack shows its main thread blocked on a sync.

The readings are built as :func:`gputop_hints.stacks.classify` returns them (its own
tests run py-spy on real processes: tests/stacks); here the rule's judgement of one.
"""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import host_device_sync
from gputop_hints.stacks import Category, Frame, FrameCount, StackReading
from tests.hints.windows import PID, Case, Expect, P, case, check_case, one_gpu

RULE = host_device_sync.SPEC

LINE = Frame("train", "/home/me/train.py", 57)


def reading(sync: int, other: int = 0, pid: int = PID) -> StackReading:
    """``sync`` main-thread samples blocked at train.py:57, ``other`` elsewhere."""
    total = sync + other
    cats = []
    if sync:
        top = (FrameCount(LINE, sync, True),)
        cats.append(Category("host-device-sync", sync, sync / total, top))
    if other:
        cats.append(Category("python-launch", other, other / total, ()))
    return StackReading(pid, total, tuple(sorted(cats, key=lambda c: -c.samples)))


CASES: list[Case] = [
    case(
        "sync/a-third-of-the-samples-the-gpu-half-idle",
        lambda: one_gpu([55.0, 45.0] * 30, [P(vram_gib=20.0, cpu=95.0, sm=None)]),
        Expect(
            Subject(0, PID),
            Severity.WARNING,
            evidence={"main thread blocked on a sync": 100 * 5 / 15, "SM %": 50.0},
        ),
        stacks=[reading(5, 10)],
    ),
    case(
        "sync/the-gpu-busy-costs-little-info",
        lambda: one_gpu([97.0] * 60, [P(vram_gib=20.0, cpu=95.0, sm=None)]),
        Expect(Subject(0, PID), Severity.INFO, evidence={"main thread blocked on a sync": 60.0}),
        stacks=[reading(9, 6)],
    ),
    case(
        "sync/near-miss-a-tenth-of-the-samples",
        lambda: one_gpu([50.0] * 60, [P(vram_gib=20.0, cpu=95.0, sm=None)]),
        None,
        stacks=[reading(2, 18)],
    ),
    case(
        "sync/near-miss-too-few-samples",
        lambda: one_gpu([50.0] * 60, [P(vram_gib=20.0, cpu=95.0, sm=None)]),
        None,
        stacks=[reading(4, 2)],
    ),
    case(
        "sync/near-miss-no-stack-reading",
        lambda: one_gpu([50.0] * 60, [P(vram_gib=20.0, cpu=95.0, sm=None)]),
        None,
    ),
    case(
        "sync/near-miss-the-reading-is-another-pid",
        lambda: one_gpu([50.0] * 60, [P(vram_gib=20.0, cpu=95.0, sm=None)]),
        None,
        stacks=[reading(10, 5, pid=PID + 1)],
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_the_finding_names_the_line_and_a_stale_reading_is_not_read() -> None:
    from gputop_hints.hints.window import STACK_FRESH_S, Window
    from tests.hints.windows import THRESHOLDS, apply

    history = one_gpu([50.0] * 60, [P(vram_gib=20.0, cpu=95.0, sm=None)])
    [found] = apply(RULE, history, [reading(8, 4)])
    assert "train (/home/me/train.py:57)" in found.summary
    assert any("train.py:57" in line for line in found.advice)
    assert history.latest is not None
    old = {PID: (history.latest.timestamp - STACK_FRESH_S - 1, reading(8, 4))}
    stale = Window(history, THRESHOLDS.general.window_s, stacks=old)
    assert RULE.check(stale, THRESHOLDS) == []
