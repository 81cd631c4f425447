"""Stack sampling for the live monitor: on request, never continuously, one at a time.

The monitor asks for a process's stacks when a warning first appears on it and when
the user opens its detail view or presses the key (:meth:`StackService.request`).
A worker thread runs py-spy (:func:`gputop_hints.stacks.sample`, a few dumps a second
for a few seconds) and reads the samples (:func:`~gputop_hints.stacks.classify`);
the result is handed to ``on_result`` on that thread (the app posts it to itself).

Cost bounds (docs/stacks.md): one sampling at a time; an automatic request for a pid
is taken at most once per :data:`AUTO_EVERY_S`, and automatic samplings overall at
most once per :data:`AUTO_GAP_S`, so a node full of warned processes costs no more
than one process sampled a minute (~0.3-0.6 % of a core by
``bench/stack_cost.py``); at most :data:`MAX_WORKERS` workers are sampled beside the
main process. A request made by the user is taken at once (after the one running).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gputop_hints.stacks import StackReading, classify, sample

log = logging.getLogger(__name__)

AUTO_EVERY_S = 120.0
"""An automatic request for the same pid is taken at most this often (a compile seen on
its stack holds for ``hints.rules.signals.COMPILE_FRESH_S``, as long)."""
AUTO_GAP_S = 60.0
"""Automatic samplings, all pids together, at most this often."""
MAX_WORKERS = 2
"""Workers sampled beside the main process: each adds a dump a sample."""
SAMPLES = 15
PERIOD_S = 0.2


@dataclass(frozen=True)
class StackResult:
    """One sampling's outcome for ``pid``: its reading, taken at ``at`` (time.time())."""

    pid: int
    reading: StackReading
    at: float
    manual: bool


class StackService:
    """Takes sampling requests and runs them one at a time on its own thread."""

    def __init__(
        self,
        on_result: Callable[[StackResult], None],
        *,
        sampler: Callable[[int, Sequence[int]], StackReading] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._on_result = on_result
        self._sampler = sampler or _sample_and_read
        self._clock = clock
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: list[tuple[int, tuple[int, ...], bool]] = []
        self._running: int | None = None
        self._last_auto: dict[int, float] = {}
        self._last_any_auto = float("-inf")
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def busy_with(self) -> int | None:
        """The pid being sampled now, if any."""
        return self._running

    def pending(self, pid: int) -> bool:
        """Whether ``pid`` is being sampled or waits to be."""
        with self._lock:
            return self._running == pid or any(p == pid for p, _, _ in self._queue)

    def request(self, pid: int, workers: Sequence[int] = (), *, manual: bool = False) -> bool:
        """Ask for ``pid``'s stacks; False when an automatic request is refused by the
        rate limits (or the pid is already queued or running)."""
        now = self._clock()
        with self._lock:
            if self._closed or self._running == pid or any(p == pid for p, _, _ in self._queue):
                return False
            if not manual:
                if not self._due(pid, now):
                    return False
                self._last_auto[pid] = now
                self._last_any_auto = now
                self._queue.append((pid, tuple(workers[:MAX_WORKERS]), False))
            else:
                self._queue.insert(0, (pid, tuple(workers[:MAX_WORKERS]), True))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gputop-stacks", daemon=True)
                self._thread.start()
            self._wake.notify()
        return True

    def due(self, pid: int) -> bool:
        """Whether an automatic request for ``pid`` would pass the rate limits now: the
        cheap test a caller makes before gathering what a request needs."""
        with self._lock:
            return self._due(pid, self._clock())

    def _due(self, pid: int, now: float) -> bool:
        return (
            now - self._last_auto.get(pid, float("-inf")) >= AUTO_EVERY_S
            and now - self._last_any_auto >= AUTO_GAP_S
        )

    def forget(self, live: set[int]) -> None:
        """Drop the rate-limit records of pids that are gone (bounded memory)."""
        with self._lock:
            for pid in [p for p in self._last_auto if p not in live]:
                del self._last_auto[pid]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._queue.clear()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                pid, workers, manual = self._queue.pop(0)
                self._running = pid
            try:
                reading = self._sampler(pid, workers)
            except Exception as error:  # never let a sampling failure end the thread
                log.warning("stack sampling of %d failed: %s", pid, error)
                reading = StackReading(pid, 0, (), reason=f"sampling failed: {error}")
            finally:
                with self._lock:
                    self._running = None
            if not self._closed:
                self._on_result(StackResult(pid, reading, self._clock(), manual))


def _sample_and_read(pid: int, workers: Sequence[int]) -> StackReading:
    return classify(sample(pid, workers, samples=SAMPLES, period_s=PERIOD_S))
