"""The report's and replay's fast path through a recording: :class:`LazyTick`, a tick
line with only its timestamp and GPU columns decoded, the rest decoded on demand."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gputop_hints.model import GpuSample, Snapshot
from gputop_hints.recording import fastjson
from gputop_hints.recording.format import G_INDEX, decode_gpu, valid_tick
from gputop_hints.recording.state import DecoderState, SeekPoint
from gputop_hints.recording.values import clean_tick, loads_line, suspect, suspect_text

_NO_STATIC: dict[str, Any] = {}

_DECODER = json.JSONDecoder()


def gpu_part(line: bytes) -> tuple[float, list[Any], str] | None:
    """(timestamp, GPU columns, the line as text) of a tick line in the recorder's
    compact form, decoding nothing else; None for any other form, a bad line, or a
    GPU part holding a number that must be read carefully (:func:`suspect_text`;
    the rest of the line is checked when it is decoded in full)."""
    try:
        text = line.decode("utf-8")
        i1 = text.index(",", 1)
        i2 = text.index(",", i1 + 1)
        timestamp = float(text[1:i1])
        if not math.isfinite(timestamp):
            return None
        gpus, end = _DECODER.raw_decode(text, i2 + 1)
        # An ASCII line (as the recorder writes) has the same offsets in bytes and text:
        # its GPU part is checked without encoding it again.
        part = line[i2 + 1 : end] if len(text) == len(line) else None
        if suspect(part) if part is not None else suspect_text(text[i2 + 1 : end]):
            return None  # a number to read carefully: the full parse does
        if not line.endswith(b"\n"):
            fastjson.loads(line)  # a last line without its newline may be cut short
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if gpus.__class__ is not list:
        return None
    return timestamp, gpus, text


@dataclass(slots=True)
class LazyTick:
    """One tick line with only its timestamp and GPU columns decoded."""

    timestamp: float
    gpus: list[Any]
    text: str
    """The line, when only its GPU part is decoded yet ("" once ``tick`` is set)."""
    state: DecoderState
    line_no: int
    note: Callable[[int, str], None]
    """Counts a bad line (once, however often it is decoded)."""
    offset: int = 0
    """Byte offset of the line in the (uncompressed) file."""
    tick: list[Any] | None = None
    """The whole tick, checked, when the line was already decoded in full."""

    def full(self) -> list[Any] | None:
        """The whole tick array, or None (counted as a bad line) if it is malformed.

        Values of the wrong type or out of range come back as None (counted)."""
        if self.tick is not None:
            return list(self.tick)
        try:
            value, _replaced = loads_line(self.text)
        except ValueError as exc:
            self.note(self.line_no, f"not JSON ({exc})")
            return None
        if not valid_tick(value):
            self.note(self.line_no, "tick line with the wrong shape")
            return None
        tick, problem = clean_tick(value)
        if problem is not None:
            self.note(self.line_no, f"{problem}, read as unknown" if tick is not None else problem)
        return None if tick is None else list(tick)

    def gpu_samples(self) -> tuple[GpuSample, ...]:
        """The GPU columns as GpuSamples, named and sized from the static records in
        force (raises IndexError, KeyError, TypeError or ValueError when malformed)."""
        static = self.state.gpus
        return tuple(decode_gpu(g, static.get(g[G_INDEX], _NO_STATIC)) for g in self.gpus)

    def position(self) -> SeekPoint:
        """Where this tick's line starts, with a copy of the decoder state there."""
        return SeekPoint(self.offset, self.line_no - 1, self.state.copy())

    def snapshot(self) -> Snapshot | None:
        tick = self.full()
        if tick is None:
            return None
        try:
            return self.state.snapshot(tick)
        except (IndexError, KeyError, TypeError, ValueError):
            self.note(self.line_no, "tick line with the wrong shape")
            return None
