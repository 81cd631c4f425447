"""The sampler thread: never overlaps, pauses, survives a failing tick, stops cleanly."""

from __future__ import annotations

import threading
import time

import pytest

from gputop_hints.model import HostSample, Snapshot
from gputop_hints.sampling.once import collect
from gputop_hints.sampling.sampler import Sampler


class SlowSource:
    """A source whose ticks take longer than the interval, recording concurrency."""

    kind = "test"
    simulated = False

    def __init__(self, cost_s: float = 0.0, fail_on: int | None = None) -> None:
        self.cost_s = cost_s
        self.fail_on = fail_on
        self.calls = 0
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def sample(self) -> Snapshot:
        with self.lock:
            self.calls += 1
            n = self.calls
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            time.sleep(self.cost_s)
            if n == self.fail_on:
                raise RuntimeError("boom")
            return Snapshot(
                timestamp=float(n),
                interval_s=0.25,
                host=HostSample("h", cpu_percent_per_core=(), allowed_cores=()),
            )
        finally:
            with self.lock:
                self.active -= 1

    def close(self) -> None:
        pass


def _wait_for(pred, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("condition not reached")
        time.sleep(0.01)


def test_slow_ticks_under_concurrent_triggers_never_overlap() -> None:
    """Ticks slower than the interval, while several threads start, pause and resume
    the sampler at once (as the UI and a signal handler may): one tick at a time."""
    source = SlowSource(cost_s=0.4)
    got: list[Snapshot] = []
    sampler = Sampler(source, 0.25, got.append)
    triggers = 8
    barrier = threading.Barrier(triggers)

    def trigger() -> None:
        barrier.wait()
        sampler.start()
        sampler.pause(True)
        sampler.pause(False)
        sampler.start()

    threads = [threading.Thread(target=trigger) for _ in range(triggers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _wait_for(lambda: len(got) >= 3)
    sampler.stop()
    assert source.max_active == 1
    assert sampler.skipped_deadlines >= 2
    assert [s.timestamp for s in got] == sorted(s.timestamp for s in got)


def test_pause_stops_sampling_and_resume_continues() -> None:
    source = SlowSource()
    got: list[Snapshot] = []
    sampler = Sampler(source, 0.25, got.append)
    sampler.start()
    _wait_for(lambda: len(got) >= 1)
    sampler.pause(True)
    time.sleep(0.3)  # let a tick that was in flight finish
    frozen = len(got)
    time.sleep(0.6)
    assert len(got) == frozen
    sampler.pause(False)
    _wait_for(lambda: len(got) > frozen)
    sampler.stop()


def test_a_failing_tick_is_reported_and_sampling_goes_on() -> None:
    source = SlowSource(fail_on=1)
    got: list[Snapshot] = []
    errors: list[BaseException] = []
    sampler = Sampler(source, 0.25, got.append, on_error=errors.append)
    sampler.start()
    _wait_for(lambda: len(got) >= 2)
    sampler.stop()
    assert len(errors) == 1 and "boom" in str(errors[0])
    assert not sampler.running


def test_interval_outside_range_is_refused() -> None:
    with pytest.raises(ValueError, match=r"0\.25"):
        Sampler(SlowSource(), 0.1, lambda s: None)
    with pytest.raises(ValueError, match="60"):
        Sampler(SlowSource(), 61, lambda s: None)


def test_collect_takes_enough_samples_for_the_duration() -> None:
    source = SlowSource()
    source.simulated = True
    snaps = collect(source, duration_s=2.0, interval_s=0.5)
    assert len(snaps) == 5


class BlockedSource(SlowSource):
    """A source whose tick waits until the source is closed (a GPU that does not answer)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.closed = threading.Event()

    def sample(self) -> Snapshot:
        self.entered.set()
        self.closed.wait(30)
        return super().sample()

    def close(self) -> None:
        self.closed.set()


def test_stop_wakes_a_tick_waiting_in_the_source_and_posts_nothing_after() -> None:
    """stop(wake=source.close) while a tick waits in the source: the tick ends, the
    sampler is stopped when stop returns, and that tick is not posted."""
    source = BlockedSource()
    posted: list[Snapshot] = []
    sampler = Sampler(source, 0.25, posted.append)
    sampler.start()
    _wait_for(source.entered.is_set)
    thread = sampler._thread
    sampler.stop(timeout=30, wake=source.close)
    assert thread is not None and not thread.is_alive()
    assert posted == []


def test_a_sampler_started_without_callbacks_hands_over_what_it_held() -> None:
    # The CLI starts sampling before Textual is imported; the app attaches on mount.
    source = SlowSource(fail_on=2)
    sampler = Sampler(source, 0.25, None)
    sampler.start()
    try:
        # A call begins before its snapshot is delivered; the fourth begins only
        # after the third was handed on (one sampling thread), so three are held.
        _wait_for(lambda: source.calls >= 4)
        got: list[float] = []
        errors: list[str] = []
        sampler.attach(lambda snap: got.append(snap.timestamp), lambda e: errors.append(str(e)))
        held = len(got)
        assert held >= 2 and got[:2] == [1.0, 3.0]  # in order, the failed tick as an error
        assert errors == ["boom"]
        _wait_for(lambda: len(got) > held)  # later ticks go straight to the callback
        assert got == sorted(got)
    finally:
        sampler.stop()
