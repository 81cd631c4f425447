"""The live monitor's stack sampling: one at a time, automatic requests rate-limited."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from gputop_hints.sampling.stacks import (
    AUTO_EVERY_S,
    AUTO_GAP_S,
    MAX_WORKERS,
    StackResult,
    StackService,
)
from gputop_hints.stacks import StackReading


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def service(
    clock: Clock,
) -> tuple[StackService, list[StackResult], list[tuple[int, tuple[int, ...]]], threading.Event]:
    results: list[StackResult] = []
    asked: list[tuple[int, tuple[int, ...]]] = []
    done = threading.Event()

    def sampler(pid: int, workers: Sequence[int]) -> StackReading:
        asked.append((pid, tuple(workers)))
        return StackReading(pid, 15, ())

    def on_result(result: StackResult) -> None:
        results.append(result)
        done.set()

    return StackService(on_result, sampler=sampler, clock=clock), results, asked, done


def test_an_automatic_request_is_taken_once_per_pid_and_spaced_overall() -> None:
    clock = Clock()
    svc, results, asked, done = service(clock)
    try:
        assert svc.request(11, [21, 22, 23, 24])
        assert done.wait(5)
        assert asked == [(11, (21, 22, 23, 24)[:MAX_WORKERS])]
        assert results[0].pid == 11 and not results[0].manual
        done.clear()
        assert not svc.request(12)  # another pid, too soon after the last automatic one
        clock.now += AUTO_GAP_S
        assert not svc.request(11)  # the same pid: at most once per AUTO_EVERY_S
        assert svc.request(12)
        assert done.wait(5)
        done.clear()
        clock.now += AUTO_EVERY_S
        assert svc.request(11)
        assert done.wait(5)
    finally:
        svc.close()


def test_a_request_by_the_user_is_taken_at_once() -> None:
    clock = Clock()
    svc, results, _, done = service(clock)
    try:
        assert svc.request(11)
        assert done.wait(5)
        done.clear()
        assert svc.request(11, manual=True)  # no rate limit for the user
        assert done.wait(5)
        assert [r.manual for r in results] == [False, True]
    finally:
        svc.close()


def test_a_sampler_that_raises_gives_a_reading_with_the_reason() -> None:
    got: list[StackResult] = []
    done = threading.Event()

    def broken(pid: int, workers: Sequence[int]) -> StackReading:
        raise OSError("py-spy vanished")

    def on_result(result: StackResult) -> None:
        got.append(result)
        done.set()

    svc = StackService(on_result, sampler=broken)
    try:
        assert svc.request(5, manual=True)
        assert done.wait(5)
        assert got[0].reading.samples == 0
        assert "py-spy vanished" in (got[0].reading.reason or "")
    finally:
        svc.close()
