"""One GPU's NVML work on its own thread, so that a call that never returns stops
only that GPU, never the tick.

:class:`GpuWorker` owns one daemon thread, started at the first job and reused
for every tick after it (no thread is created per tick). The tick hands each
GPU's worker a job, then waits for all of them until one shared deadline; a
worker that missed it is *stuck*: it gets no new job until the call it is in
returns, and the tick reports its GPU as not answering meanwhile. A stuck
worker is never joined -- being a daemon, it cannot keep the process alive.

No Textual here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class GpuWorker(Generic[T]):
    """Runs ``work(timestamp)`` for one GPU on a daemon thread, one job at a time."""

    def __init__(self, name: str, work: Callable[[float | None], T]) -> None:
        self._name = name
        self._work = work
        self._go = threading.Event()
        self._changed = threading.Condition()
        """Notified when the job finishes or the worker closes: what :meth:`wait` waits for."""
        self._done = threading.Event()
        self._done.set()  # idle: nothing in flight
        self._timestamp: float | None = None
        self._result: T | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self.busy_since: float | None = None
        """``time.monotonic()`` when the job in flight (or the last one) was handed over."""

    def submit(self, timestamp: float | None) -> bool:
        """Hand over a job; False (nothing handed over) while the last one runs, or once closed."""
        if self._closed or not self._done.is_set():
            return False
        self._done.clear()
        self._timestamp = timestamp
        self._result, self._error = None, None
        self.busy_since = time.monotonic()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        self._go.set()
        return True

    def wait(self, deadline: float) -> bool:
        """Wait for the job until ``deadline`` (``time.monotonic()``), or until the worker
        is closed (a quit must not wait out the deadline); whether the job finished."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._done.is_set() or self._closed,
                max(0.0, deadline - time.monotonic()),
            )
            return self._done.is_set()

    def result(self) -> T:
        """What the finished job returned; raises what it raised."""
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]

    @property
    def in_flight(self) -> bool:
        """Whether a job is running now (a stuck one included)."""
        return not self._done.is_set()

    def stuck_for(self) -> float | None:
        """Seconds the job in flight has run; None when none is."""
        since = self.busy_since
        if since is None or self._done.is_set():
            return None
        return time.monotonic() - since

    def close(self) -> None:
        """Let the thread end after its job; returns at once (a stuck job is abandoned),
        and so does a :meth:`wait` in progress."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._go.set()

    def _run(self) -> None:
        while True:
            self._go.wait()
            self._go.clear()
            if self._closed:
                self._finished()  # a job handed over as it closed is not run
                return
            try:
                self._result = self._work(self._timestamp)
            except BaseException as exc:  # handed to the tick, which keeps it to this GPU
                self._error = exc
            self._finished()

    def _finished(self) -> None:
        with self._changed:
            self._done.set()
            self._changed.notify_all()
