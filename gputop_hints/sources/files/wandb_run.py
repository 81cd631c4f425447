"""Weights & Biases' binary run file, ``wandb/run-<date>-<id>/run-<id>.wandb``.

Newer W&B SDKs write no ``wandb-events.jsonl``: their system metrics are only in this
file, a LevelDB *log* of protobuf ``Record`` messages (W&B's
``wandb/sdk/internal/datastore.py``, and ``wandb/proto/wandb_internal.proto`` for the
messages). Read here by hand, without the wandb package:

* The file starts with a 7-byte header: ``:W&B``, the magic ``0xBEE1`` (little-endian)
  and version 0.
* The file is cut into 32 KiB blocks (counted from the file's first byte, the header
  included). A block holds chunks, each behind a 7-byte header: a checksum (little-
  endian uint32; W&B's is zlib's CRC-32 of the type byte and the data, not LevelDB's
  masked CRC-32C), the data's length (uint16) and its type: FULL (a whole record),
  or FIRST, MIDDLE..., LAST (a record split across blocks). Fewer than 7 bytes left
  in a block are zero padding.
* ``Record`` field 7 is ``stats`` (``StatsRecord``: 1 ``stats_type``, 0 = SYSTEM;
  2 ``timestamp``, a ``google.protobuf.Timestamp`` of 1 seconds and 2 nanos; 3
  ``item``, repeated ``StatsItem`` of 1 ``key`` and 16 ``value_json``). Field 17 is
  ``run`` (``RunRecord``, whose 13 ``host`` is the machine's name). Every other
  record (history, summary, config, console output...) is skipped.

The stats keys are the ``wandb-events.jsonl`` ones without their ``system.`` prefix
(``gpu.0.gpu``, ``cpu``): each sample is read by :class:`~.wandb.SystemRows`, the
same mapping as that file's. A key with a node label (``gpu.0.gpu/l:node-2``, a
multi-node run written to one file) is read for the first label seen only.

A damaged chunk (its checksum does not match, a length past its block, an unknown
type, a fragment without its start) or a record that is not a protobuf message is
skipped and counted, the reason naming its byte offset; reading goes on at the next
chunk whose checksum matches, else at the next block. A file cut while being written
reads up to the cut. The file is read a block at a time: constant memory.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gputop_hints.model import Snapshot
from gputop_hints.recording import fastjson
from gputop_hints.sources.files._base import ReadingStream
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._text import Head
from gputop_hints.sources.files.mapping import vram_constant
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.sources.files.wandb import (
    SystemRows,
    WandbPlan,
    describe,
    missing,
    plan_add,
    plan_interval,
)
from gputop_hints.streams import (
    METRIC_HOST_CPU,
    METRIC_MEMORY_ACCESS,
    METRIC_POWER,
    METRIC_SM,
    METRIC_TEMPERATURE,
    METRIC_VRAM,
    ReadCounters,
    StreamInfo,
    open_maybe_gzip,
    require_regular_file,
)

FORMAT = "wandb-run"
LABEL = "W&B run file"

FILE_HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
"""``:W&B``, the magic 0xBEE1 and format version 0: the first 7 bytes of every run file."""
BLOCK_BYTES = 32 * 1024
CHUNK_HEADER = struct.Struct("<IHB")
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_TYPE_CRC = {kind: zlib.crc32(bytes([kind])) for kind in (FULL, FIRST, MIDDLE, LAST)}
"""The checksum of each chunk type's byte, where a chunk's checksum starts."""

MAX_RECORD_BYTES = 16 * 1024 * 1024
"""A longer record (a huge config or table) is skipped unread: stats records are ~1 KB."""
SNIFF_BYTES = 4 * 1024 * 1024
"""How far the sniffer reads for the first samples (config and console output come first)."""
SNIFF_SAMPLES = 30

_RECORD_STATS = 7
_RECORD_RUN = 17
_RUN_HOST = 13
_STATS_SYSTEM = 0
_LABEL_SEP = "/l:"

BadChunk = Callable[[int, str], None]
"""(the chunk's ordinal, 1-based; the reason) -> None."""


class _Bytes(Protocol):
    """A binary file, or a decompressing reader of one."""

    def read(self, size: int, /) -> bytes: ...


class _Malformed(ValueError):
    """Bytes that are not the protobuf message they should be."""


def has_file_header(path: Path) -> bool:
    """Whether ``path`` starts with a W&B run file's header (also gzip-compressed)."""
    try:
        reader, _ = open_maybe_gzip(path)
    except OSError:
        return False
    try:
        with reader:
            return reader.read(len(FILE_HEADER)) == FILE_HEADER
    except (OSError, EOFError, zlib.error):
        return False


# -- protobuf wire format: varints and length-delimited fields --------------------


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise _Malformed("a varint runs past the end")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise _Malformed("a varint longer than 10 bytes")


def _fields(buf: memoryview) -> Iterator[tuple[int, int | memoryview]]:
    """(field number, value) of each field: an int for a varint, the bytes of a
    length-delimited field; fixed-width fields are skipped."""
    pos = 0
    end = len(buf)
    while pos < end:
        tag, pos = _varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise _Malformed("field number 0")
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > end:
                raise _Malformed(f"field {number} runs past the end")
            yield number, buf[pos : pos + size]
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            if pos > end:
                raise _Malformed(f"field {number} runs past the end")
        else:
            raise _Malformed(f"wire type {wire} in field {number}")


def _text(value: int | memoryview) -> str:
    if isinstance(value, int):
        raise _Malformed("a number where text should be")
    return bytes(value).decode("utf-8", errors="replace")


def _message(value: int | memoryview) -> memoryview:
    if isinstance(value, int):
        raise _Malformed("a number where a message should be")
    return value


@dataclass
class _Labels:
    """The node label read (the first seen) and how many samples of others were left."""

    chosen: str | None = None
    others: set[str] = field(default_factory=set)


def _sample(stats: memoryview, labels: _Labels) -> dict[str, object] | None:
    """A ``StatsRecord`` as a ``wandb-events.jsonl`` line would hold it (``system.``
    keys, ``_timestamp``); None for a stats record that is not system metrics."""
    sample: dict[str, object] = {}
    for number, value in _fields(stats):
        if number == 1 and value != _STATS_SYSTEM:
            return None
        if number == 2:
            seconds = nanos = 0
            for part, x in _fields(_message(value)):
                if part == 1 and isinstance(x, int):
                    seconds = x
                elif part == 2 and isinstance(x, int):
                    nanos = x
            sample["_timestamp"] = seconds + nanos / 1e9
        elif number == 3:
            key, value_json = _item(bytes(_message(value)))
            if key is None or value_json is None:
                continue
            key, _, label = key.partition(_LABEL_SEP)
            if label:
                if labels.chosen is None:
                    labels.chosen = label
                if label != labels.chosen:
                    labels.others.add(label)
                    continue
            number_or_json = _value(value_json)
            if number_or_json is not None:
                sample[key if key.startswith("system.") else f"system.{key}"] = number_or_json
    return sample


def _item(item: bytes) -> tuple[str | None, str | None]:
    """A ``StatsItem``'s key and value_json. W&B writes them as ``0x0A`` len key
    ``0x82 0x01`` len value: that layout with lengths under 128 is read directly (a
    third of the reader's time otherwise), anything else field by field."""
    if len(item) > 5 and item[0] == 0x0A and item[1] < 0x80:
        at = 2 + item[1]
        if item[at : at + 2] == b"\x82\x01" and at + 3 + item[at + 2] == len(item):
            return (
                item[2:at].decode("utf-8", errors="replace"),
                item[at + 3 :].decode("utf-8", errors="replace"),
            )
    key = value_json = None
    for part, x in _fields(memoryview(item)):
        if part == 1:
            key = _text(x)
        elif part == 16:
            value_json = _text(x)
    return key, value_json


def _value(value_json: str) -> object:
    """A JSON value; a number (nearly all of them) without the json module's cost."""
    try:
        return float(value_json)
    except ValueError:
        pass
    try:
        return fastjson.loads(value_json)
    except (ValueError, RecursionError):
        return None


def _host(run: memoryview) -> str | None:
    for number, value in _fields(run):
        if number == _RUN_HOST:
            return _text(value) or None
    return None


# -- the LevelDB log: blocks, chunks, records -------------------------------------


def records(reader: _Bytes, bad: BadChunk) -> Iterator[tuple[int, int, memoryview]]:
    """(ordinal of its first chunk, byte offset, data) of each whole record, reading a
    block at a time; damaged chunks and records cut short are passed to ``bad``."""
    ordinal = 0
    pending: list[bytes] | None = None
    pending_at = 0
    pending_bytes = 0
    block_at = 0
    first = True
    while True:
        block = reader.read(BLOCK_BYTES)
        if not block:
            break
        pos = 0
        if first:
            first = False
            if block[: len(FILE_HEADER)] != FILE_HEADER:
                bad(1, "byte 0: not a W&B run file header")
                return
            pos = len(FILE_HEADER)
        while pos + CHUNK_HEADER.size <= len(block):
            checksum, length, kind = CHUNK_HEADER.unpack_from(block, pos)
            at = block_at + pos
            if checksum == 0 and length == 0 and kind == 0:
                # Zeros: the writer pre-allocated or padded the rest of the block.
                break
            ordinal += 1
            start = pos + CHUNK_HEADER.size
            end = start + length
            if end > len(block):
                if len(block) < BLOCK_BYTES:
                    bad(ordinal, f"byte {at}: the file ends inside this record (cut while written)")
                    return
                bad(ordinal, f"byte {at}: a chunk of {length} bytes runs past its 32 KiB block")
                pending = None
                break
            data = memoryview(block)[start:end]
            crc = _TYPE_CRC.get(kind)
            if crc is None or zlib.crc32(data, crc) != checksum:
                why = "checksum mismatch" if crc is not None else f"unknown chunk type {kind}"
                if pending is not None:
                    why += "; the record it continues is dropped"
                    pending = None
                if _chunk_ok(block, end):
                    bad(ordinal, f"byte {at}: {why}")
                    pos = end
                    continue
                bad(ordinal, f"byte {at}: {why}; the rest of its block skipped")
                break
            pos = end
            if kind in (FULL, FIRST):
                if pending is not None:
                    bad(ordinal, f"byte {pending_at}: a record without its end")
                if kind == FULL:
                    pending = None
                    yield ordinal, at, data
                else:
                    pending, pending_at, pending_bytes = [bytes(data)], at, length
                continue
            if pending is None:
                bad(ordinal, f"byte {at}: the rest of a record whose start is lost")
                continue
            pending_bytes += length
            if pending_bytes > MAX_RECORD_BYTES:
                pending = []  # skipped unread; its end still closes it
            elif pending:
                pending.append(bytes(data))
            if kind == LAST:
                whole = b"".join(pending)
                pending = None
                if whole:
                    yield ordinal, pending_at, memoryview(whole)
        if len(block) < BLOCK_BYTES:
            tail = block[pos:]
            if tail.strip(b"\x00"):
                bad(ordinal + 1, f"byte {block_at + pos}: the file ends inside a chunk header")
            break
        block_at += len(block)
    if pending is not None:
        bad(ordinal, f"byte {pending_at}: the file ends inside this record (cut while written)")


def _chunk_ok(block: bytes, pos: int) -> bool:
    """Whether a good chunk (or the block's end) follows at ``pos``: the length of a
    chunk with a bad checksum can be trusted only so."""
    if pos + CHUNK_HEADER.size > len(block):
        return pos <= len(block) and not block[pos:].strip(b"\x00")
    checksum, length, kind = CHUNK_HEADER.unpack_from(block, pos)
    if checksum == 0 and length == 0 and kind == 0:
        return True
    start = pos + CHUNK_HEADER.size
    crc = _TYPE_CRC.get(kind)
    return (
        crc is not None
        and start + length <= len(block)
        and zlib.crc32(block[start : start + length], crc) == checksum
    )


def _samples(
    reader: _Bytes, bad: BadChunk, labels: _Labels, host: list[str]
) -> Iterator[tuple[int, dict[str, object]]]:
    """(ordinal, sample) of each system-metrics record; the run's host into ``host``."""
    for ordinal, at, data in records(reader, bad):
        sample = _record(data, labels, host)
        if isinstance(sample, str):
            bad(ordinal, f"byte {at}: not a W&B record ({sample})")
        elif sample is not None:
            yield ordinal, sample


def _record(data: memoryview, labels: _Labels, host: list[str]) -> dict[str, object] | str | None:
    """The sample of a stats record; None for any other record (a run record's host
    into ``host``); why, for bytes that are not a protobuf ``Record``."""
    try:
        for number, value in _fields(data):
            if number == _RECORD_STATS:
                return _sample(_message(value), labels)
            if number == _RECORD_RUN and not host:
                name = _host(_message(value))
                if name is not None:
                    host.append(name)
    except _Malformed as err:
        return str(err)
    return None


# -- the format ---------------------------------------------------------------------


@dataclass
class WandbRunPlan:
    path: Path
    samples: WandbPlan
    host: str | None
    labels: _Labels
    bad_in_head: int


def sniff(head: Head, mapping: Mapping[str, str] | None) -> WandbRunPlan | str:
    if not has_file_header(head.path):
        return "no W&B run file header (':W&B', 0xBEE1)"
    plan = WandbPlan(0)
    labels = _Labels()
    host: list[str] = []
    bad: list[str] = []
    reader, _ = open_maybe_gzip(head.path)
    with reader:
        limited = _Limited(reader, SNIFF_BYTES)
        for n, (_ordinal, sample) in enumerate(
            _samples(limited, lambda _n, why: bad.append(why), labels, host), start=1
        ):
            plan_add(plan, sample)
            if n >= SNIFF_SAMPLES:
                break
    return WandbRunPlan(head.path, plan, host[0] if host else None, labels, len(bad))


class _Limited:
    """The first ``limit`` bytes of a reader, for the sniffer."""

    def __init__(self, reader: _Bytes, limit: int) -> None:
        self._reader = reader
        self._left = limit

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        data = self._reader.read(min(size, self._left) if size >= 0 else self._left)
        self._left -= len(data)
        return data


def read(
    path: Path,
    counters: ReadCounters,
    interval: float,
    detail: str,
    vram_total: int | None,
) -> Generator[Snapshot]:
    rows = SystemRows(counters, interval, detail, vram_total)
    labels = _Labels()
    reader, _ = open_maybe_gzip(path)
    with reader:
        for _ordinal, sample in _samples(reader, counters.note_bad_line, labels, []):
            snapshot = rows.snapshot(sample)
            if snapshot is not None:
                yield snapshot
    if labels.others:
        counters.found["wandb_node_labels_skipped"] = sorted(labels.others)


class WandbRunStream(ReadingStream):
    """The snapshots of a run file's system-metrics records; each ``iter()`` reads the
    file again from the start."""

    def __init__(self, path: Path, info: StreamInfo, vram_total: int | None) -> None:
        super().__init__(info)
        self.path = path
        self._vram_total = vram_total

    def _read(self) -> Generator[Snapshot, None, None]:
        return read(
            self.path,
            self.counters,
            self.info.interval_s or 15.0,
            f"{LABEL}: {self.path.name}",
            self._vram_total,
        )


def open_wandb_run(
    path: Path, plan: WandbRunPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> WandbRunStream:
    """The stream of a ``run-<id>.wandb``: one snapshot per system-metrics record."""
    require_regular_file(path)
    samples = plan.samples
    notes = [f"W&B run file (.wandb), {samples.gpu_count} GPU(s)"]
    if not samples.times:
        notes.append(
            f"no system metrics in its first {SNIFF_BYTES // 2**20} MiB: "
            "GPU count and missing metrics unknown"
        )
    vram_total = vram_constant(mapping)
    interval = choose_interval(plan_interval(samples), interval_s, notes, bool(samples.times))
    describe(samples, vram_total, notes)
    if plan.labels.chosen is not None:
        notes.append(
            f"node label {plan.labels.chosen!r} read; other nodes' metrics in this file "
            "are skipped (header['wandb_node_labels_skipped'])"
        )
    info = StreamInfo(
        path=str(path),
        format=FORMAT,
        interval_s=interval,
        hostname=plan.host,
        gpu_count=samples.gpu_count,
        missing=missing(samples, vram_total is not None),
        detail="; ".join(notes),
        header={},
    )
    return WandbRunStream(path, info, vram_total)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_wandb_run,
    metrics=frozenset(
        {
            METRIC_SM,
            METRIC_MEMORY_ACCESS,
            METRIC_VRAM,
            METRIC_TEMPERATURE,
            METRIC_POWER,
            METRIC_HOST_CPU,
        }
    ),
    docs="Weights & Biases run files (.wandb)",
)
