"""Sampling off the UI thread, never overlapping itself.

One daemon thread calls ``source.sample()``, hands the finished snapshot to a
callback, then sleeps until the next deadline. Because one thread does all the
sampling, a slow tick (a busy host; the live source bounds a hung NVML call by
its per-GPU deadline) delays the next one instead of stacking up behind it;
deadlines that were missed are skipped, not caught up in a burst.

No Textual here: the TUI passes a callback that posts a message to the app.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from gputop_hints.model import Snapshot
from gputop_hints.sampling.pace import Deadlines
from gputop_hints.sources import Source

log = logging.getLogger(__name__)

MIN_INTERVAL_S = 0.25
MAX_INTERVAL_S = 60.0
DEFAULT_INTERVAL_S = 1.0
"""The live monitor's, the recorder's and the exporter's interval when none is given."""


class Sampler:
    """Runs ``source.sample()`` every ``interval_s`` on a worker thread."""

    def __init__(
        self,
        source: Source,
        interval_s: float,
        on_snapshot: Callable[[Snapshot], None] | None,
        on_error: Callable[[BaseException], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_held: Callable[[Snapshot], None] | None = None,
    ) -> None:
        """``on_snapshot`` None: ticks (and errors) are kept until :meth:`attach` gives
        the callbacks -- the monitor starts sampling before its UI is built, so
        the first frame does not wait for NVML's first answers after Textual's import.
        ``on_held``: called on the sampling thread with each tick kept so (the
        monitor draws a plain first frame from it while Textual loads)."""
        if not MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S:
            raise ValueError(
                f"interval must be between {MIN_INTERVAL_S} and {MAX_INTERVAL_S} s, "
                f"got {interval_s}"
            )
        self.source = source
        self.interval_s = interval_s
        self._on_snapshot = on_snapshot
        self._on_error = on_error
        self._clock = clock
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.ticks = 0
        self._deadlines: Deadlines | None = None
        self._handoff = threading.Lock()
        self._held: list[Snapshot | BaseException] = []
        self._on_held = on_held
        """What came before :meth:`attach`, in order (a few ticks at most)."""

    def attach(
        self,
        on_snapshot: Callable[[Snapshot], None],
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Give the callbacks (on a sampler made without them); what was held is
        delivered now, on the calling thread, in order, and every later tick as usual."""
        with self._handoff:
            held, self._held = self._held, []
            self._on_snapshot, self._on_error = on_snapshot, on_error
            for item in held:
                if isinstance(item, BaseException):
                    if on_error is not None:
                        on_error(item)
                elif not self._stop.is_set():
                    on_snapshot(item)

    def _deliver(self, item: Snapshot | BaseException) -> None:
        with self._handoff:
            if self._on_snapshot is None:
                self._held.append(item)
                if self._on_held is not None and not isinstance(item, BaseException):
                    try:
                        self._on_held(item)
                    except Exception:  # a failed preview must not stop the sampling
                        log.exception("drawing a held tick failed")
            elif isinstance(item, BaseException):
                if self._on_error is not None:
                    self._on_error(item)
            elif not self._stop.is_set():
                self._on_snapshot(item)

    def start(self) -> None:
        """Start the sampling thread; a second call (from any thread) does nothing.

        The lock makes the check and the start one step: two threads starting at
        once must not each start a sampling thread, or ticks would overlap.
        """
        with self._start_lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(
                target=self._run, name="gputop-hints-sampler", daemon=True
            )
            self._thread.start()

    def pause(self, paused: bool) -> None:
        """Stop taking samples while paused (the source's clock stands still too)."""
        if paused:
            self._paused.set()
        else:
            self._paused.clear()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    def stop(self, timeout: float = 0.5, *, wake: Callable[[], None] | None = None) -> None:
        """Stop sampling; wait at most ``timeout`` for a tick in progress.

        ``wake`` runs once the stop is requested and before the wait: closing the
        source there ends a tick that is waiting on a GPU which does not answer at
        once, instead of at its deadline. A tick that takes longer still (a source
        stuck in a call) is not waited for: the thread is a daemon, and it posts
        nothing once stopped. Quitting must not wait on the hardware."""
        self._stop.set()
        if wake is not None:
            wake()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def skipped_deadlines(self) -> int:
        """Deadlines skipped because a tick overran (they are not caught up)."""
        return 0 if self._deadlines is None else self._deadlines.skipped

    def _run(self) -> None:
        self._deadlines = deadlines = Deadlines(self.interval_s, self._clock)
        while not self._stop.is_set():
            if not self._paused.is_set():
                try:
                    snapshot = self.source.sample()
                except Exception as exc:  # a source bug must not kill the monitor silently
                    log.exception("sampling failed")
                    self._deliver(exc)
                else:
                    self.ticks += 1
                    if not self._stop.is_set():
                        self._deliver(snapshot)
            self._stop.wait(deadlines.wait_s())
