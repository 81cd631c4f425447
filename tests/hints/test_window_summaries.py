"""The window's list-free summaries equal what the lists they stand for give.

The engine reads a process's own SM mean and peak, and a series' known values,
without building the per-tick lists (issue 23: the hint engine's cost a tick);
these tests hold them to the lists' answers.
"""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from gputop_hints.hints.window import Window
from gputop_hints.history import History, PeakSeries, Series
from gputop_hints.sources.demo import DemoSource


@pytest.mark.parametrize("seed", range(5))
def test_series_tracks_its_unknowns_through_eviction(seed: int) -> None:
    rng = random.Random(seed)
    series = Series(6, prefill=rng.randrange(0, 8))
    for _ in range(60):
        series.append(None if rng.random() < 0.3 else rng.uniform(0, 100))
        values = list(series)
        assert series.any_unknown() == any(v is None for v in values)
        for n in (1, 3, 6, None):
            tail = values if n is None else values[-n:]
            known = [v for v in tail if v is not None]
            assert series.known(n) == known
            assert series.mean(n) == (math.fsum(known) / len(known) if known else None)
            assert series.max(n) == (max(known) if known else None)
    resized = series.resized(3)
    assert resized.any_unknown() == any(v is None for v in list(series)[-3:])


@pytest.mark.parametrize("seed", range(5))
def test_peak_series_keeps_the_maximum_of_its_newest_entries(seed: int) -> None:
    rng = random.Random(seed)
    series = PeakSeries(7, prefill=rng.randrange(0, 9))
    for _ in range(80):
        # Repeats and ties (ints beside floats) as well as unknowns.
        series.append(rng.choice([None, 50, 50.0, rng.randrange(0, 100), rng.uniform(0, 100)]))
        values = list(series)
        for n in range(1, 9):
            known = [v for v in values[-n:] if v is not None]
            found = series.peak(n)
            assert found == (max(known) if known else None)
            assert type(found) is type(max(known)) if known else found is None
        assert series.peak() == series.peak(len(values))
    resized = series.resized(4)
    known = [v for v in list(series)[-4:] if v is not None]
    assert resized.peak() == (max(known) if known else None)


@pytest.mark.parametrize(
    "scenario", ["mixed", "starved-loader", "straggler", "starved-no-process-util"]
)
def test_process_sm_mean_and_peak_match_their_lists(scenario: str) -> None:
    """Over whole windows, a process's start, and ticks it is missing from (None)."""
    source = DemoSource(scenario)
    history = History(window_s=30.0)
    checked = 0
    for tick in range(40):
        snap = source.sample()
        if 10 <= tick < 14 or tick in (20, 33):  # every other process is missing
            kept = tuple(p for i, p in enumerate(snap.processes) if i % 2 or tick == 20)
            snap = dataclasses.replace(snap, processes=kept[: len(kept) - (tick == 20)])
        history.append(snap)
        for window_s in (6.0, 30.0):
            win = Window(history, window_s)
            for proc in win.processes():
                values = win.process_sm_values(proc)
                mean = math.fsum(values) / len(values) if values else None
                assert win.process_sm_mean(proc) == mean
                assert win.process_sm_peak(proc) == (max(values) if values else None)
                checked += values is not None
    assert checked > 0 or scenario == "starved-no-process-util"
