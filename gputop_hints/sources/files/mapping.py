"""``--map`` : telling an importer which column holds which metric.

Syntax: ``--map sm=COL,vram_used=COL,vram_total=COL,mem=COL,time=COL,gpu=COL``.
COL is a header name (case-insensitive, as written in the file, e.g.
``"memory.used [MiB]"`` or ``gpu_util``) or, for a file without a header, a
1-based column number. A unit in brackets after the column overrides the one
guessed: ``vram_used=mem[GB]``. ``vram_total`` may also be a constant size,
``vram_total=24GiB``, for logs that give only a VRAM percentage (W&B).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gputop_hints.sources.files import _values as v

# --map key -> column role (see _table.Column.role); long nvidia-smi names are accepted too.
MAP_KEYS: dict[str, str] = {
    "time": "time",
    "timestamp": "time",
    "gpu": "gpu",
    "index": "gpu",
    "name": "name",
    "uuid": "uuid",
    "sm": "sm",
    "util": "sm",
    "utilization.gpu": "sm",
    "mem": "mem",
    "utilization.memory": "mem",
    "vram_used": "vram_used",
    "memory.used": "vram_used",
    "vram_total": "vram_total",
    "memory.total": "vram_total",
    "vram_free": "vram_free",
    "memory.free": "vram_free",
    "temp": "temp",
    "temperature.gpu": "temp",
    "power": "power",
    "power.draw": "power",
    "power_limit": "power_limit",
    "power.limit": "power_limit",
    "sm_clock": "sm_clock",
    "clocks.sm": "sm_clock",
    "clocks.gr": "sm_clock",
    "pcie_rx": "pcie_rx",
    "pcie_tx": "pcie_tx",
    "pcie_gen": "pcie_gen",
    "pcie_width": "pcie_width",
}

_UNIT_SUFFIX = re.compile(r"^(.*?)\s*\[([^\]]+)\]\s*$")
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([KMGT]i?B|B)\s*$", re.IGNORECASE)


class MappingError(ValueError):
    """A ``--map`` that cannot be understood."""


def parse_mapping(text: str) -> dict[str, str]:
    """'sm=gpu_util, vram_used=3' -> {'sm': 'gpu_util', 'vram_used': '3'} (keys checked)."""
    result: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise MappingError(f"--map entry {part.strip()!r} is not KEY=COLUMN")
        key, _, value = part.partition("=")
        key = key.strip().lower()
        if key not in MAP_KEYS:
            raise MappingError(f"unknown --map key {key!r}; known: {', '.join(sorted(MAP_KEYS))}")
        result[key] = value.strip()
    return result


def normalise(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """Role -> column spec; unknown keys raise MappingError."""
    out: dict[str, str] = {}
    for key, value in (mapping or {}).items():
        role = MAP_KEYS.get(key.strip().lower())
        if role is None:
            raise MappingError(f"unknown --map key {key!r}; known: {', '.join(sorted(MAP_KEYS))}")
        out[role] = str(value).strip()
    return out


def constant_size(spec: str) -> int | None:
    """'24GiB' -> bytes; None when the spec is not a size (so it names a column)."""
    m = _SIZE_RE.match(spec)
    if m is None:
        return None
    scale = v.BYTE_UNITS.get(m.group(2).lower())
    return None if scale is None else round(float(m.group(1)) * scale)


def split_unit(spec: str) -> tuple[str, str | None]:
    """'mem[GB]' -> ('mem', 'gb'); 'mem' -> ('mem', None)."""
    m = _UNIT_SUFFIX.match(spec)
    if m is None:
        return spec, None
    return m.group(1), m.group(2).strip().lower()


def resolve(spec: str, headers: list[str] | None, ncols: int) -> tuple[int, str | None] | None:
    """A column spec -> (0-based position, unit override) or None when it names nothing.

    A full header match wins over a header-plus-[unit] reading, so a header that
    itself ends in "[MiB]" can be named whole."""
    candidates = [(spec, None), split_unit(spec)]
    for name, unit in candidates:
        if headers is not None:
            wanted = name.strip().lower()
            for i, h in enumerate(headers):
                if h.strip().lower() == wanted:
                    return i, unit
        if name.strip().isdigit():
            pos = int(name.strip()) - 1
            if 0 <= pos < ncols:
                return pos, unit
    return None


def vram_constant(mapping: Mapping[str, str] | None) -> int | None:
    """The ``vram_total=SIZE`` constant of a --map, in bytes (None when not given)."""
    spec = normalise(mapping).get("vram_total")
    return None if spec is None else constant_size(spec)
