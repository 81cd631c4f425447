"""The headless record loop behind ``gputop-hints record``: :func:`record`.

It samples a source into a :class:`~gputop_hints.recording.writer.RecordingWriter`
in the calling thread until ``duration_s`` has been recorded or SIGTERM, SIGINT
or SIGHUP arrives; a signal finishes the current tick and closes the file cleanly
(gzip trailer included), so a recording stopped by ``kill``, Ctrl-C or a dropped
SSH session reads to its end. A GPU whose NVML call hangs holds a tick up for
at most the source's deadline (the live source reports it not answering, and
this loop says so on stderr), so a signal is still seen within about a tick.

Live sources are paced in real time. A simulated source whose clock advances one
interval per ``sample()`` (the demo) records a bounded ``--duration`` as fast as
it goes, as ``--once`` does: sleeping would only make the user wait for
simulated time. Without a duration it is paced like a live source, so an
open-ended demo recording does not fill the disk at full speed until stopped.

No Textual here.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import IO, Any

from gputop_hints.hints.findings import Finding
from gputop_hints.model import Snapshot, not_answering_text
from gputop_hints.recording.writer import RecordingWriter
from gputop_hints.sampling.once_stacks import warned_processes
from gputop_hints.sampling.pace import Deadlines
from gputop_hints.sampling.stacks import MAX_WORKERS, StackResult, StackService
from gputop_hints.sources import Source
from gputop_hints.stacks import StackReading

EXIT_RECORDED = 0
"""Recorded (also when stopped by a signal)."""
EXIT_WRITE_FAILED = 1
"""The file could not be written or closed; the message names the path."""


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""What ends a recording cleanly: ``kill``, Ctrl-C, and the hang-up a recorder
started in an SSH session gets when the connection drops (left to Python's
default, SIGHUP would kill it before the gzip trailer and the summary)."""


def paces_in_real_time(source: Source, duration_s: float | None) -> bool:
    """Whether recording ``source`` must sleep between ticks.

    Only a simulated source asked for a bounded duration records without sleeping.
    """
    return not (source.simulated and duration_s is not None)


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Set ``stop`` on :data:`STOP_SIGNALS` while the loop runs; restore the old handlers after.

    Python delivers signals to the main thread only, so from another thread the
    caller's own handlers stay in place.
    """
    previous: dict[signal.Signals, Any] = {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, on_signal)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _report_not_answering(snapshot: Snapshot, silent: set[int], err: IO[str]) -> None:
    """Say on stderr when a GPU stops answering (once) and when it answers again."""
    for gpu in snapshot.gpus:
        if gpu.not_answering_s is not None and gpu.index not in silent:
            silent.add(gpu.index)
            print(
                f"gputop-hints record: GPU {gpu.index} {not_answering_text(gpu.not_answering_s)}"
                " (recorded as unknown meanwhile)",
                file=err,
            )
        elif gpu.not_answering_s is None and gpu.index in silent:
            silent.discard(gpu.index)
            print(f"gputop-hints record: GPU {gpu.index} answers again", file=err)


class RecordStacks:
    """The stacks of the processes the hints warn about while recording (issue 45).

    :meth:`consider` runs after the hints on each tick: a process with a warning-or-worse
    finding (``once_stacks.warned_processes``: worst first, at most three, a GPU-wide
    warning counting for the one process on its GPU) is sampled once per warning -- again
    only after it was not warned for a tick -- by a :class:`StackService` on its own
    thread, under the live monitor's rate limits (one sampling at a time, at most one
    automatic one a minute). The tick never waits for py-spy: :meth:`drain` hands the
    readings done since the last tick to the loop, which writes them as ``stack`` lines.
    """

    def __init__(
        self,
        on_reading: Callable[[StackReading, float], None] | None = None,
        service: Callable[[Callable[[StackResult], None]], StackService] = StackService,
    ) -> None:
        """``on_reading`` gets each reading as :meth:`drain` hands it on (on the loop's
        thread): the recorder's hint engine takes it, as the live monitor's does."""
        self._done: collections.deque[StackResult] = collections.deque()
        self._service = service(self._done.append)
        self._asked: set[int] = set()
        self._on_reading = on_reading

    def consider(self, findings: Sequence[Finding], snapshot: Snapshot) -> None:
        warned = warned_processes(findings, snapshot)
        self._asked &= {p.pid for p in warned}
        for proc in warned:
            if proc.pid in self._asked or not self._service.due(proc.pid):
                continue
            busiest = sorted(proc.workers, key=lambda w: -(w.cpu_percent or 0.0))
            workers = [w.pid for w in busiest[:MAX_WORKERS]]
            if self._service.request(proc.pid, workers):
                self._asked.add(proc.pid)

    def drain(self) -> list[tuple[StackReading, float]]:
        """The readings finished since the last call, with when each was taken."""
        out = []
        while self._done:
            result = self._done.popleft()
            out.append((result.reading, result.at))
            if self._on_reading is not None:
                self._on_reading(result.reading, result.at)
        return out

    def close(self) -> None:
        self._service.close()


def record(
    source: Source,
    path: str | os.PathLike[str],
    *,
    interval_s: float,
    duration_s: float | None = None,
    max_bytes: int | None = None,
    keep: int = 5,
    on_tick: Callable[[Snapshot], None] | None = None,
    pace: bool | None = None,
    stderr: IO[str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] | None = None,
    stop: threading.Event | None = None,
    stacks: Callable[[], Sequence[tuple[StackReading, float]]] | None = None,
) -> int:
    """Sample ``source`` every ``interval_s`` into ``path`` until stopped; return an exit code.

    Stops after ``duration_s`` (None: at one of :data:`STOP_SIGNALS`). ``pace`` says whether
    to sleep between ticks; None decides by :func:`paces_in_real_time`.
    ``clock`` and ``sleep`` measure and spend the time between ticks (by default
    the monotonic clock and a wait that a signal cuts short). ``stop``, set from
    any thread, ends the recording as a signal does. ``stacks`` (:meth:`RecordStacks.drain`)
    gives, after each tick, the stack readings to write as ``stack`` lines. Prints one summary
    line to ``stderr`` at the end. Exit codes: :data:`EXIT_RECORDED`,
    :data:`EXIT_WRITE_FAILED`.
    """
    err = sys.stderr if stderr is None else stderr
    if not interval_s > 0:
        raise ValueError("interval must be positive")
    if pace is None:
        pace = paces_in_real_time(source, duration_s)
    if stop is None:
        stop = threading.Event()
    wait = stop.wait if sleep is None else sleep
    writer = RecordingWriter(path, max_bytes=max_bytes, keep=keep)
    count = None if duration_s is None else max(1, round(duration_s / interval_s))
    started = clock()
    deadlines = Deadlines(interval_s, clock)
    code = EXIT_RECORDED
    silent: set[int] = set()
    with stop_on_signals(stop):
        try:
            while not stop.is_set() and (count is None or writer.ticks < count):
                snapshot = source.sample()
                writer.write(snapshot)
                _report_not_answering(snapshot, silent, err)
                if on_tick is not None:
                    on_tick(snapshot)
                if stacks is not None:
                    for reading, taken_at in stacks():
                        writer.write_stack(reading, taken_at)
                if pace and (count is None or writer.ticks < count):
                    wait(deadlines.wait_s())
            if stacks is not None:
                # Readings that finished after the last tick's drain: written too, not lost
                # with the stop (one still being sampled is: the stop does not wait for it).
                for reading, taken_at in stacks():
                    writer.write_stack(reading, taken_at)
        except OSError as exc:
            print(f"gputop-hints record: cannot write {path}: {exc}", file=err)
            code = EXIT_WRITE_FAILED
        finally:
            try:
                writer.close()
            except OSError as exc:
                print(f"gputop-hints record: closing {path}: {exc}", file=err)
                code = EXIT_WRITE_FAILED
    rotated = f", {writer.rotations} rotation(s)" if writer.rotations else ""
    if writer.stacks:
        rotated += f", {writer.stacks} stack reading(s)"
    print(
        f"gputop-hints record: {writer.ticks} ticks, {writer.bytes_written} bytes{rotated} "
        f"-> {path} ({clock() - started:.1f} s)",
        file=err,
    )
    return code
