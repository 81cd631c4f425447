"""Formatting numbers for people. Only views call these; the model stays in SI units."""

from __future__ import annotations

from collections.abc import Iterable

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_DECIMAL_RATE = ("B/s", "KB/s", "MB/s", "GB/s", "TB/s")

UNKNOWN = "n/a"

MIB = 2**20
"""Bytes in a mebibyte: nvidia-smi's "MiB" (and the "MB" of dmon, pmon and gpustat)."""


def human_bytes(value: float | None, unknown: str = UNKNOWN) -> str:
    """1536 -> '1.5KiB'; binary units, as nvidia-smi reports VRAM."""
    if value is None:
        return unknown
    v = float(value)
    for unit in _BINARY:
        if abs(v) < 1024 or unit == _BINARY[-1]:
            if unit == "B":
                return f"{int(v)}B"
            return f"{v:.1f}{unit}" if abs(v) < 100 else f"{v:.0f}{unit}"
        v /= 1024
    raise AssertionError("unreachable")


def human_rate(value: float | None, unknown: str = UNKNOWN) -> str:
    """Bytes per second in decimal units (PCIe is specified in GB/s): 2.5e9 -> '2.5GB/s'."""
    if value is None:
        return unknown
    v = float(value)
    for unit in _DECIMAL_RATE:
        if abs(v) < 1000 or unit == _DECIMAL_RATE[-1]:
            if unit == "B/s":
                return f"{int(v)}B/s"
            return f"{v:.1f}{unit}" if abs(v) < 100 else f"{v:.0f}{unit}"
        v /= 1000
    raise AssertionError("unreachable")


def percent(value: float | None, unknown: str = UNKNOWN, width: int = 0) -> str:
    """37.4 -> '37%' (right-aligned in ``width`` when given)."""
    text = unknown if value is None else f"{value:.0f}%"
    return text.rjust(width) if width else text


def core_ranges(cores: Iterable[int]) -> str:
    """(0, 1, 2, 3, 8, 10, 11) -> '0-3,8,10-11' (the cpuset list format)."""
    ordered = sorted(set(cores))
    if not ordered:
        return "none"
    parts: list[str] = []
    start = prev = ordered[0]
    for core in ordered[1:]:
        if core == prev + 1:
            prev = core
            continue
        parts.append(f"{start}-{prev}" if prev > start else str(start))
        start = prev = core
    parts.append(f"{start}-{prev}" if prev > start else str(start))
    return ",".join(parts)


def count_text(count: int, noun: str) -> str:
    """``1 process``, ``2 processes``: a count with its noun in the right number."""
    if count == 1:
        return f"1 {noun}"
    plural = noun + "es" if noun.endswith(("s", "x", "ch", "sh")) else noun + "s"
    return f"{count} {plural}"


def duration_text(seconds: float | None, unknown: str = UNKNOWN) -> str:
    """A length of time as a person writes it, in one style for every text output.

    The largest unit first, then the next one (never more than two), rounded to the
    second: ``45 s``, ``4 min 54 s``, ``2 h 05 min``, ``3 d 4 h``. Under 10 s it keeps a
    tenth (``2.5 s``) so that short thresholds stay exact. The TUI's narrow cells use a
    compact form of the same units (:func:`gputop_hints.tui.hint_text.duration_text`).
    """
    if seconds is None:
        return unknown
    if seconds < 10:
        value = max(0.0, float(seconds))
        return f"{value:.0f} s" if round(value, 1).is_integer() else f"{value:.1f} s"
    total = round(seconds)
    if total < 60:
        return f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min" if secs == 0 else f"{minutes} min {secs:02d} s"
    total_min = round(seconds / 60)
    hours, minutes = divmod(total_min, 60)
    if hours < 24:
        return f"{hours} h" if minutes == 0 else f"{hours} h {minutes:02d} min"
    days, hours = divmod(round(seconds / 3600), 24)
    return f"{days} d" if hours == 0 else f"{days} d {hours} h"
