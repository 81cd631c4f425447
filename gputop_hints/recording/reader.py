"""Reading recordings: :func:`open_recording` gives a :class:`RecordingStream`.

A recording opens as a :class:`~gputop_hints.streams.SnapshotStream`
(format "recording"), read lazily line by line in constant memory, plain or
gzip (told by the magic bytes, whatever the name). Decoding is
:mod:`gputop_hints.recording.format`'s; this module keeps the state the static
records build up (:class:`DecoderState`), skips and counts malformed lines, and
offers the report and replay their fast paths: raw tick arrays, and
:class:`LazyTick` with only the timestamp and GPU columns decoded.

No Textual here.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, cast

from gputop_hints.model import Snapshot
from gputop_hints.recording import fastjson
from gputop_hints.recording.format import (
    FORMAT,
    SCHEMA_VERSION,
    STACK,
    valid_tick,
)
from gputop_hints.recording.lazy import LazyTick, gpu_part
from gputop_hints.recording.state import DecoderState, RecordedStack, SeekPoint
from gputop_hints.recording.values import (
    clean_gpu_columns,
    clean_tick,
    header_problem,
    loads_line,
    record_problem,
    replaced_reason,
)
from gputop_hints.stacks import StackReading
from gputop_hints.streams import (
    GZIP_MAGIC,
    ReadCounters,
    StreamInfo,
    UnrecognisedFormat,
    compression_of,
    open_maybe_gzip,
    require_regular_file,
    stream_cut,
)

MAX_LINE_BYTES = 8 * 1024 * 1024
"""A longer line is skipped as malformed: a tick of a big machine is tens of KB, and
parsing a line costs several times its size in memory."""

MAX_STACKS = 4096
"""``stack`` lines kept per stream (a few kB each); the recorder writes at most one a
minute (sampling.stacks.AUTO_GAP_S), so this holds about three days of them. Those past
it are counted (``counters.found["stacks_left_out"]``)."""

_REMEMBERED_BAD_LINES = 100_000
"""How many bad line numbers are remembered so a second pass does not count them again."""


def looks_like_recording(first_bytes: bytes) -> bool:
    """Whether a file starting with ``first_bytes`` is a recording (plain or gzip)."""
    data = first_bytes
    if data.startswith(GZIP_MAGIC):
        try:
            data = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(data, 4096)
        except zlib.error:
            return False
    first = data.split(b"\n", 1)[0]
    return b'"format"' in first and FORMAT.encode() in first


def _compression(path: Path) -> str | None:
    """How the file is compressed (gzip, xz, bzip2), None when it is not."""
    with open(path, "rb") as f:
        return compression_of(f.read(6))


def open_binary(path: Path) -> IO[bytes]:
    """The file's bytes, gunzipped when it is gzip (by magic bytes, whatever its name)."""
    return cast(IO[bytes], open_maybe_gzip(path)[0])


def _read_header(path: Path) -> tuple[dict[str, Any] | None, int]:
    """(the header, its length in bytes with the newline); (None, 0) for an empty file.

    Raises :class:`UnrecognisedFormat` naming the file, line 1 and the key at fault."""
    try:
        with open_binary(path) as f:
            first = f.readline(1 << 20)
            blank = not first.strip() and not f.read(1 << 16).strip()
    except (OSError, EOFError, zlib.error) as exc:
        raise UnrecognisedFormat(f"{path}: not a readable recording ({exc})") from None
    if blank:
        return None, 0
    replaced = 0
    try:
        header, replaced = loads_line(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise UnrecognisedFormat(f"{path}: not a gputop-hints recording (no header line)")
    version = header.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise UnrecognisedFormat(
            f"{path}: recording schema_version {version!r} is newer than this gputop-hints "
            f"reads ({SCHEMA_VERSION}); upgrade gputop-hints"
        )
    problem = "a number that is not finite or out of range" if replaced else header_problem(header)
    if problem is not None:
        raise UnrecognisedFormat(f"{path}: line 1 (the recording header): {problem}")
    return header, len(first)


class RecordingStream:
    """A recording opened for reading: a :class:`SnapshotStream` (format "recording").

    Iterating yields Snapshots lazily in file order; :meth:`ticks` yields the raw
    tick arrays with the decoder state (the report's fast path). Malformed lines
    are skipped and counted in ``info``; a truncated last line or gzip stream
    ends the stream quietly (noted in ``info``).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        compression = _compression(self.path) if require_regular_file(self.path) > 0 else None
        self.gzip = compression is not None
        """Compressed (gzip, xz or bzip2): read from the start, never by a byte offset."""
        header, self._header_bytes = _read_header(self.path)
        self.header: dict[str, Any] = header or {}
        self.info = StreamInfo(
            path=str(self.path),
            format="recording",
            interval_s=_float_or_none(self.header.get("interval_s")),
            hostname=_str_or_none(self.header.get("hostname")),
            gpu_count=len(self.header.get("gpus", ())) if header else None,
            detail=(
                "empty file"
                if header is None
                else f"gputop-hints recording v{self.header.get('schema_version')}"
                + (f" ({compression})" if compression else "")
            ),
            header=dict(self.header),
        )
        self.counters = ReadCounters()
        """Bad lines, counted once each however many passes read them."""
        self.truncated = False
        """True once a partial last line (or an unfinished gzip stream) was met."""
        self._open: list[IO[bytes]] = []
        self._counted: set[int] = set()
        self.stacks: list[RecordedStack] = []
        """The ``stack`` lines read so far, in file order (each once, however many
        passes read it): the py-spy readings the recorder took (issue 45)."""
        self._stack_lines: set[int] = set()

    def _note(self, line_no: int, reason: str) -> None:
        """Count a bad line once, however many passes read it (the report reads the
        start twice: once for the first snapshot, once for the statistics)."""
        if line_no in self._counted:
            return
        if len(self._counted) < _REMEMBERED_BAD_LINES:
            self._counted.add(line_no)
        self.counters.note_bad_line(line_no, reason)

    def __iter__(self) -> Iterator[Snapshot]:
        for tick, state, _offset, line_no in self.ticks_with_offsets():
            try:
                snapshot = state.snapshot(tick)
            except (IndexError, KeyError, TypeError, ValueError):
                self._note(line_no, "tick line with the wrong shape")
                continue
            yield snapshot

    def ticks(self, start: object | None = None) -> Iterator[tuple[list[Any], DecoderState]]:
        """Raw tick arrays and the decoder state they decode with, in file order.

        ``start`` (a :class:`SeekPoint`, from :meth:`LazyTick.position`) resumes a
        plain file at a line boundary (see :class:`~gputop_hints.sources.replay.ReplaySource`).
        """
        for tick, state, _offset, _line in self.ticks_with_offsets(start):
            yield tick, state

    def _start(self, start: object | None) -> tuple[int, int, DecoderState]:
        if start is None:
            return self._header_bytes, 1, DecoderState.from_header(self.header)
        if not isinstance(start, SeekPoint):
            raise TypeError(f"not a position in a recording: {start!r}")
        return start.offset, start.line_no, start.state.copy()

    def _lines(self, offset: int, line_no: int) -> Iterator[tuple[bytes, int, int]]:
        """(line, its byte offset, its 1-based number) from ``offset`` on."""
        f = open_binary(self.path)
        self._open.append(f)
        try:
            if offset:
                if self.gzip:
                    _skip(f, offset)
                else:
                    f.seek(offset)
            while True:
                try:
                    line = f.readline(MAX_LINE_BYTES + 1)
                    if len(line) > MAX_LINE_BYTES:
                        line_no += 1
                        offset += len(line) + _skip_line(f)
                        self._note(line_no, f"line longer than {MAX_LINE_BYTES} bytes")
                        continue
                except (EOFError, zlib.error, OSError) as exc:
                    self.truncated = True
                    self._note(line_no + 1, f"compressed stream cut short ({exc})")
                    return
                if not line:
                    cut = stream_cut(f)
                    if cut is not None:
                        self.truncated = True
                        self.counters.found["stream_cut"] = f"{cut}: read up to line {line_no}"
                    return
                line_no += 1
                if not line.endswith(b"\n"):
                    self.truncated = True
                yield line, offset, line_no
                offset += len(line)
        finally:
            f.close()
            with contextlib.suppress(ValueError):
                self._open.remove(f)

    def _record(self, value: Any, state: DecoderState, line_no: int, replaced: int) -> DecoderState:
        """The decoder state after a non-tick line."""
        if value.__class__ is dict:
            if replaced:
                self._note(line_no, f"static record with {replaced_reason(replaced)}")
            if value.get("format") == FORMAT:
                # A header inside (concatenated rotated files): start afresh.
                problem = header_problem(value)
                if problem is not None:
                    self._note(line_no, f"header line: {problem}")
                    return state
                return DecoderState.from_header(value)
            if value.get("type") == STACK:
                self._take_stack(value, line_no)
                return state
            try:
                new = state.copy()
                new.apply(value)
            except (KeyError, TypeError, ValueError) as exc:
                self._note(line_no, f"static record with the wrong shape ({exc})")
                return state
            return new
        self._note(line_no, "neither a tick nor a record")
        return state

    def _take_stack(self, record: dict[str, Any], line_no: int) -> None:
        """Keep a ``stack`` line (once, however many passes read it), or count it bad."""
        if line_no in self._stack_lines or line_no in self._counted:
            return
        problem = record_problem(record)
        reading = None
        if problem is None:
            try:
                reading = StackReading.from_dict(record)
            except ValueError as exc:
                problem = str(exc)
        if reading is None:
            self._note(line_no, f"stack line with the wrong shape ({problem})")
            return
        self._stack_lines.add(line_no)
        if len(self.stacks) >= MAX_STACKS:
            left = self.counters.found.get("stacks_left_out", 0)
            self.counters.found["stacks_left_out"] = (left if isinstance(left, int) else 0) + 1
            return
        taken_at = float(record["taken_at"])
        self.stacks.append(RecordedStack(line_no, taken_at, record["pid"], reading))

    def _bad_json(self, line: bytes, line_no: int, exc: Exception) -> None:
        if line.strip():
            reason = "truncated last line" if not line.endswith(b"\n") else f"not JSON ({exc})"
            self._note(line_no, reason)

    def _checked_tick(self, value: list[Any], replaced: int, line_no: int) -> list[Any] | None:
        """A parsed tick array with every value usable, or None (counted) when it is not a tick."""
        if not valid_tick(value):
            self._note(line_no, "tick line with the wrong shape")
            return None
        tick, problem = clean_tick(value)
        if replaced:
            self._note(line_no, replaced_reason(replaced))
        elif problem is not None:
            self._note(line_no, f"{problem}, read as unknown" if tick is not None else problem)
        return tick

    def ticks_with_offsets(
        self, start: object | None = None
    ) -> Iterator[tuple[list[Any], DecoderState, int, int]]:
        """Like :meth:`ticks`, plus each tick line's byte offset and 1-based line number."""
        if not self.header:
            return
        offset, line_no, state = self._start(start)
        for line, here, number in self._lines(offset, line_no):
            try:
                value, replaced = loads_line(line)
            except ValueError as exc:
                self._bad_json(line, number, exc)
                continue
            if value.__class__ is list:
                tick = self._checked_tick(value, replaced, number)
                if tick is not None:
                    yield tick, state, here, number
            else:
                state = self._record(value, state, number, replaced)

    def lazy_ticks(self, start: object | None = None) -> Iterator[LazyTick]:
        """Every tick with its timestamp and GPU columns decoded, the rest on demand.

        Decoding a whole tick of a big machine costs ~0.2 ms; the GPU part alone
        a fraction of that. ``LazyTick.full()`` decodes the rest (and returns None
        for a malformed line, which it counts).
        """
        if not self.header:
            return
        offset, line_no, state = self._start(start)
        note = self._note
        for line, here, number in self._lines(offset, line_no):
            if line[:1] == b"[":
                fast = gpu_part(line)
                if fast is not None:
                    timestamp, gpus, text = fast
                    gpus, problem = clean_gpu_columns(gpus)
                    if problem is not None:
                        note(number, f"{problem}, read as unknown")
                    yield LazyTick(timestamp, gpus, text, state, number, note, here)
                    continue
                # Not in the compact form the recorder writes: the careful parse says why.
            try:
                value, replaced = loads_line(line)
            except ValueError as exc:
                self._bad_json(line, number, exc)
                continue
            if value.__class__ is not list:
                state = self._record(value, state, number, replaced)
                continue
            tick = self._checked_tick(value, replaced, number)
            if tick is not None:
                yield LazyTick(tick[0], tick[2], "", state, number, note, here, tick)

    # --- the fast paths (gputop_hints.streams.FastPaths) ----------------------

    @property
    def seekable(self) -> bool:
        """A plain file resumes at a byte offset; a gzip stream would re-read from the start."""
        return not self.gzip

    def tick_count(self) -> int:
        """How many ticks the file holds (0 without a header), without parsing them."""
        return count_ticks(self.path) if self.header else 0

    def last_timestamp(self) -> float | None:
        """The last tick's timestamp, read from the last MiB of a plain recording."""
        if self.gzip or not self.header:
            return None
        try:
            with open(self.path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(0, size - (1 << 20)))
                tail = f.read()
        except OSError:
            return None
        for line in reversed(tail.split(b"\n")):
            if line[:1] != b"[":
                continue
            try:
                value: Any = fastjson.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(value, list) and value and isinstance(value[0], int | float):
                return float(value[0])
        return None

    def close(self) -> None:
        for f in list(self._open):
            f.close()
        self._open.clear()

    def __enter__(self) -> RecordingStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _skip_line(f: IO[bytes]) -> int:
    """Read past the rest of an overlong line in bounded pieces; how many bytes that was."""
    skipped = 0
    while True:
        piece = f.readline(1 << 20)
        skipped += len(piece)
        if not piece or piece.endswith(b"\n"):
            return skipped


def _skip(f: IO[bytes], count: int) -> None:
    while count > 0:
        chunk = f.read(min(count, 1 << 20))
        if not chunk:
            return
        count -= len(chunk)


def _float_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def open_recording(path: str | os.PathLike[str]) -> RecordingStream:
    """Open a recording (plain or gzip, told by the magic bytes) as a SnapshotStream.

    Raises :class:`UnrecognisedFormat` when the file is not a recording (or is a
    newer schema than this version reads) and ``OSError`` when it cannot be
    opened. An empty file opens as a stream with no snapshots.
    """
    return RecordingStream(path)


def count_ticks(path: str | os.PathLike[str]) -> int:
    """How many lines of a recording look like ticks (a fast pre-pass, no JSON parsing).

    Reads in bounded pieces, so an overlong line costs no more memory than any other;
    a gzip stream still being written counts up to where it ends."""
    n = 0
    previous = b"\n"
    with contextlib.suppress(EOFError, zlib.error, OSError), open_binary(Path(path)) as f:
        read1 = cast(Callable[[int], bytes], f.read1)  # type: ignore[attr-defined]
        while chunk := read1(1 << 16):
            n += chunk.count(b"\n[") + (previous == b"\n" and chunk[:1] == b"[")
            previous = chunk[-1:]
    return n
