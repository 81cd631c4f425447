"""The window's list-free summaries equal what the lists they stand for give.

The engine reads a process's own SM mean and peak, and a series' known values,
without building the per-tick lists (issue 23: the hint engine's cost a tick);
these tests hold them to the lists' answers.
"""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path

import pytest

from gputop_hints.hints.phases import start_up_end
from gputop_hints.hints.rules import signals
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import GIB, Window
from gputop_hints.history import GpuHistory, History, PeakSeries, Series
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.files import open_stream


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


def _start_up_from_lists(win: Window, t: Thresholds, gh: GpuHistory) -> int | None:
    """signals._start_up_readings as it was written before its shortcuts: from the
    window's lists."""
    sm = gh.sm_percent.last(win.ticks)
    vram = gh.vram_used_bytes.last(win.ticks)
    times = [ts or 0.0 for ts in win.history.timestamps.last(len(sm))]
    floor = t.low_utilization.context_vram_gib * GIB
    for i in range(len(vram) - 1, -1, -1):
        v = vram[i]
        if v is not None and v < floor:
            begin = i + 1
            if begin >= len(sm):
                return None
            k = start_up_end(times[begin:], sm[begin:], win.interval_s)
            return None if k is None else begin + k
    start = signals._first_run_start(win, gh)
    if start is None:
        return None
    return sum(1 for ts in times if ts < start)


def _in_use_bytes_from_lists(win: Window, t: Thresholds, index: int) -> float:
    """signals._in_use_bytes before its shortcut: a walk back over the ring's lists."""
    c = t.low_utilization
    model, context = c.in_use_vram_gib * GIB, c.context_vram_gib * GIB
    vram = win.history.gpus[index].vram_used_bytes.last()
    times = win.history.timestamps.last(len(vram))
    since = None
    for i in range(len(vram) - 1, -1, -1):
        v = vram[i]
        if v is None:
            continue
        if v < context:
            break
        since = times[i]
    if since is None or not times or times[-1] is None:
        return model
    return context if times[-1] - since >= t.warm_up.max_age_s else model


def test_gpu_level_of_an_imported_log_matches_its_lists(tmp_path: Path) -> None:
    """The level low-utilization and input-starved judge a log's GPU by -- readings of
    the job's run while it holds memory -- is what the window's lists give, through
    jobs ending (VRAM under a CUDA context), unknown readings and a context held long."""
    rng = random.Random(7)
    path = tmp_path / "gpu.csv"
    lines = ["timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    for i in range(900):
        stamp = f"2025/01/15 10:{i // 120:02d}:{i // 2 % 60:02d}.{500 * (i % 2):03d}"
        job = i % 300 >= 40  # a job every 150 s, 20 s with nothing loaded between
        sm0 = rng.choice((0, 0, 97, 100)) if job and i % 300 > 70 else 0
        used0 = "[N/A]" if rng.random() < 0.05 else (30000 + rng.randrange(50) if job else 100)
        used1 = 400 if i > 30 else 100  # a bare CUDA context, held past any start-up
        lines.append(f"{stamp}, 0, {sm0} %, {used0} MiB, 81920 MiB")
        lines.append(f"{stamp}, 1, {rng.choice((0, 30, 60))} %, {used1} MiB, 81920 MiB")
    path.write_text("\n".join(lines) + "\n")
    t = Thresholds.defaults()
    stream = open_stream(path)
    history: History | None = None
    compared = 0
    try:
        for snap in stream:
            if history is None:
                history = History(window_s=300.0, interval_s=snap.interval_s)
            history.append(snap)
            win = signals.level_window(Window(history, 10.0), t)
            for index in (0, 1):
                gh = history.gpus[index]
                in_use = _in_use_bytes_from_lists(win, t, index)
                assert signals.in_use_bytes(win, t, index) == in_use
                start_up = _start_up_from_lists(win, t, gh)
                level = signals.gpu_level(win, t, index)
                if start_up is None:
                    assert level is None
                    continue
                n = win.ticks - start_up
                sm, vram = gh.sm_percent.last(n), gh.vram_used_bytes.last(n)
                want = signals.in_use_level(sm, vram, in_use)
                assert (level and (level[0], level[2])) == (want and (want[0], want[2]))
                compared += want is not None
    finally:
        stream.close()
    assert compared > 500
