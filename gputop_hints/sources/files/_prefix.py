"""Line prefixes a log picked up on its way to the file: time stamps and journal fields.

``nvidia-smi ... | ts >> gpu.log`` (moreutils) puts ``May 01 10:00:00`` before every
line; ``ts '[%Y-%m-%d %H:%M:%S]'`` a bracketed stamp; a systemd unit's output read back
with ``journalctl`` carries ``May 01 10:00:00 host unit[123]:``; a Python ``logging``
wrapper ``2024-05-01 10:00:00,123 INFO``. The log under them is one of the formats we
read. :func:`find_prefix` looks for one such prefix on the first line and (nearly)
every other line of the head; the readers then see each line without it (and when no
format reads the lines so, the file is tried as it is).
The prefix's own time is not used: the format's own timestamps (or ``--interval``)
time the samples, as without the prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_HMS = r"\d\d:\d\d:\d\d(?:[.,]\d+)?"
_ISO = rf"\d{{4}}-\d\d-\d\d[T ]{_HMS}(?:Z|[+-]\d\d:?\d\d)?"
_LEVEL = r"(?:(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s*(?:[-|:]\s*)?)?"


@dataclass(frozen=True, slots=True)
class LinePrefix:
    label: str
    """What wrote it, for the detail line."""
    pattern: re.Pattern[str]
    """Matches the prefix at the start of a line (and the blanks after it)."""

    note: str = "each line after it, taken off (its times are not used)"
    """What the detail line says of the reading."""

    def strip(self, line: str) -> str:
        m = self.pattern.match(line)
        return line if m is None else line[m.end() :]

    def lines(self, numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
        """The lines as the readers see them: each without the prefix."""
        strip = self.strip
        return ((number, strip(text)) for number, text in numbered)


class LineView(Protocol):
    """How the readers see a log's lines: :class:`LinePrefix` (a prefix taken off each
    line) or ``_date_blocks.DateBlocks`` (rows timed by date lines between them)."""

    @property
    def label(self) -> str: ...
    @property
    def note(self) -> str: ...

    def lines(self, numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]: ...


PREFIXES: tuple[LinePrefix, ...] = (
    LinePrefix(
        "journalctl (date, host, unit)",
        re.compile(rf"{_MONTH} [ \d]\d {_HMS} \S+ [A-Za-z_(][^\s:\[]*(?:\[\d+\])?: ?"),
    ),
    LinePrefix("ts (moreutils) time stamps", re.compile(rf"{_MONTH} [ \d]\d {_HMS} ")),
    LinePrefix(
        "bracketed time stamps",
        re.compile(r"\[(?=[^\]\n]{0,40}\d:\d\d)[^\]\n]{4,40}\] ?" + _LEVEL),
    ),
    LinePrefix(
        "ISO time stamps (a logging wrapper)",
        re.compile(rf"{_ISO}(?:\s+[-|:])?\s+{_LEVEL}"),
    ),
    LinePrefix("elapsed time stamps (ts -s)", re.compile(rf"{_HMS} ")),
)

MIN_LINES = 3
"""A prefix seen on fewer lines of the head proves nothing."""
SHARE = 0.9
"""The share of the head's nonblank lines that must carry it (a line or two may not:
a wrapped line, a message of the wrapper's own)."""


def find_prefix(lines: Sequence[str]) -> LinePrefix | None:
    """The first of :data:`PREFIXES` on the first and (nearly) every other nonblank
    line, or None. The first line must carry it: a pipe stamps every line it passes,
    the header first, while a log's own time column (``dmon -o T``, a CSV of ISO
    times) starts below a header that has none."""
    nonblank = [line for line in lines if line.strip()]
    if len(nonblank) < MIN_LINES:
        return None
    for prefix in PREFIXES:
        match = prefix.pattern.match
        if match(nonblank[0]) is None:
            continue
        hits = sum(1 for line in nonblank if match(line))
        if hits >= SHARE * len(nonblank):
            return prefix
    return None
