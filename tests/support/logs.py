"""Reading an imported log whole, as the reader tests check it."""

from __future__ import annotations

from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import open_stream
from gputop_hints.streams import ReadCounters, StreamInfo


def read_log(path: Path, **options: object) -> tuple[list[Snapshot], StreamInfo, ReadCounters]:
    """Every snapshot of the log at ``path`` (format recognised by content, ``options``
    as open_stream takes them), with the stream's info and its counters after the pass."""
    stream = open_stream(path, **options)  # type: ignore[arg-type]
    try:
        return list(stream), stream.info, stream.counters
    finally:
        stream.close()
