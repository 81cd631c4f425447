"""Reading an imported log whole, as the reader tests check it."""

from __future__ import annotations

import calendar
import os
import re
import time
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import open_stream
from gputop_hints.streams import ReadCounters, StreamInfo
from tests.support.paths import FIXTURES, TRACES


def read_log(path: Path, **options: object) -> tuple[list[Snapshot], StreamInfo, ReadCounters]:
    """Every snapshot of the log at ``path`` (format recognised by content, ``options``
    as open_stream takes them), with the stream's info and its counters after the pass."""
    stream = open_stream(path, **options)  # type: ignore[arg-type]
    try:
        return list(stream), stream.info, stream.counters
    finally:
        stream.close()


def date_blocks(text: str, date: re.Pattern[str]) -> list[tuple[float, str]]:
    """``(UTC time, the text up to the next date line)`` for each ``date`` line of a log
    written by ``date; tool`` in a loop. ``date`` matches a whole ``date`` line with six
    groups: month name, day, hour, minute, second, year."""
    dates = list(date.finditer(text))
    out = []
    for i, m in enumerate(dates):
        month, day, hh, mm, ss, year = m.groups()
        stamp = calendar.timegm(
            (int(year), time.strptime(month, "%b").tm_mon, int(day), int(hh), int(mm), int(ss))
        )
        end = dates[i + 1].start() if i + 1 < len(dates) else len(text)
        out.append((float(stamp), text[m.end() : end]))
    return out


def every_log() -> list[Path]:
    """Every import fixture and every shared trace (those beside the checkout)."""
    found = [p for p in sorted((FIXTURES / "import").iterdir()) if p.name != "README.md"]
    if TRACES.is_dir():
        found += sorted(
            Path(root) / name
            for root, _dirs, names in os.walk(TRACES)
            for name in names
            if not name.endswith((".md", ".tsv"))
        )
    return found
