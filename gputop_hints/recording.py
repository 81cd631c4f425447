"""Recordings: ``gputop-hints record`` writes them, replay and report read them.

A recording is JSON Lines (optionally gzip-compressed when the name ends in
``.gz``), one line per event, written and flushed one tick at a time so that a
recorder killed with SIGKILL loses at most the tick it was writing:

* line 1, the **header**: an object with ``"format": "gputop-hints-recording"``,
  ``schema_version``, host and GPU facts, the sampling interval and
  ``tick_columns`` (the column order of tick lines, so a file describes itself);
* **static records**: objects with a ``"type"`` (``meta``, ``gpu``, ``process``,
  ``worker``), written only when something first appears or changes;
* **tick lines**: JSON *arrays* with the per-tick values in the documented
  column order.

The reader rebuilds every :class:`~gputop_hints.model.Snapshot` exactly (floats
are written with ``repr`` precision; non-finite floats become ``None`` as in
:func:`~gputop_hints.model.snapshot_to_dict`). The format and its compatibility
promise are documented in ``docs/recording.md``.

No Textual here.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import signal
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any, cast

from gputop_hints import __version__
from gputop_hints.model import (
    GpuProcess,
    GpuSample,
    HostSample,
    Snapshot,
    UtilizationSample,
    WorkerProcess,
)
from gputop_hints.sources import Source
from gputop_hints.sources.files.stream import StreamInfo, UnrecognisedFormat, note_bad_line

FORMAT = "gputop-hints-recording"
SCHEMA_VERSION = 1
"""Bumped on any incompatible change; readers accept every version up to their own."""

GZIP_MAGIC = b"\x1f\x8b"

# Column order of tick lines (documented in the header as ``tick_columns``).
TICK_COLUMNS: dict[str, list[str]] = {
    "tick": ["timestamp", "sample_duration_s", "gpus", "host", "processes"],
    "host": ["iowait_percent", "memory_used_bytes", "load_average", "cpu_percent_per_core"],
    "gpu": [
        "index",
        "sm_percent",
        "memory_access_percent",
        "vram_used_bytes",
        "pcie_rx_bytes_per_s",
        "pcie_tx_bytes_per_s",
        "temperature_c",
        "power_watts",
        "sm_clock_mhz",
        "throttle_reasons",
        "sm_samples",
    ],
    "process": [
        "pid",
        "gpu_index",
        "vram_bytes",
        "sm_percent",
        "memory_access_percent",
        "cpu_percent",
        "rss_bytes",
        "state",
        "workers",
    ],
    "worker": ["pid", "cpu_percent", "rss_bytes", "state"],
}
"""The GPUs come before the host so a reader can decode just them (the report's
fast path). ``sm_samples`` is flat: ``[t0, percent0, t1, percent1, ...]``; ``workers`` likewise
holds four values per worker in the ``worker`` column order."""

# Column positions, for readers that work on the arrays directly (the report).
T_TIMESTAMP, T_DURATION, T_GPUS, T_HOST, T_PROCESSES = range(5)
H_IOWAIT, H_MEMORY_USED, H_LOAD, H_CORES = range(4)
(
    G_INDEX,
    G_SM,
    G_MEM,
    G_VRAM_USED,
    G_RX,
    G_TX,
    G_TEMPERATURE,
    G_POWER,
    G_SM_CLOCK,
    G_THROTTLE,
    G_SAMPLES,
) = range(11)
P_PID, P_GPU, P_VRAM, P_SM, P_MEM, P_CPU, P_RSS, P_STATE, P_WORKERS = range(9)

GPU_STATIC_FIELDS = (
    "name",
    "uuid",
    "vram_total_bytes",
    "pcie_generation",
    "pcie_width",
    "power_limit_watts",
    "max_sm_clock_mhz",
)
PROCESS_STATIC_FIELDS = ("user", "name", "command", "create_time")
META_FIELDS = (
    "interval_s",
    "source",
    "source_detail",
    "driver_version",
    "cuda_driver_version",
    "gpu_unavailable_reason",
    "labels",
    "hostname",
    "allowed_cores",
    "memory_total_bytes",
)


def _num(value: Any) -> Any:
    """JSON has no NaN/Infinity: unknown they are."""
    if value.__class__ is float and not math.isfinite(value):
        return None
    return value


def _meta_of(snapshot: Snapshot) -> dict[str, Any]:
    host = snapshot.host
    return {
        "interval_s": snapshot.interval_s,
        "source": snapshot.source,
        "source_detail": snapshot.source_detail,
        "driver_version": snapshot.driver_version,
        "cuda_driver_version": snapshot.cuda_driver_version,
        "gpu_unavailable_reason": snapshot.gpu_unavailable_reason,
        "labels": list(snapshot.labels),
        "hostname": host.hostname,
        "allowed_cores": list(host.allowed_cores),
        "memory_total_bytes": host.memory_total_bytes,
    }


def _gpu_static(gpu: GpuSample) -> dict[str, Any]:
    return {
        "index": gpu.index,
        "name": gpu.name,
        "uuid": gpu.uuid,
        "vram_total_bytes": gpu.vram_total_bytes,
        "pcie_generation": gpu.pcie_generation,
        "pcie_width": gpu.pcie_width,
        "power_limit_watts": _num(gpu.power_limit_watts),
        "max_sm_clock_mhz": gpu.max_sm_clock_mhz,
    }


def _process_static(proc: GpuProcess) -> dict[str, Any]:
    return {
        "pid": proc.pid,
        "gpu_index": proc.gpu_index,
        "user": proc.user,
        "name": proc.name,
        "command": proc.command,
        "create_time": _num(proc.create_time),
    }


def header_for(snapshot: Snapshot, *, created: float | None = None) -> dict[str, Any]:
    """The header line describing a recording whose first tick is ``snapshot``."""
    meta = _meta_of(snapshot)
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "generator": f"gputop-hints {__version__}",
        "created": time.time() if created is None else created,
        **meta,
        "core_count": snapshot.host.core_count,
        "gpus": [_gpu_static(g) for g in snapshot.gpus],
        "tick_columns": TICK_COLUMNS,
    }


def _encode_tick(snapshot: Snapshot) -> list[Any]:
    host = snapshot.host
    la = host.load_average
    gpus = []
    for g in snapshot.gpus:
        samples: list[float] = []
        for s in g.sm_samples:
            samples.append(_num(s.timestamp))
            samples.append(_num(s.percent))
        gpus.append(
            [
                g.index,
                _num(g.sm_percent),
                _num(g.memory_access_percent),
                g.vram_used_bytes,
                _num(g.pcie_rx_bytes_per_s),
                _num(g.pcie_tx_bytes_per_s),
                _num(g.temperature_c),
                _num(g.power_watts),
                g.sm_clock_mhz,
                None if g.throttle_reasons is None else list(g.throttle_reasons),
                samples,
            ]
        )
    procs = []
    for p in snapshot.processes:
        workers: list[Any] = []
        for w in p.workers:
            workers.extend((w.pid, _num(w.cpu_percent), w.rss_bytes, w.state))
        procs.append(
            [
                p.pid,
                p.gpu_index,
                p.vram_bytes,
                _num(p.sm_percent),
                _num(p.memory_access_percent),
                _num(p.cpu_percent),
                p.rss_bytes,
                p.state,
                workers,
            ]
        )
    return [
        snapshot.timestamp,
        _num(snapshot.sample_duration_s),
        gpus,
        [
            _num(host.iowait_percent),
            host.memory_used_bytes,
            None if la is None else [_num(v) for v in la],
            [_num(v) for v in host.cpu_percent_per_core],
        ],
        procs,
    ]


_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def _open_for_writing(path: Path) -> tuple[IO[bytes], IO[bytes]]:
    """(what we write to, the raw file under it)."""
    raw = open(path, "wb")  # noqa: SIM115 -- closed by RecordingWriter.close
    if path.name.endswith(".gz"):
        # mtime=0: the same ticks give the same bytes.
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0)), raw
    return raw, raw


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
        self._out: IO[bytes] | None = None
        self._raw: IO[bytes] | None = None
        self._file_bytes = 0
        self._file_ticks = 0
        self._meta: dict[str, Any] | None = None
        self._gpus: dict[int, dict[str, Any]] = {}
        self._procs: dict[tuple[int, int], dict[str, Any]] = {}
        self._workers: dict[int, str | None] = {}
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
        lines: list[str] = []
        meta = _meta_of(snapshot)
        if meta != self._meta:
            self._meta = meta
            lines.append(_dumps({"type": "meta", **meta}))
        gpus: dict[int, dict[str, Any]] = {}
        for g in snapshot.gpus:
            static = self._gpus.get(g.index)
            if static is None or any(getattr(g, k) != static[k] for k in GPU_STATIC_FIELDS):
                static = _gpu_static(g)
                lines.append(_dumps({"type": "gpu", **static}))
            gpus[g.index] = static
        self._gpus = gpus
        procs: dict[tuple[int, int], dict[str, Any]] = {}
        workers: dict[int, str | None] = {}
        for p in snapshot.processes:
            key = (p.pid, p.gpu_index)
            pstatic = self._procs.get(key)
            if pstatic is None or any(getattr(p, k) != pstatic[k] for k in PROCESS_STATIC_FIELDS):
                pstatic = _process_static(p)
                lines.append(_dumps({"type": "process", **pstatic}))
            procs[key] = pstatic
            for w in p.workers:
                if w.pid not in workers:
                    if w.pid not in self._workers or self._workers[w.pid] != w.name:
                        lines.append(_dumps({"type": "worker", "pid": w.pid, "name": w.name}))
                    workers[w.pid] = w.name
        self._procs = procs
        self._workers = workers
        lines.append(_dumps(_encode_tick(snapshot)))
        self._emit(("\n".join(lines) + "\n").encode("utf-8"))
        self.ticks += 1
        self._file_ticks += 1

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
        self._gpus = {g["index"]: g for g in header["gpus"]}
        self._procs = {}
        self._workers = {}
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


# -- recording from a source -----------------------------------------------------


def record(
    source: Source,
    path: str | os.PathLike[str],
    *,
    interval_s: float,
    duration_s: float | None = None,
    max_bytes: int | None = None,
    keep: int = 5,
    on_tick: Callable[[Snapshot], None] | None = None,
    pace: bool = True,
    stderr: IO[str] | None = None,
) -> int:
    """Sample ``source`` every ``interval_s`` into ``path`` until stopped; return an exit code.

    Runs in the calling thread. Stops after ``duration_s`` (None: until
    SIGTERM/SIGINT, which are handled -- in the main thread -- by finishing the
    current tick and closing the file cleanly). ``pace=False`` samples a
    simulated source as fast as it goes (for generating test data). Prints one
    summary line to ``stderr`` at the end. Exit codes: 0 recorded (also when
    stopped by a signal), 1 the file could not be written.
    """
    err = sys.stderr if stderr is None else stderr
    if not interval_s > 0:
        raise ValueError("interval must be positive")
    stop = threading.Event()
    previous: dict[signal.Signals, Any] = {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
    writer = RecordingWriter(path, max_bytes=max_bytes, keep=keep)
    count = None if duration_s is None else max(1, round(duration_s / interval_s))
    started = time.monotonic()
    deadline = started
    code = 0
    try:
        while not stop.is_set() and (count is None or writer.ticks < count):
            snapshot = source.sample()
            writer.write(snapshot)
            if on_tick is not None:
                on_tick(snapshot)
            if not pace:
                continue
            deadline += interval_s
            now = time.monotonic()
            if deadline <= now:  # missed ticks are skipped, not caught up
                deadline += ((now - deadline) // interval_s + 1) * interval_s
            if count is not None and writer.ticks >= count:
                break
            stop.wait(deadline - now)
    except OSError as exc:
        print(f"gputop-hints record: cannot write {path}: {exc}", file=err)
        code = 1
    finally:
        try:
            writer.close()
        except OSError as exc:
            print(f"gputop-hints record: closing {path}: {exc}", file=err)
            code = 1
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    rotated = f", {writer.rotations} rotation(s)" if writer.rotations else ""
    print(
        f"gputop-hints record: {writer.ticks} ticks, {writer.bytes_written} bytes{rotated} "
        f"-> {path} ({time.monotonic() - started:.1f} s)",
        file=err,
    )
    return code


# -- reading -----------------------------------------------------------------------


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


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def open_binary(path: Path) -> IO[bytes]:
    """The file's bytes, gunzipped when it is gzip (by magic bytes, whatever its name)."""
    if _is_gzip(path):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return open(path, "rb")


@dataclass
class DecoderState:
    """What the static records said so far: enough to turn a tick line into a Snapshot.

    Replaced, never mutated in place, so a copy for a seek index is cheap.
    """

    meta: dict[str, Any]
    gpus: dict[int, dict[str, Any]]
    processes: dict[tuple[int, int], dict[str, Any]]
    workers: dict[int, str | None]

    def copy(self) -> DecoderState:
        return DecoderState(self.meta, dict(self.gpus), dict(self.processes), dict(self.workers))

    def apply(self, record: dict[str, Any]) -> bool:
        """Take in one static record; False when its type is unknown (ignored)."""
        kind = record.get("type")
        if kind == "meta":
            self.meta = {**self.meta, **{k: v for k, v in record.items() if k != "type"}}
        elif kind == "gpu":
            self.gpus[int(record["index"])] = record
        elif kind == "process":
            self.processes[(int(record["pid"]), int(record["gpu_index"]))] = record
        elif kind == "worker":
            self.workers[int(record["pid"])] = record.get("name")
        else:
            return False
        return True

    @classmethod
    def from_header(cls, header: dict[str, Any]) -> DecoderState:
        meta = {k: header.get(k) for k in META_FIELDS}
        gpus = {int(g["index"]): g for g in header.get("gpus", ())}
        return cls(meta, gpus, {}, {})

    def snapshot(self, tick: list[Any]) -> Snapshot:
        """Rebuild the Snapshot of a tick line."""
        meta = self.meta
        h = tick[T_HOST]
        la = h[H_LOAD]
        host = HostSample(
            hostname=meta.get("hostname") or "",
            cpu_percent_per_core=tuple(h[H_CORES]),
            allowed_cores=tuple(meta.get("allowed_cores") or ()),
            iowait_percent=h[H_IOWAIT],
            memory_used_bytes=h[H_MEMORY_USED],
            memory_total_bytes=meta.get("memory_total_bytes"),
            load_average=None if la is None else (la[0], la[1], la[2]),
        )
        gpus = []
        empty: dict[str, Any] = {}
        for g in tick[T_GPUS]:
            st = self.gpus.get(g[G_INDEX], empty)
            flat = g[G_SAMPLES]
            throttle = g[G_THROTTLE]
            gpus.append(
                GpuSample(
                    index=g[G_INDEX],
                    name=st.get("name"),
                    uuid=st.get("uuid"),
                    sm_percent=g[G_SM],
                    memory_access_percent=g[G_MEM],
                    vram_used_bytes=g[G_VRAM_USED],
                    vram_total_bytes=st.get("vram_total_bytes"),
                    pcie_rx_bytes_per_s=g[G_RX],
                    pcie_tx_bytes_per_s=g[G_TX],
                    pcie_generation=st.get("pcie_generation"),
                    pcie_width=st.get("pcie_width"),
                    temperature_c=g[G_TEMPERATURE],
                    power_watts=g[G_POWER],
                    power_limit_watts=st.get("power_limit_watts"),
                    sm_clock_mhz=g[G_SM_CLOCK],
                    max_sm_clock_mhz=st.get("max_sm_clock_mhz"),
                    throttle_reasons=None if throttle is None else tuple(throttle),
                    sm_samples=tuple(
                        UtilizationSample(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)
                    ),
                )
            )
        procs = []
        names = self.workers
        for p in tick[T_PROCESSES]:
            st = self.processes.get((p[P_PID], p[P_GPU]), empty)
            wf = p[P_WORKERS]
            procs.append(
                GpuProcess(
                    pid=p[P_PID],
                    gpu_index=p[P_GPU],
                    vram_bytes=p[P_VRAM],
                    sm_percent=p[P_SM],
                    memory_access_percent=p[P_MEM],
                    cpu_percent=p[P_CPU],
                    workers=tuple(
                        WorkerProcess(wf[i], wf[i + 1], wf[i + 2], wf[i + 3], names.get(wf[i]))
                        for i in range(0, len(wf), 4)
                    ),
                    rss_bytes=p[P_RSS],
                    state=p[P_STATE],
                    user=st.get("user"),
                    name=st.get("name"),
                    command=st.get("command") or "",
                    create_time=st.get("create_time"),
                )
            )
        return Snapshot(
            timestamp=tick[T_TIMESTAMP],
            interval_s=meta.get("interval_s") or 1.0,
            host=host,
            gpus=tuple(gpus),
            processes=tuple(procs),
            source=meta.get("source") or "live",
            source_detail=meta.get("source_detail") or "",
            driver_version=meta.get("driver_version"),
            cuda_driver_version=meta.get("cuda_driver_version"),
            gpu_unavailable_reason=meta.get("gpu_unavailable_reason"),
            sample_duration_s=tick[T_DURATION],
            labels=tuple(meta.get("labels") or ()),
        )


def _valid_tick(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) >= 5
        and isinstance(value[T_TIMESTAMP], int | float)
        and isinstance(value[T_HOST], list)
        and len(value[T_HOST]) >= 4
        and isinstance(value[T_GPUS], list)
        and isinstance(value[T_PROCESSES], list)
    )


def _read_header(path: Path) -> tuple[dict[str, Any] | None, int]:
    """(the header, its length in bytes with the newline); (None, 0) for an empty file."""
    try:
        with open_binary(path) as f:
            first = f.readline(1 << 20)
            blank = not first.strip() and not f.read(1 << 16).strip()
    except (OSError, EOFError, zlib.error) as exc:
        raise UnrecognisedFormat(f"{path}: not a readable recording ({exc})") from None
    if blank:
        return None, 0
    try:
        header = json.loads(first)
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
        self.gzip = self.path.stat().st_size > 0 and _is_gzip(self.path)
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
                + (" (gzip)" if self.gzip else "")
            ),
            header=dict(self.header),
        )
        self.truncated = False
        """True once a partial last line (or an unfinished gzip stream) was met."""
        self._open: list[IO[bytes]] = []

    def __iter__(self) -> Iterator[Snapshot]:
        for tick, state, _offset, line_no in self.ticks_with_offsets():
            try:
                snapshot = state.snapshot(tick)
            except (IndexError, KeyError, TypeError, ValueError):
                note_bad_line(self.info, line_no, "tick line with the wrong shape")
                continue
            yield snapshot

    def ticks(
        self, start: tuple[int, int, DecoderState] | None = None
    ) -> Iterator[tuple[list[Any], DecoderState]]:
        """Raw tick arrays and the decoder state they decode with, in file order.

        ``start`` = (byte offset, line number, state) resumes a plain file at a
        line boundary (see :class:`~gputop_hints.sources.replay.ReplaySource`).
        """
        for tick, state, _offset, _line in self.ticks_with_offsets(start):
            yield tick, state

    def _start(self, start: tuple[int, int, DecoderState] | None) -> tuple[int, int, DecoderState]:
        if start is None:
            return self._header_bytes, 1, DecoderState.from_header(self.header)
        return start[0], start[1], start[2].copy()

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
                    line = f.readline()
                except (EOFError, zlib.error, OSError) as exc:
                    self.truncated = True
                    note_bad_line(self.info, line_no + 1, f"compressed stream cut short ({exc})")
                    return
                if not line:
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

    def _record(self, value: Any, state: DecoderState, line_no: int) -> DecoderState:
        """The decoder state after a non-tick line."""
        if value.__class__ is dict:
            if value.get("format") == FORMAT:
                # A header inside (concatenated rotated files): start afresh.
                return DecoderState.from_header(value)
            try:
                new = state.copy()
                new.apply(value)
            except (KeyError, TypeError, ValueError):
                note_bad_line(self.info, line_no, "static record with the wrong shape")
                return state
            return new
        note_bad_line(self.info, line_no, "neither a tick nor a record")
        return state

    def _bad_json(self, line: bytes, line_no: int, exc: Exception) -> None:
        if line.strip():
            reason = "truncated last line" if not line.endswith(b"\n") else f"not JSON ({exc})"
            note_bad_line(self.info, line_no, reason)

    def ticks_with_offsets(
        self, start: tuple[int, int, DecoderState] | None = None
    ) -> Iterator[tuple[list[Any], DecoderState, int, int]]:
        """Like :meth:`ticks`, plus each tick line's byte offset and 1-based line number."""
        if not self.header:
            return
        offset, line_no, state = self._start(start)
        loads = json.loads
        for line, here, number in self._lines(offset, line_no):
            try:
                value = loads(line)
            except ValueError as exc:
                self._bad_json(line, number, exc)
                continue
            if value.__class__ is list:
                if _valid_tick(value):
                    yield value, state, here, number
                else:
                    note_bad_line(self.info, number, "tick line with the wrong shape")
            else:
                state = self._record(value, state, number)

    def lazy_ticks(self, start: tuple[int, int, DecoderState] | None = None) -> Iterator[LazyTick]:
        """Every tick with its timestamp and GPU columns decoded, the rest on demand.

        Decoding a whole tick of a big machine costs ~0.2 ms; the GPU part alone
        a fraction of that. ``LazyTick.full()`` decodes the rest (and returns None
        for a malformed line, which it counts).
        """
        if not self.header:
            return
        offset, line_no, state = self._start(start)
        raw_decode = _DECODER.raw_decode
        loads = json.loads
        for line, here, number in self._lines(offset, line_no):
            if line[:1] == b"[":
                try:
                    text = line.decode("utf-8")
                    i1 = text.index(",", 1)
                    i2 = text.index(",", i1 + 1)
                    timestamp = float(text[1:i1])
                    gpus, _end = raw_decode(text, i2 + 1)
                    if gpus.__class__ is not list or not math.isfinite(timestamp):
                        raise ValueError("wrong shape")
                    if not line.endswith(b"\n"):
                        loads(line)  # a last line without its newline may be cut short

                except (ValueError, UnicodeDecodeError) as exc:
                    self._bad_json(line, number, exc)
                    continue
                yield LazyTick(timestamp, gpus, text, state, number, self.info, here)
                continue
            try:
                value = loads(line)
            except ValueError as exc:
                self._bad_json(line, number, exc)
                continue
            state = self._record(value, state, number)

    def close(self) -> None:
        for f in list(self._open):
            f.close()
        self._open.clear()

    def __enter__(self) -> RecordingStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_DECODER = json.JSONDecoder()


@dataclass(slots=True)
class LazyTick:
    """One tick line with only its timestamp and GPU columns decoded."""

    timestamp: float
    gpus: list[Any]
    text: str
    state: DecoderState
    line_no: int
    info: StreamInfo
    offset: int = 0
    """Byte offset of the line in the (uncompressed) file."""

    def full(self) -> list[Any] | None:
        """The whole tick array, or None (counted as a bad line) if it is malformed."""
        try:
            value = json.loads(self.text)
        except ValueError as exc:
            note_bad_line(self.info, self.line_no, f"not JSON ({exc})")
            return None
        if not _valid_tick(value):
            note_bad_line(self.info, self.line_no, "tick line with the wrong shape")
            return None
        return list(value)

    def snapshot(self) -> Snapshot | None:
        tick = self.full()
        if tick is None:
            return None
        try:
            return self.state.snapshot(tick)
        except (IndexError, KeyError, TypeError, ValueError):
            note_bad_line(self.info, self.line_no, "tick line with the wrong shape")
            return None


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
    """How many lines of a recording look like ticks (a fast pre-pass, no JSON parsing)."""
    n = 0
    with contextlib.suppress(EOFError, zlib.error, OSError), open_binary(Path(path)) as f:
        for line in f:
            if line[:1] == b"[":
                n += 1
    return n
