"""Writing recordings: :class:`RecordingWriter`.

One line per event, flushed (for gzip: a zlib sync flush) one tick at a time, so
a recorder killed with SIGKILL loses at most the tick it was writing. Static
records are written only when something first appears or changes. Rotation by
size keeps each file readable on its own (every file starts with a header), and
``close`` writes the gzip trailer.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import IO, Any, Protocol, cast

from gputop_hints.model import GpuProcess, GpuSample, Launcher, Snapshot
from gputop_hints.recording.format import (
    GPU_STATIC_FIELDS,
    LAUNCHER_STATIC_FIELDS,
    META_FIELDS,
    PROCESS_STATIC_FIELDS,
    encode_tick,
    gpu_static,
    header_for,
    launcher_static,
    meta_of,
    mig_static,
    process_static,
    stack_record,
)

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def _open_for_writing(path: Path) -> tuple[IO[bytes], IO[bytes]]:
    """(what we write to, the raw file under it)."""
    raw = open(path, "wb")  # noqa: SIM115 -- closed by RecordingWriter.close
    if path.name.endswith(".gz"):
        # mtime=0: the same ticks give the same bytes.
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0)), raw
    return raw, raw


_gpu_facts = cast(Callable[[GpuSample], tuple[Any, ...]], attrgetter(*GPU_STATIC_FIELDS))
"""What a ``gpu`` record holds besides the index and MIG instances, compared each tick
as one tuple (its MIG instances are compared only on a GPU that has some)."""
_process_facts = cast(
    Callable[[GpuProcess], tuple[Any, ...]], attrgetter(*PROCESS_STATIC_FIELDS)
)
_launcher_facts = cast(Callable[[Launcher], tuple[Any, ...]], attrgetter(*LAUNCHER_STATIC_FIELDS))


class Reading(Protocol):
    """What :meth:`RecordingWriter.write_stack` takes: a ``StackReading``, or anything
    that gives its JSON form."""

    def to_dict(self) -> dict[str, Any]: ...


class RecordingWriter:
    """Writes snapshots to a recording, one flushed line (or gzip sync-flush) per tick.

    ``max_bytes`` caps the size of the current file (bytes on disk); when a
    tick would pass it, the file is closed and renamed ``FILE.1`` (older ones
    shift to ``FILE.2`` ... up to ``FILE.<keep>``, the oldest dropped) and a
    new ``FILE`` starts with its own header, so each file reads alone.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int | None = None,
        keep: int = 5,
    ) -> None:
        if max_bytes is not None and max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        if keep < 0:
            raise ValueError("keep must be >= 0")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.keep = keep
        self.ticks = 0
        """Ticks written, over all files."""
        self.bytes_written = 0
        """Bytes written to disk, over all files (compressed size for .gz)."""
        self.rotations = 0
        self.stacks = 0
        """``stack`` lines written, over all files."""
        self._out: IO[bytes] | None = None
        self._raw: IO[bytes] | None = None
        self._file_bytes = 0
        self._file_ticks = 0
        self._meta: dict[str, Any] | None = None
        self._gpus: dict[int, tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}
        """GPU index -> (its GPU_STATIC_FIELDS, its MIG instances' facts) as last written."""
        self._procs: dict[tuple[int, int], tuple[Any, ...]] = {}
        """(pid, GPU) -> its PROCESS_STATIC_FIELDS as last written."""
        self._workers: dict[int, tuple[str | None, str | None]] = {}
        self._launchers: dict[int, tuple[Any, ...]] = {}
        """Launcher pid -> its LAUNCHER_STATIC_FIELDS as last written."""
        self._closed = False

    # -- writing ---------------------------------------------------------------

    def write(self, snapshot: Snapshot) -> None:
        """Append one tick (plus whatever static records it needs) and flush it."""
        if self._closed:
            raise ValueError("write to a closed RecordingWriter")
        if self._out is None:
            self._start_file(snapshot)
        elif self.max_bytes is not None and self._file_bytes >= self.max_bytes and self._file_ticks:
            self._rotate(snapshot)
        lines = self._static_records(snapshot)
        lines.append(_dumps(encode_tick(snapshot)))
        self._emit(("\n".join(lines) + "\n").encode("utf-8"))
        self.ticks += 1
        self._file_ticks += 1

    def write_stack(self, reading: Reading, taken_at: float) -> bool:
        """Append a ``stack`` line (format.STACK): ``reading``, taken at ``taken_at`` (the
        ticks' clock), flushed at once. False (nothing written) before the first tick: a
        file starts with its header, and a reading belongs after the ticks it explains."""
        if self._closed:
            raise ValueError("write to a closed RecordingWriter")
        if self._out is None:
            return False
        try:
            line = _dumps(stack_record(reading.to_dict(), taken_at))
        except ValueError:  # a non-finite number: the reading is left out, the file goes on
            return False
        self._emit((line + "\n").encode("utf-8"))
        self.stacks += 1
        return True

    def _static_records(self, snapshot: Snapshot) -> list[str]:
        """The record lines this tick needs before it: what appeared or changed.

        A row absent from a tick is forgotten: if it comes back, its record is
        written again.
        """
        lines: list[str] = []
        meta = meta_of(snapshot)
        if meta != self._meta:
            self._meta = meta
            lines.append(_dumps({"type": "meta", **meta}))
        gpus: dict[int, tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}
        for g in snapshot.gpus:
            seen = self._gpus.get(g.index)
            facts = _gpu_facts(g)
            if (
                seen is None
                or facts != seen[0]
                or ((g.mig_instances or seen[1]) and mig_static(g) != seen[1])
            ):
                static = gpu_static(g)
                lines.append(_dumps({"type": "gpu", **static}))
                seen = (facts, static["mig_instances"])
            gpus[g.index] = seen
        self._gpus = gpus
        procs: dict[tuple[int, int], tuple[Any, ...]] = {}
        workers: dict[int, tuple[str | None, str | None]] = {}
        seen_procs = self._procs
        for p in snapshot.processes:
            key = (p.pid, p.gpu_index)
            pfacts = _process_facts(p)
            if seen_procs.get(key) != pfacts:
                lines.append(_dumps({"type": "process", **process_static(p)}))
            procs[key] = pfacts
            for w in p.workers:
                if w.pid not in workers:
                    static_w = (w.name, w.command)
                    if self._workers.get(w.pid) != static_w:
                        record = {"type": "worker", "pid": w.pid, "name": w.name}
                        if w.command is not None:  # absent: old recordings, unknown command
                            record["command"] = w.command
                        lines.append(_dumps(record))
                    workers[w.pid] = static_w
        self._procs = procs
        self._workers = workers
        if snapshot.launchers or self._launchers:
            launchers: dict[int, tuple[Any, ...]] = {}
            for launcher in snapshot.launchers:
                lfacts = _launcher_facts(launcher)
                if self._launchers.get(launcher.pid) != lfacts:
                    lines.append(_dumps({"type": "launcher", **launcher_static(launcher)}))
                launchers[launcher.pid] = lfacts
            self._launchers = launchers
        return lines

    def _emit(self, data: bytes) -> None:
        out, raw = self._out, self._raw
        assert out is not None and raw is not None
        before = raw.tell()
        out.write(data)
        out.flush()  # GzipFile.flush: a zlib sync flush, readable up to here
        if raw is not out:
            raw.flush()
        grown = raw.tell() - before
        self._file_bytes += grown
        self.bytes_written += grown

    def _start_file(self, snapshot: Snapshot) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._out, self._raw = _open_for_writing(self.path)
        self._file_bytes = 0
        self._file_ticks = 0
        header = header_for(snapshot)
        # The header stands for a meta record and the first GPU records.
        self._meta = {k: header[k] for k in META_FIELDS}
        self._gpus = {g.index: (_gpu_facts(g), mig_static(g)) for g in snapshot.gpus}
        self._procs = {}
        self._workers = {}
        self._launchers = {}
        self._emit((_dumps(header) + "\n").encode("utf-8"))

    def _rotate(self, snapshot: Snapshot) -> None:
        self._close_file()
        if self.keep == 0:
            self.path.unlink(missing_ok=True)
        else:
            for i in range(self.keep - 1, 0, -1):
                older = self.path.with_name(f"{self.path.name}.{i}")
                if older.exists():
                    older.replace(self.path.with_name(f"{self.path.name}.{i + 1}"))
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        self.rotations += 1
        self._start_file(snapshot)

    def _close_file(self) -> None:
        out, raw = self._out, self._raw
        self._out = self._raw = None
        if raw is None:
            return
        try:
            if out is not None and out is not raw:
                before = raw.tell()
                out.close()  # the gzip trailer; GzipFile leaves a given fileobj open
                grown = raw.tell() - before
                self._file_bytes += grown
                self.bytes_written += grown
        finally:
            raw.close()

    def close(self) -> None:
        """Finish the file (gzip trailer included). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._close_file()

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
