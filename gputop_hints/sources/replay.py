"""Replay: a recording (or any SnapshotStream) played back as a :class:`Source`.

Each :meth:`ReplaySource.sample` returns the next recorded snapshot with its
recorded timestamp, so history and hints behave exactly as they did live. The
TUI drives the pace: it calls ``sample()`` on its sampler thread every
``interval_s / speed`` seconds (:attr:`ReplaySource.tick_interval_s`), and uses
the controls (pause is the sampler's; :meth:`step`, :meth:`seek`,
:meth:`seek_start`, :meth:`seek_end`, :attr:`speed`) from the UI thread; a
lock keeps the two apart. After a seek the caller should start a fresh
History: time jumps.

Memory stays constant: for a stream whose fast paths are seekable
(:class:`~gputop_hints.streams.FastPaths`; a plain recording) a sparse index of
(timestamp, position) is kept every :data:`INDEX_EVERY` ticks as the file is
read, and a seek resumes from the nearest entry before the target; any other
stream (a gzip file, an imported log) is re-opened and skipped forward.

Snapshots come back with ``source="replay"`` and a ``source_detail`` naming the
file and the original source, so views can show a REPLAY badge.

No Textual here.
"""

from __future__ import annotations

import bisect
import math
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.recording.reader import open_recording
from gputop_hints.streams import (
    SnapshotStream,
    SnapshotTick,
    TickView,
    fast_paths,
    read_positions,
)

MIN_SPEED = 1.0
MAX_SPEED = 64.0
INDEX_EVERY = 256
"""Ticks between seek-index entries (plain files)."""


class ReplayEmpty(ValueError):
    """The file holds no snapshot to replay."""


class ReplaySource:
    """Plays a recording back one snapshot per ``sample()`` (a :class:`Source`).

    ``target`` is a path to a recording, or a zero-argument factory returning a
    fresh :class:`SnapshotStream` (an importer's), re-called to seek backwards.
    At the end, ``sample()`` keeps returning the last snapshot and
    :attr:`at_end` is True (the TUI should pause).
    """

    kind = "replay"
    simulated = True

    def __init__(
        self,
        target: str | os.PathLike[str] | Callable[[], SnapshotStream],
        *,
        speed: float = 1.0,
    ) -> None:
        self._lock = threading.RLock()
        if callable(target):
            self._factory: Callable[[], SnapshotStream] = target
            self.path: Path | None = None
        else:
            path = Path(target)
            self.path = path
            self._factory = lambda: open_recording(path)
        self._speed = 1.0
        self.speed = speed
        self._stream: SnapshotStream = self._factory()
        self.info = self._stream.info
        fast = fast_paths(self._stream)
        self._seekable = fast is not None and fast.seekable
        """Whether a seek can resume at a remembered position (a plain recording)."""
        self._index_times: list[float] = []
        self._index: list[object] = []
        self._since_index = 0
        self._iter: Iterator[tuple[float, TickView]] = self._entries(None)
        self._pending: tuple[float, TickView] | None = None
        self._last: Snapshot | None = None
        self._at_end = False
        first = self._peek()
        if first is None:
            self._stream.close()
            raise ReplayEmpty(f"{self.info.path}: no snapshots to replay")
        self.start_time: float = first[0]
        self.interval_s: float = self.info.interval_s or 1.0
        self.end_time: float | None = self._tail_time()
        """Timestamp of the last tick: known at once for plain recordings, else after
        :meth:`seek_end` (or once played to the end)."""

    # -- the Source protocol ----------------------------------------------------

    def sample(self) -> Snapshot:
        """The next recorded snapshot (the last one again once at the end)."""
        with self._lock:
            while True:
                entry = self._peek()
                if entry is None:
                    self._at_end = True
                    if self._last is not None:
                        self.end_time = self._last.timestamp
                        return self._last
                    raise ReplayEmpty(f"{self.info.path}: no snapshots to replay")
                self._pending = None
                snap = _decode(entry[1])
                if snap is None:
                    continue  # a malformed tick: counted in info, skipped
                self._last = self._as_replay(snap)
                if self._peek() is None:
                    self._at_end = True
                    self.end_time = snap.timestamp
                return self._last

    def close(self) -> None:
        with self._lock:
            self._stream.close()

    # -- controls for the TUI -------------------------------------------------------

    @property
    def speed(self) -> float:
        return self._speed

    @speed.setter
    def speed(self, value: float) -> None:
        """Playback speed, clamped to 1-64 (times real time)."""
        self._speed = float(min(MAX_SPEED, max(MIN_SPEED, value)))

    @property
    def tick_interval_s(self) -> float:
        """How often to call :meth:`sample` in wall-clock time at the current speed."""
        return self.interval_s / self._speed

    @property
    def at_end(self) -> bool:
        """True once the last tick has been returned (the TUI should pause)."""
        return self._at_end

    @property
    def read_percent(self) -> float | None:
        """How far into its file the replay has read, in % of the file's size on disk
        (compressed bytes for gzip); None when unknown (a merged pair, an empty file)."""
        path = self._stream.info.path
        try:
            size = os.path.getsize(path)
        except (OSError, ValueError):
            return None
        where = read_positions().get(path)
        if where is None or size <= 0:
            return None
        return min(100.0, 100.0 * where / size)

    @property
    def position(self) -> float | None:
        """Timestamp of the snapshot returned last (None before the first)."""
        return None if self._last is None else self._last.timestamp

    def step(self) -> Snapshot:
        """The next tick, for stepping while paused (same as :meth:`sample`)."""
        return self.sample()

    def seek(self, timestamp: float) -> None:
        """Make the next ``sample()`` return the first tick at or after ``timestamp``
        (the last tick when ``timestamp`` is past the end)."""
        with self._lock:
            start: object | None = None
            entry_time = -math.inf
            if self._seekable and self._index_times:
                i = bisect.bisect_right(self._index_times, timestamp) - 1
                if i >= 0:
                    start, entry_time = self._index[i], self._index_times[i]
            ahead = self._peek()
            here = ahead[0] if ahead is not None else self.position
            if here is None or here > timestamp or (start is not None and entry_time > here):
                self._restart(start)
            self._at_end = False
            last: tuple[float, TickView] | None = None
            while (entry := self._peek()) is not None and entry[0] < timestamp:
                last = entry
                self._pending = None
            if self._peek() is None and last is not None:
                self._pending = last  # past the end: stay on the last tick
                self.end_time = last[0]

    def scan(self, start: float, end: float, most: int) -> Iterator[Snapshot]:
        """The recorded snapshots from ``start`` up to (not including) ``end``: about
        ``most`` of them, evenly spaced in time (the ticks between are skipped
        undecoded); the source is left at ``end``. For a seek: what came before the
        pre-roll window, read for the hints' long-lived records."""
        self.seek(start)
        step = max(0.0, (end - start) / max(1, most))
        due = start
        while True:
            with self._lock:
                entry = self._peek()
                if entry is None or entry[0] >= end:
                    return
                self._pending = None
            if entry[0] < due:
                continue
            due = entry[0] + step
            snap = _decode(entry[1])
            if snap is not None:
                yield self._as_replay(snap)

    def seek_start(self) -> None:
        self.seek(-math.inf)

    def seek_end(self) -> None:
        """Make the next ``sample()`` return the last tick (reads to the end once)."""
        self.seek(math.inf)

    # -- internals ---------------------------------------------------------------

    def _restart(self, start: object | None) -> None:
        self._stream.close()
        self._stream = self._factory()
        self._pending = None
        self._iter = self._entries(start)

    def _entries(self, start: object | None) -> Iterator[tuple[float, TickView]]:
        """(timestamp, tick): cheap to skip, decoded only when played."""
        stream = self._stream
        fast = fast_paths(stream)
        if fast is None:
            for snap in stream:
                yield snap.timestamp, SnapshotTick(snap)
            return
        for tick in fast.lazy_ticks(start):
            if self._seekable and self._wants_index_entry(tick.timestamp):
                self._index_times.append(tick.timestamp)
                self._index.append(tick.position())
            yield tick.timestamp, tick

    def _wants_index_entry(self, timestamp: float) -> bool:
        """Every ``INDEX_EVERY``-th tick, moving forward in time, goes into the seek index."""
        if self._index_times and timestamp <= self._index_times[-1]:
            return False
        self._since_index += 1
        if self._index_times and self._since_index < INDEX_EVERY:
            return False
        self._since_index = 0
        return True

    def _peek(self) -> tuple[float, TickView] | None:
        if self._pending is None:
            self._pending = next(self._iter, None)
        return self._pending

    def _as_replay(self, snap: Snapshot) -> Snapshot:
        name = Path(self.info.path).name
        detail = f"{name}: {snap.source}" + (f" {snap.source_detail}" if snap.source_detail else "")
        return replace(snap, source="replay", source_detail=detail)

    def _tail_time(self) -> float | None:
        """The last tick's timestamp, when the stream can read it from the end."""
        fast = fast_paths(self._stream)
        return fast.last_timestamp() if fast is not None and self.path is not None else None


def _decode(item: TickView) -> Snapshot | None:
    return item.snapshot()
