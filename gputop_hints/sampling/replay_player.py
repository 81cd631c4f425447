"""Replay pacing off the UI thread: one thread owns the :class:`ReplaySource`.

Every read of the recording -- playing, stepping, seeking, the pre-roll after a
seek -- happens on this thread, in the order the UI asked for it, so reads never
overlap and a slow seek in a compressed file never freezes the screen. The UI
only queues commands and receives frozen :class:`ReplayBatch` objects.

Pace: the recorded interval divided by the speed is how long a tick lasts on
screen. Refreshing the screen more often than every :data:`MIN_REFRESH_S`
would burn CPU for nothing a person can see, so at high speed one refresh
carries several recorded ticks (1 s ticks at 64x: 16 ticks every 0.25 s). The
UI puts every one of them through history and the hint engine, and repaints
once.

A played batch is not followed by the next until the UI says it has taken it
(:meth:`ReplayPlayer.consumed`): when the UI falls behind, playback slows down
instead of queueing up messages.

No Textual here: the app passes a callback that posts a message.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from gputop_hints.model import Snapshot
from gputop_hints.sampling.sampler import MIN_INTERVAL_S
from gputop_hints.sources.replay import MAX_SPEED, MIN_SPEED, ReplaySource

log = logging.getLogger(__name__)

SEED_LOOKBACK_S = 6 * 3600.0
"""How far before a seek's pre-roll the hints' long-lived records are rebuilt: an idle
spell older than this reads as this long (the report reads the whole file)."""
SEED_TICKS = 2000
"""... from at most this many ticks, evenly spaced: a seek into a day-long recording
decodes 2000 ticks, not 86,400 (an activity between two of them can be missed)."""

MIN_REFRESH_S = MIN_INTERVAL_S
"""The shortest time between two screen refreshes during replay."""


@dataclass(frozen=True, slots=True)
class ReplayBatch:
    """Recorded ticks for the UI to take in order, then repaint once."""

    snapshots: tuple[Snapshot, ...]
    restart: bool
    """The recording was entered somewhere else (a seek): start history and hints over
    before taking ``snapshots`` (which then begin with the pre-roll window)."""
    at_end: bool
    """The last tick of the recording has been played; playback paused itself."""
    seed: object | None = None
    """With ``restart``: what the hints remember beyond their window, built from the
    recording before the pre-roll (``seed_from``); the UI hands it to the engine."""


def refresh_plan(interval_s: float, speed: float) -> tuple[int, float]:
    """(recorded ticks per screen refresh, seconds between refreshes) at ``speed``."""
    tick_s = interval_s / speed
    per_refresh = max(1, math.ceil(MIN_REFRESH_S / tick_s - 1e-9))
    return per_refresh, per_refresh * tick_s


def clamp_speed(speed: float) -> float:
    return float(min(MAX_SPEED, max(MIN_SPEED, speed)))


@dataclass(frozen=True, slots=True)
class _Seek:
    timestamp: float


@dataclass(frozen=True, slots=True)
class _Step:
    pass


@dataclass(frozen=True, slots=True)
class _SeekEnd:
    pass


_Command = _Seek | _Step | _SeekEnd


class ReplayPlayer:
    """Plays ``source`` at its speed on a worker thread; steps and seeks on request.

    ``preroll_s``: after a seek, this much recording before the target is read
    and handed over with it, so graphs and hints are full at once.
    """

    def __init__(
        self,
        source: ReplaySource,
        on_batch: Callable[[ReplayBatch], None],
        *,
        preroll_s: float,
        on_error: Callable[[BaseException], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        seed_from: Callable[[Iterable[Snapshot]], object | None] | None = None,
    ) -> None:
        self.source = source
        self._seed_from = seed_from
        self.preroll_s = preroll_s
        self._on_batch = on_batch
        self._on_error = on_error
        self._clock = clock
        self._commands: queue.SimpleQueue[_Command] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._awaiting_ui = threading.Event()
        self._thread: threading.Thread | None = None
        self.batches = 0
        """Batches handed over (for tests and profiling)."""

    # -- control, from the UI thread ---------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="gputop-hints-replay", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    def pause(self, paused: bool) -> None:
        if paused:
            self._paused.set()
        else:
            self._paused.clear()
        self._wake.set()

    def set_speed(self, speed: float) -> float:
        """Change the speed (clamped to 1-64); the new pace starts with the next refresh."""
        # A float store: the source's only state the UI thread touches.
        self.source.speed = clamp_speed(speed)
        self._wake.set()
        return self.source.speed

    def step(self) -> None:
        """Play one tick (meant for while paused)."""
        self._send(_Step())

    def seek(self, timestamp: float) -> None:
        """Jump to the first tick at or after ``timestamp`` (history starts over)."""
        self._send(_Seek(timestamp))

    def seek_start(self) -> None:
        self._send(_Seek(-math.inf))

    def seek_end(self) -> None:
        self._send(_SeekEnd())

    def consumed(self) -> None:
        """The UI has taken the latest batch: the next one may be read."""
        self._awaiting_ui.clear()
        self._wake.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _send(self, command: _Command) -> None:
        self._commands.put(command)
        self._wake.set()

    # -- the worker thread -----------------------------------------------------------

    def _run(self) -> None:
        due = self._clock()
        while not self._stop.is_set():
            self._wake.clear()
            while not self._stop.is_set():
                try:
                    command = self._commands.get_nowait()
                except queue.Empty:
                    break
                self._guarded(partial(self._obey, command))
                # A jump is shown for a full refresh before playing on.
                due = self._clock() + refresh_plan(self.source.interval_s, self.source.speed)[1]
            if self._stop.is_set():
                return
            per_refresh, every = refresh_plan(self.source.interval_s, self.source.speed)
            now = self._clock()
            due = min(due, now + every)  # a speed-up takes effect now, not after the old wait
            timeout: float | None = None
            if not self._paused.is_set() and not self._awaiting_ui.is_set():
                if now >= due:
                    self._guarded(partial(self._play, per_refresh))
                    # Keep the pace; a refresh missed by more than a period is skipped.
                    due = due + every if now - due < every else now + every
                    continue
                timeout = due - now
            self._wake.wait(timeout)

    def _guarded(self, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:  # a bad file must not kill playback silently
            log.exception("replay failed")
            if self._on_error is not None:
                self._on_error(exc)

    def _hand_over(self, batch: ReplayBatch) -> None:
        if batch.at_end:
            self._paused.set()
        if self._stop.is_set():
            return
        self.batches += 1
        self._on_batch(batch)

    def _play(self, count: int) -> None:
        source = self.source
        snapshots: list[Snapshot] = []
        # At the end `sample()` repeats the last tick: never hand that over twice.
        while len(snapshots) < count and not source.at_end:
            snapshots.append(source.sample())
        self._awaiting_ui.set()
        self._hand_over(ReplayBatch(tuple(snapshots), restart=False, at_end=source.at_end))

    def _obey(self, command: _Command) -> None:
        source = self.source
        if isinstance(command, _Step):
            snapshots = () if source.at_end else (source.sample(),)
            self._hand_over(ReplayBatch(snapshots, restart=False, at_end=source.at_end))
            return
        if isinstance(command, _SeekEnd):
            if source.end_time is None:
                source.seek_end()  # a compressed file: read to the end once to learn it
            target = source.end_time if source.end_time is not None else math.inf
        else:
            target = command.timestamp
        seed = None
        start = target - self.preroll_s
        if self._seed_from is not None and start > source.start_time:
            # Idle spells that began before the pre-roll are measured from their start,
            # as the report measures them: the hints' long-lived records are rebuilt from
            # up to SEED_LOOKBACK_S before it, SEED_TICKS ticks at most.
            begin = max(source.start_time, start - SEED_LOOKBACK_S)
            seed = self._seed_from(source.scan(begin, start, SEED_TICKS))
        source.seek(start)
        window: deque[Snapshot] = deque(
            maxlen=max(2, math.ceil(self.preroll_s / source.interval_s) + 1)
        )
        while True:
            snapshot = source.sample()
            window.append(snapshot)
            if snapshot.timestamp >= target or source.at_end:
                break
        self._hand_over(
            ReplayBatch(tuple(window), restart=True, at_end=source.at_end, seed=seed)
        )
