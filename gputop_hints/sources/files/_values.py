"""Parsing one cell of a log: numbers with units, unknown markers, timestamps.

Time zones: a timestamp without a zone (nvidia-smi's ``2024/11/23 12:23:29.950``,
dmon's ``20241123 12:23:29``, a naive ISO string) is wall-clock time of the
machine that wrote the log, which the file does not name. We read it as local
time of the machine doing the import -- right when you replay on the machine
(or in the time zone) that recorded it -- and honour ``TZ`` (``TZ=UTC
gputop-hints ...`` reads it as UTC). Epoch numbers and ISO strings with an
offset (``Z``, ``+02:00``) are absolute and need no guess.
"""

from __future__ import annotations

import math
import re
import time
from datetime import datetime

UNKNOWN_MARKERS = frozenset(
    {
        "",
        "-",
        "--",
        "n/a",
        "[n/a]",
        "na",
        "nan",
        "none",
        "null",
        "[not supported]",
        "not supported",
        "[unknown error]",
        "[insufficient permissions]",
        "[gpu is lost]",
        "[gpu requires reset]",
        "err!",
        "unknown",
    }
)

# Bytes per unit. "MB"/"GB" in GPU logs almost always mean MiB/GiB: nvidia-smi and
# NVML count VRAM in binary units and people copy the label loosely.
BYTE_UNITS: dict[str, float] = {
    "b": 1.0,
    "byte": 1.0,
    "bytes": 1.0,
    "kib": 2.0**10,
    "kb": 2.0**10,
    "k": 2.0**10,
    "mib": 2.0**20,
    "mb": 2.0**20,
    "m": 2.0**20,
    "gib": 2.0**30,
    "gb": 2.0**30,
    "g": 2.0**30,
    "tib": 2.0**40,
    "tb": 2.0**40,
}
RATE_UNITS: dict[str, float] = {f"{k}/s": v for k, v in BYTE_UNITS.items()} | {
    "kbps": 2.0**10,
    "mbps": 2.0**20,
}

_NUMBER_RE = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z%/]*)\s*$")
NVSMI_TIME_RE = re.compile(r"^\s*(\d{4})/(\d{2})/(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d+)?\s*$")
ISO_TIME_RE = re.compile(
    r"^\s*(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s*"
    r"(Z|[+-]\d{2}:?\d{2})?\s*$"
)
_DMON_DATE_RE = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_YMD_RE = re.compile(r"^(\d{4})([-/.])(\d{1,2})\2(\d{1,2})$")
"""A year-first calendar date in a column of its own ('2024-01-15', '2024/01/15'),
a script's ``Date`` beside its ``Time`` of day."""
_DMY_RE = re.compile(r"^(\d{1,2})([-/.])(\d{1,2})\2(\d{4})$")
"""A date written year last ('04-03-2021', '4/3/2021'): day or month first."""
_HMS_RE = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(\.\d+)?$")


class CellError(ValueError):
    """A cell that should hold a value does not."""


def is_unknown(cell: str) -> bool:
    return cell.strip().strip('"').strip().lower() in UNKNOWN_MARKERS


_UNIT_SHAPES: dict[str, bool] = {}
"""Unit texts seen by :func:`number`'s fast path, and whether each is letters, % and /
(a log has a handful: "%", "MiB", "W", "MHz")."""


def number(cell: str) -> tuple[float, str] | None:
    """'92 %' -> (92.0, '%'); '[N/A]' -> None; garbage -> CellError."""
    text = cell.strip().strip('"')
    # Fast paths: "92" and "92 %" (nvidia-smi's own shapes).
    head, _, unit = text.rpartition(" ")
    try:
        value = float(head or unit)
    except ValueError:
        pass
    else:
        if math.isfinite(value) and "_" not in text:
            if not head:
                return value, ""
            ok = _UNIT_SHAPES.get(unit)
            if ok is None:
                ok = unit.isascii() and all(ch.isalpha() or ch in "%/" for ch in unit)
                if len(_UNIT_SHAPES) < 256:
                    _UNIT_SHAPES[unit] = ok
            if ok:
                return value, unit
    if text.strip().lower() in UNKNOWN_MARKERS:
        return None
    match = _NUMBER_RE.match(text)
    if match is None:
        raise CellError(f"not a number: {text[:40]!r}")
    value = float(match.group(1))
    if not math.isfinite(value):
        raise CellError(f"not a finite number: {text[:40]!r}")
    return value, match.group(2)


def percent(cell: str) -> float | None:
    parsed = number(cell)
    if parsed is None:
        return None
    value, unit = parsed
    if unit not in ("", "%"):
        raise CellError(f"expected a percentage, got unit {unit!r}")
    if not 0.0 <= value <= 100.0:
        raise CellError(f"percentage {value:g} outside 0-100")
    return value


def _scaled(cell: str, default_scale: float, units: dict[str, float], what: str) -> float | None:
    """A non-negative number with an optional unit from ``units``, in base units."""
    parsed = number(cell)
    if parsed is None:
        return None
    value, unit = parsed
    scale = default_scale
    if unit:
        found = units.get(unit.lower())
        if found is None:
            raise CellError(f"unknown {what} unit {unit!r}")
        scale = found
    if value < 0:
        raise CellError(f"negative {what} {value:g}")
    return value * scale


def byte_count(cell: str, default_scale: float) -> int | None:
    result = _scaled(cell, default_scale, BYTE_UNITS, "size")
    if result is None:
        return None
    if result > 2.0**60:
        raise CellError(f"implausible size {cell.strip()!r}")
    return round(result)


def rate(cell: str, default_scale: float) -> float | None:
    return _scaled(cell, default_scale, RATE_UNITS, "rate")


def plain(cell: str, units: tuple[str, ...], low: float, high: float) -> float | None:
    """A number in a fixed unit (W, C, MHz...) within [low, high]."""
    parsed = number(cell)
    if parsed is None:
        return None
    value, unit = parsed
    if unit and unit.lower() not in units:
        raise CellError(f"unexpected unit {unit!r}")
    if not low <= value <= high:
        raise CellError(f"value {value:g} outside {low:g}-{high:g}")
    return value


def integer(cell: str, low: int, high: int) -> int | None:
    value = plain(cell, (), low, high)
    if value is None:
        return None
    if value != int(value):
        raise CellError(f"not an integer: {cell.strip()[:40]!r}")
    return int(value)


def text(cell: str) -> str | None:
    value = cell.strip().strip('"').strip()
    if value.lower() in UNKNOWN_MARKERS:
        return None
    return value


_MINUTES: dict[tuple[int, int, int, int, int], float] = {}
"""local_time's start of each minute seen lately (``time.mktime`` is slow next to a dict)."""
_MINUTES_ZONE: list[object] = [None]
"""The ``time.tzname`` the cache is for: ``time.tzset()`` with another ``TZ`` empties it."""


def local_time(year: int, month: int, day: int, h: int, m: int, s: int, frac: str | None) -> float:
    """A wall-clock time of the logging machine, read in the local zone (``TZ``)."""
    if time.tzname is not _MINUTES_ZONE[0]:
        _MINUTES.clear()
        _MINUTES_ZONE[0] = time.tzname
    key = (year, month, day, h, m)
    base = _MINUTES.get(key)
    if base is None:
        datetime(year, month, day, h, m)  # validates (ValueError); s is 0-99 digits
        base = time.mktime((year, month, day, h, m, 0, 0, 0, -1))
        if len(_MINUTES) >= 4096:
            _MINUTES.clear()
        _MINUTES[key] = base
    return base + s + (float(frac) if frac else 0.0)


_NVSMI_MINUTES: dict[str, float] = {}
""":func:`nvsmi_time`'s start of each minute by the first 17 characters of the
timestamps in it (``2024/11/23 12:23:``)."""
_NVSMI_ZONE: list[object] = [None]
"""The ``time.tzname`` that cache is for."""


def nvsmi_time(cell: str) -> float | None:
    """nvidia-smi's ``2024/11/23 12:23:29.950`` (nothing around it) as :func:`timestamp`
    reads it, quicker; None for any other cell, or one that does not read."""
    if time.tzname is not _NVSMI_ZONE[0]:
        _NVSMI_MINUTES.clear()
        _NVSMI_ZONE[0] = time.tzname
    base = _NVSMI_MINUTES.get(cell[:17])
    if base is None:
        base = _nvsmi_minute(cell)
        if base is None:
            return None
    seconds, frac = cell[17:19], cell[19:]
    if not (seconds.isascii() and seconds.isdigit() and len(seconds) == 2):
        return None
    if frac and not (frac[0] == "." and frac.isascii() and frac[1:].isdigit()):
        return None
    return base + int(seconds) + (float(frac) if frac else 0.0)


def _nvsmi_minute(cell: str) -> float | None:
    """The start of the minute of an nvidia-smi timestamp (remembered by its text up to
    the seconds); None when the cell is not one, or does not read."""
    m = NVSMI_TIME_RE.match(cell)
    if m is None or m.end(5) != 16:
        return None
    y, mo, d, hh, mm = (int(g) for g in m.groups()[:5])
    try:
        base = local_time(y, mo, d, hh, mm, 0, None)
    except (ValueError, OverflowError, OSError):
        return None
    if len(_NVSMI_MINUTES) >= 4096:
        _NVSMI_MINUTES.clear()
    _NVSMI_MINUTES[cell[:17]] = base
    return base


def epoch_number(value: float) -> tuple[float, bool]:
    """A numeric time: (seconds, absolute?). Milli/micro/nanoseconds are scaled down;
    numbers below 1e8 (before 1973) are taken as seconds from the start of the log."""
    magnitude = abs(value)
    if magnitude >= 1e17:
        return value / 1e9, True
    if magnitude >= 1e14:
        return value / 1e6, True
    if magnitude >= 1e11:
        return value / 1e3, True
    return value, magnitude >= 1e8


def timestamp(cell: str) -> tuple[float, bool] | None:
    """Any timestamp we know -> (seconds, absolute?); None when the cell says unknown.

    Absolute means seconds since the epoch; relative means seconds since the start
    of the log (a ``_runtime`` or an ``elapsed`` column)."""
    raw = cell.strip().strip('"').strip()
    # Fast path: a plain number (what number() below makes of it); a date or a time
    # of day (a "/" or ":") never reads as one.
    if "/" not in raw and ":" not in raw:
        try:
            value = float(raw)
        except ValueError:
            pass
        else:
            if math.isfinite(value) and "_" not in raw:
                if value < 0:
                    raise CellError(f"negative timestamp {raw[:40]!r}")
                return epoch_number(value)
    if raw.lower() in UNKNOWN_MARKERS:
        return None
    m = NVSMI_TIME_RE.match(raw)
    try:
        if m is not None:
            y, mo, d, hh, mm, ss, frac = m.groups()
            return local_time(int(y), int(mo), int(d), int(hh), int(mm), int(ss), frac), True
        m = ISO_TIME_RE.match(raw)
        if m is not None:
            y, mo, d, hh, mm, ss, frac, zone = m.groups()
            if zone is None:
                return (
                    local_time(int(y), int(mo), int(d), int(hh), int(mm), int(ss or 0), frac),
                    True,
                )
            zone = "+00:00" if zone == "Z" else zone
            if ":" not in zone:
                zone = zone[:3] + ":" + zone[3:]
            stamp = datetime.fromisoformat(f"{y}-{mo}-{d}T{hh}:{mm}:{ss or '00'}{frac or ''}{zone}")
            return stamp.timestamp(), True
    except (ValueError, OverflowError, OSError) as exc:
        raise CellError(f"bad timestamp {raw[:40]!r}: {exc}") from exc
    parsed = number(raw)
    if parsed is None:
        return None
    value, unit = parsed
    if unit not in ("", "s"):
        raise CellError(f"bad timestamp {raw[:40]!r}")
    if value < 0:
        raise CellError(f"negative timestamp {raw[:40]!r}")
    return epoch_number(value)


def is_calendar_date(cell: str) -> bool:
    """Whether a cell is a date alone, year first (``20240115``, ``2024-01-15``)."""
    text = cell.strip().strip('"')
    return bool(_DMON_DATE_RE.match(text) or _YMD_RE.match(text))


def year_last_date(cell: str) -> tuple[int, int] | None:
    """The first two parts of a date written year last (``04-03-2021`` -> (4, 3)),
    None for another cell."""
    m = _DMY_RE.match(cell.strip().strip('"'))
    return None if m is None else (int(m.group(1)), int(m.group(3)))


def year_first(cell: str, order: str) -> str:
    """A date written year last, in ``order`` (``dmy``/``mdy``), as ``YYYY-MM-DD`` (what
    :func:`dmon_datetime` reads); any other cell as it is (read, or refused, there)."""
    m = _DMY_RE.match(cell.strip().strip('"'))
    if m is None:
        return cell
    a, b, year = m.group(1), m.group(3), m.group(4)
    day, month = (a, b) if order == "dmy" else (b, a)
    return f"{year}-{month}-{day}"


def is_time_of_day(cell: str) -> bool:
    """Whether a cell is a time of day alone (``13:32:39``, ``13:32:39.250``)."""
    return _HMS_RE.match(cell.strip().strip('"')) is not None


_DMON_MINUTES: dict[tuple[str | None, str], tuple[float, bool]] = {}
""":func:`dmon_datetime`'s answers lately for the start of a minute, by the date cell and
the time cell's ``HH:MM:`` (cleared when full; a cell that does not read is not kept):
the rows of a log stamped to the second share a handful of minutes."""
_DMON_MINUTES_ZONE: list[object] = [None]
"""The ``time.tzname`` that cache is for (``TZ`` moves a local time)."""


def dmon_datetime(date_cell: str | None, time_cell: str) -> tuple[float, bool]:
    """dmon ``-o DT`` (``20241123``, ``12:23:29``) or ``-o T`` (time of day only)."""
    if (
        len(time_cell) == 8
        and time_cell[5] == ":"
        and time_cell[6:].isdigit()
        and time_cell.isascii()
    ):  # HH:MM:SS, the common cell: its minute's start (read once), plus its seconds
        if time.tzname is not _DMON_MINUTES_ZONE[0]:
            _DMON_MINUTES.clear()
            _DMON_MINUTES_ZONE[0] = time.tzname
        key = (date_cell, time_cell[:6])
        minute = _DMON_MINUTES.get(key)
        if minute is None:
            try:
                minute = _dmon_datetime(date_cell, time_cell[:6] + "00")
            except CellError:
                return _dmon_datetime(date_cell, time_cell)  # refused in its own words
            if len(_DMON_MINUTES) >= 256:
                _DMON_MINUTES.clear()
            _DMON_MINUTES[key] = minute
        return minute[0] + int(time_cell[6:]), minute[1]
    return _dmon_datetime(date_cell, time_cell)


def _dmon_datetime(date_cell: str | None, time_cell: str) -> tuple[float, bool]:
    """:func:`dmon_datetime` without its cache."""
    m = _HMS_RE.match(time_cell.strip())
    if m is None:
        raise CellError(f"bad time {time_cell.strip()[:20]!r}")
    hh, mm, ss, frac = m.groups()
    if date_cell is None:
        seconds = int(hh) * 3600 + int(mm) * 60 + int(ss) + (float(frac) if frac else 0.0)
        return seconds, False
    d = _DMON_DATE_RE.match(date_cell.strip())
    if d is not None:
        y, mo, day = d.group(1), d.group(2), d.group(3)
    else:
        d = _YMD_RE.match(date_cell.strip())
        if d is None:
            raise CellError(f"bad date {date_cell.strip()[:20]!r}")
        y, mo, day = d.group(1), d.group(3), d.group(4)
    try:
        return local_time(int(y), int(mo), int(day), int(hh), int(mm), int(ss), frac), True
    except (ValueError, OverflowError, OSError) as exc:
        raise CellError(f"bad date {date_cell.strip()[:20]!r}: {exc}") from exc
