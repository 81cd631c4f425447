"""Snapshots read from a file: our own recordings and the logs people already have.

Every file input -- a ``gputop-hints record`` JSON Lines file, an
``nvidia-smi --query-gpu`` CSV, ``nvidia-smi dmon`` output, W&B system metrics,
a generic CSV -- is opened as a :class:`SnapshotStream`: an iterator of
:class:`~gputop_hints.model.Snapshot` in time order, read lazily so a multi-GB
file costs constant memory, plus :class:`StreamInfo` saying what the file is and
what it lacks. Replay, report and the hints all consume that one shape.

Whatever a log does not contain is absent -- ``None`` in the snapshots and named
in ``StreamInfo.missing`` -- never zero, so the report can say which rules could
not be evaluated for lack of a metric.

No Textual here.
"""

from __future__ import annotations

import bz2
import contextlib
import io
import lzma
import os
import stat
import threading
import weakref
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, cast

from gputop_hints.model import (
    ALL_METRICS,
    METRIC_HOST_CPU,
    METRIC_MEMORY_ACCESS,
    METRIC_PCIE,
    METRIC_POWER,
    METRIC_PROCESSES,
    METRIC_SM,
    METRIC_SUBSECOND,
    METRIC_TEMPERATURE,
    METRIC_THROTTLE,
    METRIC_VRAM,
    GpuSample,
    Snapshot,
)

# The metric vocabulary lives in the model (the rules name what they need in it);
# it is re-exported here for the readers that fill StreamInfo.missing.
__all__ = [
    "ALL_METRICS",
    "GZIP_MAGIC",
    "METRIC_HOST_CPU",
    "METRIC_MEMORY_ACCESS",
    "METRIC_PCIE",
    "METRIC_POWER",
    "METRIC_PROCESSES",
    "METRIC_SM",
    "METRIC_SUBSECOND",
    "METRIC_TEMPERATURE",
    "METRIC_THROTTLE",
    "METRIC_VRAM",
    "EmptyStream",
    "FastPaths",
    "ReadCounters",
    "SnapshotStream",
    "SnapshotTick",
    "StreamInfo",
    "TickView",
    "UnrecognisedFormat",
    "fast_paths",
    "note_bad_line",
    "open_maybe_gzip",
    "read_positions",
    "require_regular_file",
    "stream_cut",
    "tick_count",
    "tick_views",
]


@dataclass(frozen=True)
class StreamInfo:
    """What a file is, as far as it could be told before its records were read, and
    what it does not contain. Immutable: what reading finds (bad records, GPUs seen,
    format-specific facts) is kept beside it, in the stream's :class:`ReadCounters`."""

    path: str
    format: str
    """"recording", "nvidia-smi-csv", "nvidia-smi-dmon", "wandb", "csv"."""
    interval_s: float | None = None
    """The nominal sampling interval (from the header, or the median spacing)."""
    hostname: str | None = None
    gpu_count: int | None = None
    """How many GPUs the file's header says (None: the header does not say; see
    :attr:`ReadCounters.gpu_count` for how many the records showed)."""
    missing: tuple[str, ...] = ()
    """Metrics (see ALL_METRICS) the file does not contain at all."""
    detail: str = ""
    """Human note, e.g. "nvidia-smi CSV with header and units, 8 columns"."""
    header: Mapping[str, object] = field(default_factory=dict)
    """Format-specific metadata (a recording's header line, the CSV column map...);
    read-only."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "header", MappingProxyType(dict(self.header)))


@dataclass
class ReadCounters:
    """What reading a file found so far, beside its :class:`StreamInfo`: malformed
    records, how many GPUs the records showed, and facts a format learns from its
    data (a watch capture's frames, the columns with bad cells...). Reset when a
    stream is read again from the start."""

    bad_lines: int = 0
    """Malformed lines (records) skipped so far."""
    first_bad_line: int | None = None
    """1-based line number of the first malformed line, for the message."""
    first_bad_reason: str | None = None
    gpu_count: int | None = None
    """The most GPUs one record held (None: no record read yet)."""
    found: dict[str, object] = field(default_factory=dict)
    """Format-specific facts learnt from the data, by name."""
    _last_bad_line: int | None = field(default=None, repr=False, compare=False)

    def note_bad_line(self, line_number: int, reason: str, *, distinct: bool = False) -> None:
        """Count a malformed line; remember the first one for the message. A line
        noted again at once (a NUL run and the text after it) counts once, unless
        ``distinct`` (a reader of several files: the same number in another file)."""
        if line_number > 0 and line_number == self._last_bad_line and not distinct:
            return
        self._last_bad_line = line_number
        self.bad_lines += 1
        if self.first_bad_line is None:
            self.first_bad_line = line_number
            self.first_bad_reason = reason

    def note_stat(self, key: str, name: str, value: float) -> None:
        """Fold ``value`` into the running count, mean, min and max kept in
        ``found[key][name]`` (constant memory): a figure a log has that has no place in
        a snapshot, e.g. one whole-host CPU % (``system_cpu_percent``)."""
        bucket = self.found.setdefault(key, {})
        assert isinstance(bucket, dict)
        s = bucket.setdefault(name, {"n": 0, "mean": 0.0, "min": value, "max": value})
        n = s["n"] + 1
        s["mean"] = s["mean"] + (value - s["mean"]) / n
        s["n"] = n
        s["min"] = min(s["min"], value)
        s["max"] = max(s["max"], value)

    def saw_gpus(self, count: int) -> None:
        """A record held ``count`` GPUs."""
        if self.gpu_count is None or count > self.gpu_count:
            self.gpu_count = count

    def reset(self) -> None:
        """Forget everything: the stream is read again from the start."""
        self.bad_lines = 0
        self.first_bad_line = None
        self.first_bad_reason = None
        self.gpu_count = None
        self.found = {}
        self._last_bad_line = None


class SnapshotStream(Protocol):
    """An iterable of snapshots from a file, with what is known about the file
    (``info``, fixed once the file is opened) and what reading it found so far
    (``counters``)."""

    info: StreamInfo
    counters: ReadCounters

    def __iter__(self) -> Iterator[Snapshot]: ...

    def close(self) -> None: ...


class TickView(Protocol):
    """One tick, decoded only as far as asked: its time and GPU samples cheaply, the
    whole snapshot on demand (the report reads every tick's GPUs, few in full)."""

    @property
    def timestamp(self) -> float: ...

    def gpu_samples(self) -> Sequence[GpuSample]:
        """The tick's GPUs; raises IndexError, TypeError or ValueError when malformed."""
        ...

    def snapshot(self) -> Snapshot | None:
        """The whole tick, or None when it cannot be read (counted as a bad record)."""
        ...

    def position(self) -> object:
        """Where this tick starts, to give back to ``lazy_ticks(start=...)`` (a seek)."""
        ...


class FastPaths(Protocol):
    """What a stream may offer besides plain iteration: any stream can, the
    recording does. Asked for by :func:`fast_paths`, never by the stream's type."""

    seekable: bool
    """Whether ``lazy_ticks(start=)`` can resume at a remembered position."""

    def lazy_ticks(self, start: object | None = None) -> Iterator[TickView]: ...

    def tick_count(self) -> int:
        """How many ticks the file holds, counted without decoding them."""
        ...

    def last_timestamp(self) -> float | None:
        """The last tick's time, read from the end of the file (None: cannot tell)."""
        ...


class SnapshotTick:
    """A snapshot already decoded, as a :class:`TickView` (streams without fast paths)."""

    __slots__ = ("_snapshot",)

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    @property
    def timestamp(self) -> float:
        return self._snapshot.timestamp

    def gpu_samples(self) -> Sequence[GpuSample]:
        return self._snapshot.gpus

    def snapshot(self) -> Snapshot | None:
        return self._snapshot

    def position(self) -> object:
        return None


class EmptyStream:
    """A file with nothing in it (0 bytes): a stream with no snapshots.

    What a recorder killed before its first tick leaves behind; ``report`` reads it
    as a recording with no samples (exit 0), so a job epilog does not fail on it."""

    def __init__(self, path: str) -> None:
        self.info = StreamInfo(
            path=path,
            format="empty",
            detail="0 bytes: a recorder stopped before its first tick writes nothing",
        )
        self.counters = ReadCounters()

    def __iter__(self) -> Iterator[Snapshot]:
        return iter(())

    def close(self) -> None:
        pass


def fast_paths(stream: SnapshotStream) -> FastPaths | None:
    """The stream's fast paths when it offers them (it has ``lazy_ticks``), else None."""
    if callable(getattr(stream, "lazy_ticks", None)):
        return cast(FastPaths, stream)
    return None


def tick_views(stream: SnapshotStream) -> Iterator[TickView]:
    """Every tick of ``stream`` as a :class:`TickView`, lazily where the stream can."""
    fast = fast_paths(stream)
    if fast is not None:
        return fast.lazy_ticks()
    return map(SnapshotTick, stream)


def tick_count(stream: SnapshotStream) -> int | None:
    """How many ticks ``stream`` holds when it can count them cheaply, else None."""
    fast = fast_paths(stream)
    return None if fast is None else fast.tick_count()


class UnrecognisedFormat(ValueError):
    """No importer accepted the file; the message lists what was tried and why each failed."""


def note_bad_line(counters: ReadCounters, line_number: int, reason: str) -> None:
    """Count a malformed line; remember the first one for the message."""
    counters.note_bad_line(line_number, reason)


GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of every gzip file: how a compressed log or recording is told,
whatever its name."""


XZ_MAGIC = b"\xfd7zXZ\x00"
BZIP2_MAGIC = b"BZh"

_NOT_READ_COMPRESSED = (
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "zstd -d FILE"),
    (b"PK\x03\x04", "a zip archive", "unzip FILE"),
    (b"\x04\x22\x4d\x18", "lz4-compressed", "lz4 -d FILE"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "7z x FILE"),
)
"""Compressed files no module of Python's standard library reads, by magic bytes: what
they are and the command that unpacks one."""


def compression_of(first_bytes: bytes) -> str | None:
    """``"gzip"``, ``"xz"`` or ``"bzip2"`` for a file :func:`open_maybe_gzip` unpacks,
    by its first bytes (six suffice); None for any other file."""
    if first_bytes[:2] == GZIP_MAGIC:
        return "gzip"
    if first_bytes[:6] == XZ_MAGIC:
        return "xz"
    if first_bytes[:3] == BZIP2_MAGIC and first_bytes[3:4] in b"123456789" and first_bytes[3:4]:
        return "bzip2"
    return None


def compressed_unread(first_bytes: bytes) -> str | None:
    """What to do with a file compressed in a way :func:`open_maybe_gzip` does not read
    (``zstd -d FILE`` first), by its first bytes; None for any other file."""
    for magic, what, command in _NOT_READ_COMPRESSED:
        if first_bytes.startswith(magic):
            return f"{what}: unpack it first ({command}); gzip, xz and bzip2 are read as they are"
    return None


_UNPACK_CHUNK = 64 * 1024
"""Compressed bytes read from disk at a time."""


def _new_decompressor(kind: str) -> Any:
    """zlib's, lzma's or bz2's decompressor (zlib's type is not public at run time)."""
    if kind == "gzip":
        return zlib.decompressobj(zlib.MAX_WBITS | 16)
    if kind == "xz":
        return lzma.LZMADecompressor()
    return bz2.BZ2Decompressor()


class _Unpacked(io.RawIOBase):
    """A gzip, xz or bzip2 file's bytes, unpacked as they are read.

    A stream that ends before its end marker -- a writer killed mid-file (SIGKILL,
    the OOM killer, a job's time limit) after a sync flush each tick -- ends where
    its bytes do instead of failing: everything before the cut is read, and
    :attr:`cut` says where it ended. Damaged data is an ``OSError``. Several
    members (``cat a.gz b.gz``) read as one; what follows a whole member and is not
    another (gzip's zero padding, trailing junk) ends the file, as ``xz`` does."""

    def __init__(self, raw: io.BufferedReader, kind: str) -> None:
        super().__init__()
        self._raw = raw
        self.kind = kind
        self._decompressor = _new_decompressor(kind)
        self._input = b""
        self._fed = False
        """Whether the current member has been given any bytes (an unfed one can end)."""
        self._members = 0
        self._done = False
        self._left = b""
        """What a cut stream still held when its bytes ran out, handed out in pieces."""
        self.unpacked = 0
        """Bytes unpacked so far."""
        self.cut: str | None = None
        """Where a stream that ended early stopped, for the user; None until then."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        data = self._next(len(buffer))
        buffer[: len(data)] = data
        self.unpacked += len(data)
        return len(data)

    def _next(self, size: int) -> bytes:
        if self._left:
            out, self._left = self._left[:size], self._left[size:]
            return out
        while not self._done and size > 0:
            decompressor = self._decompressor
            if decompressor.eof:
                self._members += 1
                self._input = decompressor.unused_data + self._input
                self._decompressor = decompressor = _new_decompressor(self.kind)
                self._fed = False
            wants_input = self.kind == "gzip" or decompressor.needs_input
            if not self._input and wants_input:
                self._input = self._raw.read(_UNPACK_CHUNK)
                if not self._input:
                    self._done = True
                    if self._fed:
                        self._note_cut()
                        self._left = self._rest(decompressor)
                    break
            if self._members and not self._fed:
                self._input = self._input.lstrip(b"\x00")  # gzip's padding
                if not self._input:
                    continue
            try:
                out = cast(bytes, decompressor.decompress(self._input, size))
            except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:
                if self._members and not self._fed:
                    self._done = True  # junk after a whole stream: the file ends there
                    return b""
                raise OSError(f"damaged {self.kind} data: {exc}") from None
            self._fed = True
            # A zlib stream hands back what it did not take; the others keep it, and
            # any bytes after the stream's end wait in unused_data for the next member.
            self._input = decompressor.unconsumed_tail if self.kind == "gzip" else b""
            if out:
                return out
        if self._left:
            return self._next(size)
        return b""

    def _rest(self, decompressor: Any) -> bytes:
        """What a cut zlib stream still holds of the bytes it was given."""
        if self.kind == "gzip":
            with contextlib.suppress(zlib.error):
                return cast(bytes, decompressor.flush())
        return b""

    def _note_cut(self) -> None:
        try:
            size = os.fstat(self._raw.fileno()).st_size
        except (OSError, ValueError):
            size = self._raw.tell()
        self.cut = (
            f"the {self.kind} stream ends early, at byte {size:,} of the file (its writer "
            "was stopped before it closed it)"
        )

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


class UnpackedReader(io.BufferedReader):
    """A compressed file's bytes, buffered; :attr:`cut` says where a stream that
    ended early stopped (see :class:`_Unpacked`)."""

    @property
    def cut(self) -> str | None:
        raw = self.raw
        return raw.cut if isinstance(raw, _Unpacked) else None


def stream_cut(reader: object) -> str | None:
    """Where the compressed stream ``reader`` reads (from :func:`open_maybe_gzip`)
    ended early, once read to its end; None for a whole or an uncompressed one."""
    return reader.cut if isinstance(reader, UnpackedReader) else None


def open_maybe_gzip(
    path: str | os.PathLike[str],
) -> tuple[io.BufferedReader, bool]:
    """The file's bytes, decompressed when it starts with gzip's, xz's or bzip2's magic
    bytes (whatever its name); and whether it did.

    A compressed stream cut short reads up to its cut and then ends (see
    :func:`stream_cut`). The returned reader owns the raw file: closing it closes
    both, so no descriptor is left to the garbage collector."""
    with open(path, "rb") as probe:
        kind = compression_of(probe.read(6))
    raw = open(path, "rb")  # noqa: SIM115 -- owned by the reader returned
    # Progress is counted in bytes on disk: the compressed file itself.
    _track(os.fspath(path), raw)
    if kind is None:
        return raw, False
    return UnpackedReader(_Unpacked(raw, kind)), True


_open_files: list[tuple[str, weakref.ref[io.BufferedReader]]] = []
_open_files_lock = threading.Lock()


def _track(path: str, raw: io.BufferedReader) -> None:
    """Remember a file opened for reading, by weak reference, for :func:`read_positions`."""
    with _open_files_lock:
        _open_files[:] = [(p, ref) for p, ref in _open_files if _alive(ref)]
        _open_files.append((path, weakref.ref(raw)))


def _alive(ref: weakref.ref[io.BufferedReader]) -> bool:
    f = ref()
    return f is not None and not f.closed


def read_positions() -> dict[str, int]:
    """How far into each file opened by :func:`open_maybe_gzip` and still open the
    reading has got, in bytes of the file on disk (compressed bytes for gzip), by
    path: the furthest of its open readers. Safe to call from another thread: it
    only asks each open file where it is."""
    with _open_files_lock:
        files = [(p, ref()) for p, ref in _open_files]
    positions: dict[str, int] = {}
    for path, f in files:
        if f is None:
            continue
        try:
            where = f.tell()
        except (OSError, ValueError):  # closed meanwhile
            continue
        positions[path] = max(where, positions.get(path, 0))
    return positions


_PSEUDO_FILESYSTEMS = ("/proc", "/sys")
"""Kernel pseudo-filesystems: /proc/kmsg blocks, /proc/self/pagemap never ends."""

_SPECIAL_FILES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def require_regular_file(path: str | os.PathLike[str]) -> int:
    """The size of ``path``, a regular file; :class:`UnrecognisedFormat` for anything else.

    Checked before the file is opened, because opening a FIFO waits for a writer
    forever, a device such as ``/dev/zero`` never ends, and a file under /proc or
    /sys may block (``/proc/kmsg``) or never end (``/proc/self/pagemap``). ``OSError`` when the
    path cannot be looked at (missing, no permission)."""
    real = os.path.realpath(path)
    for root in _PSEUDO_FILESYSTEMS:
        if real == root or real.startswith(root + os.sep):
            raise UnrecognisedFormat(
                f"{os.fspath(path)}: a file under {root}, not a log: the kernel makes up its "
                "contents as it is read (its size says nothing, a read may block or never "
                "end); copy what you need into a regular file first"
            )
    status = os.stat(path)
    mode = status.st_mode
    if stat.S_ISREG(mode):
        return status.st_size
    kind = next((name for test, name in _SPECIAL_FILES if test(mode)), "not a regular file")
    raise UnrecognisedFormat(f"{os.fspath(path)}: {kind}, not a file; give a log or recording file")
