"""The record loop: how it spends time between ticks, and how a signal stops it.

Time is a fake clock and a fake sleep handed to ``record``, so these tests show
exactly how long the loop would wait, without waiting.
"""

from __future__ import annotations

import io
import os
import signal
from itertools import pairwise
from pathlib import Path

import pytest

from gputop_hints.recording.reader import open_recording
from gputop_hints.sampling.record import EXIT_RECORDED, paces_in_real_time, record
from gputop_hints.sources.demo import DemoSource


class FakeTime:
    """A clock that moves only when the loop sleeps; every sleep is remembered."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> bool:
        self.sleeps.append(seconds)
        self.now += seconds
        return False


def test_recording_from_the_demo_never_paces_in_real_time(tmp_path: Path) -> None:
    """``record --demo --duration 60`` finishes at once: simulated time needs no waiting."""
    fake = FakeTime()
    err = io.StringIO()
    path = tmp_path / "run.jsonl"
    code = record(
        DemoSource("healthy"),
        path,
        interval_s=1.0,
        duration_s=60.0,
        stderr=err,
        clock=fake.clock,
        sleep=fake.sleep,
    )
    assert code == EXIT_RECORDED
    assert fake.sleeps == []
    assert "60 ticks" in err.getvalue()
    # The recording still spans a minute of (simulated) time, one tick a second.
    stamps = [snap.timestamp for snap in open_recording(path)]
    assert [b - a for a, b in pairwise(stamps)] == pytest.approx([1.0] * 59)


def test_a_live_source_is_paced_one_interval_per_tick(tmp_path: Path) -> None:
    from gputop_hints.sources.live.source import LiveSource
    from tests.support.fake_nvml import FakeNvml, make_gpus

    fake = FakeTime()
    with FakeNvml(make_gpus(1)):
        source = LiveSource()
        try:
            code = record(
                source,
                tmp_path / "live.jsonl",
                interval_s=0.5,
                duration_s=2.0,
                stderr=io.StringIO(),
                clock=fake.clock,
                sleep=fake.sleep,
            )
        finally:
            source.close()
    assert code == EXIT_RECORDED
    # Four ticks, a wait between each two, none after the last.
    assert fake.sleeps == pytest.approx([0.5, 0.5, 0.5])
    assert len(list(open_recording(tmp_path / "live.jsonl"))) == 4


def test_an_open_ended_demo_recording_is_paced_and_stops_cleanly_at_sigint(
    tmp_path: Path,
) -> None:
    """Without --duration the demo is paced like a live source (it would otherwise fill
    the disk at full speed); Ctrl-C ends it with every tick complete."""
    fake = FakeTime()
    before = signal.getsignal(signal.SIGINT)

    def sleep_then_interrupt(seconds: float) -> bool:
        fake.sleep(seconds)
        if len(fake.sleeps) == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return False

    err = io.StringIO()
    path = tmp_path / "run.jsonl.gz"
    code = record(
        DemoSource("healthy"),
        path,
        interval_s=1.0,
        stderr=err,
        clock=fake.clock,
        sleep=sleep_then_interrupt,
    )
    assert code == EXIT_RECORDED
    assert paces_in_real_time(DemoSource("healthy"), None)
    assert fake.sleeps == pytest.approx([1.0, 1.0, 1.0])
    assert "3 ticks" in err.getvalue()  # the signal came during the third wait
    stream = open_recording(path)
    assert len(list(stream)) == 3
    assert not stream.truncated and stream.counters.bad_lines == 0
    assert signal.getsignal(signal.SIGINT) is before  # the caller's handler is back
