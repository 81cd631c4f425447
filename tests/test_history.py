"""Ring-buffer history: alignment, eviction, windows and resizing."""

from __future__ import annotations

import math
import random

from gputop_hints.history import MAX_GONE_PROCESSES, History, PeakSeries, Series
from gputop_hints.model import GpuProcess, GpuSample, HostSample, Snapshot, UtilizationSample


def _snap(t: float, sm: float | None, pids: tuple[int, ...] = (1,), gpus: int = 1) -> Snapshot:
    host = HostSample("h", cpu_percent_per_core=(10.0, 20.0), allowed_cores=(0, 1))
    return Snapshot(
        timestamp=t,
        interval_s=1.0,
        host=host,
        gpus=tuple(
            GpuSample(
                index=i,
                sm_percent=sm,
                memory_access_percent=1.0,
                sm_samples=(UtilizationSample(t - 0.5, 1.0), UtilizationSample(t, 2.0)),
            )
            for i in range(gpus)
        ),
        processes=tuple(GpuProcess(pid=p, gpu_index=0, cpu_percent=float(p)) for p in pids),
    )


def test_series_is_a_fixed_ring() -> None:
    s = Series(3)
    for v in (1.0, None, 3.0, 4.0):
        s.append(v)
    assert s.last() == [None, 3.0, 4.0]
    assert s.last(2) == [3.0, 4.0]
    assert s.last(0) == []
    assert s.mean() == 3.5
    assert s.max() == 4.0 and s.min() == 3.0
    assert s.latest == 4.0


def test_capacity_follows_window_and_interval() -> None:
    h = History(window_s=10, interval_s=1)
    for t in range(25):
        h.append(_snap(float(t), float(t)))
    assert len(h) == 11
    assert h.gpus[0].sm_percent.last() == [float(t) for t in range(14, 25)]
    assert [s.timestamp for s in h.window(3)] == [21.0, 22.0, 23.0, 24.0]


def test_late_process_is_prefilled_and_aligned() -> None:
    h = History(window_s=5, interval_s=1)
    for t in range(3):
        h.append(_snap(float(t), 50.0, pids=(1,)))
    h.append(_snap(3.0, 50.0, pids=(1, 7)))
    series = h.process(7, 0)
    assert series is not None
    assert len(series.cpu_percent) == len(h.timestamps)
    assert series.cpu_percent.last() == [None, None, None, 7.0]


def test_vanished_process_gets_gaps_then_is_dropped() -> None:
    h = History(window_s=3, interval_s=1)
    h.append(_snap(0.0, 1.0, pids=(1, 2)))
    h.append(_snap(1.0, 1.0, pids=(1,)))
    gone = h.process(2, 0)
    assert gone is not None and gone.cpu_percent.last(2) == [2.0, None]
    for t in range(2, 6):
        h.append(_snap(float(t), 1.0, pids=(1,)))
    assert h.process(2, 0) is None
    assert h.process(1, 0) is not None


def test_unknown_values_stay_unknown() -> None:
    h = History(window_s=5, interval_s=1)
    h.append(_snap(0.0, None))
    h.append(_snap(1.0, 40.0))
    assert h.gpus[0].sm_percent.last() == [None, 40.0]
    assert h.gpus[0].sm_percent.mean() == 40.0


def test_buffered_samples_deduplicated_and_pruned_to_window() -> None:
    h = History(window_s=2, interval_s=1)
    for t in range(6):
        h.append(_snap(float(t), 10.0))
    stamps = [s.timestamp for s in h.gpus[0].sm_samples]
    assert stamps == sorted(set(stamps))
    assert min(stamps) >= 5.0 - 2.0


def test_set_window_keeps_newest_data() -> None:
    h = History(window_s=10, interval_s=1)
    for t in range(10):
        h.append(_snap(float(t), float(t)))
    h.set_window(4)
    assert h.gpus[0].sm_percent.last() == [5.0, 6.0, 7.0, 8.0, 9.0]
    assert len(h.cores[0]) == 5
    h.append(_snap(10.0, 10.0))
    assert h.gpus[0].sm_percent.last() == [6.0, 7.0, 8.0, 9.0, 10.0]


def test_gpu_that_disappears_is_dropped_after_a_window() -> None:
    h = History(window_s=2, interval_s=1)
    h.append(_snap(0.0, 5.0, gpus=2))
    for t in range(1, 5):
        h.append(_snap(float(t), 5.0, gpus=1))
    assert set(h.gpus) == {0}


def test_whole_snapshots_are_kept_for_a_shorter_span_than_the_series() -> None:
    h = History(window_s=120, interval_s=1, snapshots_s=10)
    for t in range(60):
        h.append(_snap(float(t), float(t)))
    assert len(h.snapshots) == 11
    assert len(h.gpus[0].sm_percent) == 60
    assert h.window()[0].timestamp == 49.0


def test_a_flood_of_short_lived_processes_keeps_memory_bounded() -> None:
    # 200 new GPU processes a second, each living one tick: without a bound the
    # history kept every one for a whole window (24 000 at 120 s).
    h = History(window_s=120.0, interval_s=1.0)
    for tick in range(60):
        h.append(_snap(float(tick), 50.0, pids=(1, *range(1000 + tick * 200, 1200 + tick * 200))))
    assert len(h.processes) <= MAX_GONE_PROCESSES + 201
    # The long-lived process and the ones that just ended are still there ...
    assert h.process(1, 0) is not None
    assert h.process(1000 + 58 * 200, 0) is not None
    # ... and the ones gone longest were dropped first.
    assert h.process(1000, 0) is None


def test_a_process_that_just_ended_is_kept_for_the_window() -> None:
    h = History(window_s=10.0, interval_s=1.0)
    h.append(_snap(0.0, 50.0, pids=(1, 2)))
    for t in range(1, 8):
        h.append(_snap(float(t), 50.0, pids=(1,)))
    gone = h.process(2, 0)
    assert gone is not None
    assert gone.cpu_percent.last(2) == [None, None]


def test_a_window_mean_is_the_exact_mean_of_its_readings_tick_by_tick() -> None:
    # Fractional readings of mixed magnitude (no float sum of them is exact), with
    # unknown stretches entering the ring and leaving it: every window's mean, at every
    # tick, is the correctly rounded sum of its known readings over their count -- the
    # same float however the ring is read (a ring with and without unknowns).
    s = Series(13)
    for k in range(200):
        unknown = (k // 17) % 3 == 1 and k % 5 != 0
        s.append(None if unknown else (k % 7) * 0.1 + 1e6 * (k % 3) + 1 / (k + 3))
        for n in (None, 0, 1, 2, 6, 7, 12, 13, 20):
            known = [v for v in s.last(n) if v is not None]
            expected = math.fsum(known) / len(known) if known else None
            assert s.mean(n) == expected, (k, n)
            assert s.mean(n) == expected, (k, n)  # asked again in the tick


def test_every_read_of_a_ring_matches_the_readings_kept_through_many_wraps() -> None:
    # The ring against the plain list of what was appended, over many wraps, a prefill,
    # unknown stretches and a NaN (read as unknown, as a source's missing reading), at
    # every tick and every read a caller makes.
    rng = random.Random(49)
    for capacity, prefill in ((1, 0), (5, 3), (13, 20)):
        s = Series(capacity, prefill=prefill)
        model: list[float | None] = [None] * min(prefill, capacity)
        for k in range(90):
            value = rng.choice([None, math.nan, 0.0, -0.0, 50.0, rng.uniform(0, 1e9)])
            s.append(value)
            model.append(None if value is None or value != value else value)
            model = model[-capacity:]
            assert list(s) == s.last() == model
            assert len(s) == len(model)
            assert s.latest == model[-1]
            assert s.all_unknown() == all(v is None for v in model)
            for n in (None, -1, 0, 1, 2, capacity - 1, capacity, capacity + 4):
                tail = model if n is None else model[max(len(model) - n, 0) :] if n > 0 else []
                known = [v for v in tail if v is not None]
                assert s.last(n) == tail, (k, n)
                assert s.known(n) == known
                assert s.count_known(n) == len(known)
                assert s.min(n) == (min(known) if known else None)
                assert s.max(n) == (max(known) if known else None)
        smaller = s.resized(max(1, capacity - 2))
        assert smaller.last() == model[-max(1, capacity - 2) :]


def test_a_steady_process_keeps_its_peak_through_hours_of_ticks() -> None:
    # A process's SM series (a PeakSeries) holding one level for over an hour, every
    # reading equal, with a spike now and then and a gap or two: the peak of any window
    # is the spike while it is inside it, the level after -- the peaks kept are dropped
    # as they leave the ring, however long the run.
    series = PeakSeries(History.capacity_for(120.0, 1.0), prefill=30)
    model: list[float | None] = [None] * 30
    for t in range(4000):
        value = None if t % 997 == 5 else 90.0 if t % 150 == 0 else 50.0
        series.append(value)
        model = [*model, value][-series.capacity :]
        for n in (None, 1, 10, 121):
            tail = model if n is None else model[-n:]
            known = [v for v in tail if v is not None]
            assert series.peak(n) == (max(known) if known else None), (t, n)
