"""Replay times: what the header shows, and what the seek prompt accepts.

Recordings can span days, so a replayed tick is shown with its date. Times are
the viewer's local time, like the live clock (``TZ=UTC`` freezes them in tests).

No Textual here.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta

SEEK_FORMATS_TEXT = "HH:MM:SS, YYYY-mm-dd HH:MM:SS, or an offset: +10m, -30s, +1h30m"
"""The seek prompt's placeholder, and the hint in its error messages."""

_OFFSET = re.compile(r"^([+-])\s*((?:\d+(?:\.\d+)?\s*[hms]\s*)+|\d+(?:\.\d+)?)$", re.IGNORECASE)
_OFFSET_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([hms])", re.IGNORECASE)
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0}
_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{1,2}:\d{2}(?::\d{2})?)$")
_TIME_OF_DAY = re.compile(r"^\d{1,2}:\d{2}(?::\d{2})?$")


class SeekError(ValueError):
    """The seek prompt's text is not a time in the recording; the message says why."""


ELAPSED_BEFORE_S = 315532800.0
"""Times before 1980-01-01 are no wall clock (no GPU log predates CUDA): a log without
timestamps, or with an elapsed-time column, is timed in seconds since its start, and
such a time is shown as ``+0:01:05``, not as a date in 1970 (as the report does)."""


def _elapsed(timestamp: float) -> str:
    whole = max(0, round(timestamp))
    return f"+{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def date_time_text(timestamp: float) -> str:
    """``2024-11-23 12:03:04``: a replayed tick's own time, date included (``+0:01:05``
    in a log timed from its start)."""
    if timestamp < ELAPSED_BEFORE_S:
        return _elapsed(timestamp)
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def span_text(start: float, end: float | None, around: float | None = None) -> str:
    """``12:23:29 → 14:10:02``: the recording's first and last tick.

    An end (or start) on another day than ``around`` (the tick on screen) gets
    its date, so a span over midnight reads right. An unknown end (a compressed
    file not yet read to the end) is ``?``.
    """
    day = datetime.fromtimestamp(around if around is not None else start).date()

    def one(timestamp: float) -> str:
        if timestamp < ELAPSED_BEFORE_S:
            return _elapsed(timestamp)
        moment = datetime.fromtimestamp(timestamp)
        return moment.strftime("%H:%M:%S" if moment.date() == day else "%Y-%m-%d %H:%M:%S")

    return f"{one(start)} → {'?' if end is None else one(end)}"


def speed_text(speed: float) -> str:
    return f"×{speed:g}"


def parse_seek(text: str, *, position: float, start: float, end: float | None) -> float:
    """The timestamp a seek prompt's ``text`` means, or :class:`SeekError`.

    Accepts an offset from ``position`` (``+10m``, ``-30s``, ``+1h30m``, ``+90``
    for seconds; clamped to the recording), a date and time
    (``2024-11-23 12:03:04``) or a time of day (``12:03`` or ``12:03:04``; in a
    recording that spans days, the occurrence nearest ``position``). A date or
    time outside the recording is an error rather than a silent jump to an edge.
    """
    text = text.strip()
    if not text:
        raise SeekError(f"Type a time: {SEEK_FORMATS_TEXT}")
    last = math.inf if end is None else end
    offset = _OFFSET.match(text)
    if offset is not None:
        sign, amount = offset.groups()
        parts = _OFFSET_PART.findall(amount)
        seconds = sum(float(n) * _UNIT_S[u.lower()] for n, u in parts) if parts else float(amount)
        return min(last, max(start, position + (seconds if sign == "+" else -seconds)))
    whole = _DATETIME.match(text)
    if whole is not None:
        candidates = [_local(whole.group(1), whole.group(2), text)]
    elif _TIME_OF_DAY.match(text):
        first_day = datetime.fromtimestamp(start).date()
        last_day = datetime.fromtimestamp(position if end is None else max(end, position)).date()
        days = [first_day + timedelta(days=i) for i in range((last_day - first_day).days + 1)]
        candidates = [_local(day.isoformat(), text, text) for day in days]
    else:
        raise SeekError(f"Not a time: {text!r}. Use {SEEK_FORMATS_TEXT}")
    # Whole seconds on screen: 12:23:29 means the first tick even when it came at .4 s.
    inside = [t for t in candidates if math.floor(start) <= t < last + 1.0]
    if not inside:
        raise SeekError(f"{text} is outside the recording ({span_text(start, end, position)})")
    nearest = min(inside, key=lambda t: abs(t - position))
    return min(last, max(start, nearest))


def _local(day: str, clock: str, text: str) -> float:
    try:
        parsed_day = date.fromisoformat(day)
        hour, minute, second = (int(part) for part in (clock + ":0").split(":")[:3])
        moment = datetime(parsed_day.year, parsed_day.month, parsed_day.day, hour, minute, second)
    except ValueError as exc:
        raise SeekError(f"Not a time: {text!r} ({exc})") from None
    return moment.timestamp()
