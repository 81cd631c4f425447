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
