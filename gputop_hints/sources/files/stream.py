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

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

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
    Snapshot,
)

# The metric vocabulary lives in the model (the rules name what they need in it);
# it is re-exported here for the readers that fill StreamInfo.missing.
__all__ = [
    "ALL_METRICS",
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
    "SnapshotStream",
    "StreamInfo",
    "UnrecognisedFormat",
    "note_bad_line",
    "require_regular_file",
]


@dataclass
class StreamInfo:
    """What a file is, as far as it could be told, and what it does not contain."""

    path: str
    format: str
    """"recording", "nvidia-smi-csv", "nvidia-smi-dmon", "wandb", "csv"."""
    interval_s: float | None = None
    """The nominal sampling interval (from the header, or the median spacing)."""
    hostname: str | None = None
    gpu_count: int | None = None
    missing: tuple[str, ...] = ()
    """Metrics (see ALL_METRICS) the file does not contain at all."""
    detail: str = ""
    """Human note, e.g. "nvidia-smi CSV with header and units, 8 columns"."""
    header: dict[str, object] = field(default_factory=dict)
    """Format-specific metadata (a recording's header line, the CSV column map...)."""
    bad_lines: int = 0
    """Malformed lines skipped so far (updated while the stream is read)."""
    first_bad_line: int | None = None
    """1-based line number of the first malformed line, for the message."""
    first_bad_reason: str | None = None


class SnapshotStream(Protocol):
    """An iterable of snapshots from a file, with what is known about the file."""

    info: StreamInfo

    def __iter__(self) -> Iterator[Snapshot]: ...

    def close(self) -> None: ...


class UnrecognisedFormat(ValueError):
    """No importer accepted the file; the message lists what was tried and why each failed."""


def note_bad_line(info: StreamInfo, line_number: int, reason: str) -> None:
    """Count a malformed line; remember the first one for the message."""
    info.bad_lines += 1
    if info.first_bad_line is None:
        info.first_bad_line = line_number
        info.first_bad_reason = reason


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
    forever and a device such as ``/dev/zero`` never ends. ``OSError`` when the
    path cannot be looked at (missing, no permission)."""
    status = os.stat(path)
    mode = status.st_mode
    if stat.S_ISREG(mode):
        return status.st_size
    kind = next((name for test, name in _SPECIAL_FILES if test(mode)), "not a regular file")
    raise UnrecognisedFormat(f"{os.fspath(path)}: {kind}, not a file; give a log or recording file")
