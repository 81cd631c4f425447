"""Where a recording reader stands: the static records in force (:class:`DecoderState`)
and a place to resume reading (:class:`SeekPoint`, what a seek index holds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gputop_hints.model import Snapshot
from gputop_hints.recording.format import META_FIELDS, STACK, decode_tick
from gputop_hints.recording.values import record_problem
from gputop_hints.stacks import StackReading


@dataclass(frozen=True)
class RecordedStack:
    """A ``stack`` line (format.STACK) as read: where it is, when it was taken, whose, and
    the reading (``StackReading.from_dict``, every key's type checked)."""

    line_no: int
    taken_at: float
    pid: int
    reading: StackReading


@dataclass(frozen=True)
class SeekPoint:
    """A place to resume reading a recording: a line's byte offset and number, and
    the static records in force there (a seek index holds these)."""

    offset: int
    line_no: int
    state: DecoderState


@dataclass
class DecoderState:
    """What the static records said so far: enough to turn a tick line into a Snapshot.

    Replaced, never mutated in place, so a copy for a seek index is cheap.
    """

    meta: dict[str, Any]
    gpus: dict[int, dict[str, Any]]
    processes: dict[tuple[int, int], dict[str, Any]]
    workers: dict[int, tuple[str | None, str | None]]
    """Worker pid -> (name, command line): the ``worker`` records in force."""
    launchers: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Launcher pid -> its ``launcher`` record (none in files that predate them)."""

    def copy(self) -> DecoderState:
        return DecoderState(
            self.meta,
            dict(self.gpus),
            dict(self.processes),
            dict(self.workers),
            dict(self.launchers),
        )

    def apply(self, record: dict[str, Any]) -> bool:
        """Take in one static record; False when its type is unknown (ignored).

        Raises ValueError, naming the key, for a record with values of the wrong type."""
        problem = record_problem(record)
        if problem is not None:
            raise ValueError(problem)
        kind = record.get("type")
        if kind == "meta":
            self.meta = {**self.meta, **{k: v for k, v in record.items() if k != "type"}}
        elif kind == "gpu":
            self.gpus[int(record["index"])] = record
        elif kind == "process":
            self.processes[(int(record["pid"]), int(record["gpu_index"]))] = record
        elif kind == "worker":
            self.workers[int(record["pid"])] = (record.get("name"), record.get("command"))
        elif kind == "launcher":
            self.launchers[int(record["pid"])] = record
        elif kind == STACK:
            pass  # an event, not a record in force: the stream hands it on (reader.py)
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
        return decode_tick(tick, self.meta, self.gpus, self.processes, self.workers, self.launchers)
