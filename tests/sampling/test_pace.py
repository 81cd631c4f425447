"""Deadlines: a loop that samples in real time keeps its rate and never bursts."""

from __future__ import annotations

import pytest

from gputop_hints.sampling.pace import Deadlines


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_quick_ticks_wait_out_the_rest_of_each_interval() -> None:
    clock = FakeClock()
    deadlines = Deadlines(0.5, clock)
    clock.now += 0.1  # the tick took 0.1 s
    assert deadlines.wait_s() == pytest.approx(0.4)
    clock.now += 0.4 + 0.2
    assert deadlines.wait_s() == pytest.approx(0.3)
    assert deadlines.skipped == 0


def test_an_overrunning_tick_skips_the_deadlines_it_missed_instead_of_catching_up() -> None:
    clock = FakeClock()
    deadlines = Deadlines(0.5, clock)
    clock.now += 1.2  # deadlines at +0.5 and +1.0 passed during the tick
    assert deadlines.wait_s() == pytest.approx(0.3)  # the next one still ahead: +1.5
    assert deadlines.skipped == 2
    clock.now += 0.3
    assert deadlines.wait_s() == pytest.approx(0.5)
