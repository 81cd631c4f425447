"""Date lines between text snapshots: nvidia-smi's own, ``date``'s, and separators.

People stamp appended ``nvidia-smi`` output in many ways, and nvidia-smi
itself prints one line above its table. All of these are read:

* nvidia-smi's own line, ``Sun Jun 24 21:32:04 2018`` (often with trailing
  spaces), which is C's ``ctime`` shape;
* ``date``'s default output, 12- or 24-hour, with or without a zone:
  ``Sun May  4 11:57:03 PM EDT 2025``, ``Tue Dec  1 08:06:47 UTC 2026``;
  day-first locales, ``Sun  4 May 2025 23:57:03 BST``;
* ISO 8601 (``2025-05-04 23:57:03``, ``2025-05-04T23:57:03Z``) and
  nvidia-smi's CSV shape (``2025/05/04 23:57:03.123``);
* any of these inside a separator line (``==== Sun May  4 ... 2025 ====``).

Times without a zone, and those with a zone abbreviation other than UTC/GMT
(``EDT`` names no unique offset), are wall-clock times of the logging machine,
read as local time like every other naive stamp (see :mod:`._values`).
"""

from __future__ import annotations

import calendar
import re
import time

from gputop_hints.sources.files import _values as v

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*\.?,?"
_MON = r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
_CLOCK = r"(\d{1,2}):(\d{2}):(\d{2})(?:\.\d+)?(?:\s*([AaPp][Mm]))?"
_ZONE = r"(?:\s+([A-Z]{1,5}|[+-]\d{4}))?"

_MONTH_FIRST = re.compile(
    rf"{_DAY}\s+{_MON}\s+(\d{{1,2}}),?\s+{_CLOCK}{_ZONE}\s+(\d{{4}})", re.IGNORECASE
)
_DAY_FIRST = re.compile(
    rf"{_DAY}\s+(\d{{1,2}})\s+{_MON}\s+(\d{{4}}),?\s+{_CLOCK}{_ZONE}", re.IGNORECASE
)
_NUMERIC = re.compile(
    r"(\d{4})[-/](\d{2})[-/](\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d+)?\s*(Z|UTC|[+-]\d{2}:?\d{2})?"
)
_CTIME_ANYWHERE = re.compile(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
    r"[ \d]\d \d\d:\d\d:\d\d \d{4}"
)

MAX_DATE_LINE = 120
"""A longer line is not a date line (it may mention a date in passing)."""


def _hour24(hour: int, half: str | None) -> int:
    if half is None:
        return hour
    if not 1 <= hour <= 12:
        raise ValueError(f"hour {hour} on a 12-hour clock")
    pm = half.lower() == "pm"
    return (hour % 12) + (12 if pm else 0)


def _stamp(year: int, month: int, day: int, hh: int, mm: int, ss: int, zone: str | None) -> float:
    if zone is not None and zone.upper() in ("UTC", "GMT", "Z"):
        return float(calendar.timegm((year, month, day, hh, mm, ss, 0, 0, 0)))
    if zone is not None and zone[:1] in "+-" and zone[1:].replace(":", "").isdigit():
        digits = zone[1:].replace(":", "")
        offset = (int(digits[:2]) * 60 + int(digits[2:])) * 60 * (1 if zone[0] == "+" else -1)
        return float(calendar.timegm((year, month, day, hh, mm, ss, 0, 0, 0))) - offset
    return v.local_time(year, month, day, hh, mm, ss, None)


def parse_date(text: str) -> float | None:
    """Seconds since the epoch of the first date-and-time in ``text``; None when none."""
    found = _parse(text)
    return None if found is None else found[0]


def _parse(text: str) -> tuple[float, int] | None:
    """:func:`parse_date`, and where the time's seconds are in ``text`` when the time is
    a whole number of seconds read from them alone (-1 when not)."""
    try:
        m = _MONTH_FIRST.search(text)
        if m is not None:
            mon, day, hh, mm, ss, half, zone, year = m.groups()
            return _stamp(
                int(year),
                _MONTHS[mon[:3].lower()],
                int(day),
                _hour24(int(hh), half),
                int(mm),
                int(ss),
                zone,
            ), m.start(5)
        m = _DAY_FIRST.search(text)
        if m is not None:
            day, mon, year, hh, mm, ss, half, zone = m.groups()
            return _stamp(
                int(year),
                _MONTHS[mon[:3].lower()],
                int(day),
                _hour24(int(hh), half),
                int(mm),
                int(ss),
                zone,
            ), m.start(6)
        m = _NUMERIC.search(text)
        if m is not None:
            year, month, day, hh, mm, ss, frac, zone = m.groups()
            base = _stamp(int(year), int(month), int(day), int(hh), int(mm), int(ss), zone)
            return base + (float(frac) if frac else 0.0), -1
    except (ValueError, OverflowError, OSError):
        return None
    return None


def date_line(line: str) -> float | None:
    """The time a short line stands for, when it is a date or separator line."""
    found = _date_line(line)
    return None if found is None else found[0]


def _date_line(line: str) -> tuple[float, int] | None:
    """:func:`date_line`, and where in ``line`` its seconds are (as :func:`_parse`)."""
    if len(line) > MAX_DATE_LINE or not any(ch.isdigit() for ch in line):
        return None
    stripped = line.strip()
    if stripped[:1] in ("|", "+"):
        return None
    found = _parse(stripped)
    if found is None or found[1] < 0:
        return found
    return found[0], found[1] + len(line) - len(line.lstrip())


class TickingDate:
    """:func:`date_line` for one line redrawn again and again (a terminal's clock).

    When the line is the last one read but for the two digits of its seconds, its
    time is the last time moved by their difference -- what reading it again gives,
    as every date shape counts seconds linearly within the minute."""

    def __init__(self) -> None:
        self._stamp = 0.0
        self._at = -1
        """Where the last line's seconds are, -1 when it is not read that way; the
        line's length, what comes before and after its seconds, and their value."""
        self._length = 0
        self._head = self._tail = ""
        self._seconds = 0

    def read(self, line: str) -> float | None:
        at = self._at
        if (
            at >= 0
            and len(line) == self._length
            and line.startswith(self._head)
            and line.endswith(self._tail)
        ):
            ss = line[at : at + 2]
            if ss.isascii() and ss.isdigit():
                self._stamp += int(ss) - self._seconds
                self._seconds = int(ss)
                return self._stamp
        found = _date_line(line)
        if found is None:
            self._at = -1
            return None
        self._stamp, at = found
        self._at = at
        if at >= 0:
            self._length = len(line)
            self._head, self._tail = line[:at], line[at + 2 :]
            try:
                self._seconds = int(line[at : at + 2])
            except ValueError:
                self._at = -1  # not two digits: read the next line whole
        return self._stamp


def glued_date(line: str) -> int | None:
    """Where a date line starts inside a table line it was glued onto, else None.

    A snapshot cut short in the middle of a line and followed by the next one
    (``+-----...+--------Sat Dec 22 01:00:01 2018``) shows this shape."""
    m = _CTIME_ANYWHERE.search(line)
    if m is None or m.start() == 0:
        return None
    return m.start()


def format_time(seconds: float) -> str:
    """``2025-05-04 23:57:03`` in local time, for messages."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))
