"""Columns of an ``nvidia-smi --query-gpu ... --format=csv,noheader`` log, by their values.

nvidia-smi's timestamp, ISO or epoch times, ``GPU-...`` UUIDs, PCI bus ids,
text (the name), a small integer at the start (the index), and values with
units (``%``, ``MiB``, ``W``, ``MHz``) in the order everybody queries them.
What stays ambiguous -- bare numbers under ``nounits`` -- needs ``--map``,
except one numeric column of 0-100 (utilization.gpu) and an increasing column
of epoch times, which find themselves.
"""

from __future__ import annotations

import re

from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._table import Column
from gputop_hints.units import MIB

_UUID_RE = re.compile(r"^(GPU|MIG)-[0-9a-fA-F-]{8,}$")
_BUS_RE = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]$")
_UNIT_VALUE_RE = re.compile(r"^[-+]?\d+(?:\.\d+)?\s+(%|MiB|W|MHz)$")
_NUMERIC_RE = re.compile(r"^[-+]?\d+(?:\.\d+)?$")


def _shape(cell: str) -> str:
    c = cell.strip()
    if v.is_unknown(c):
        return "na"
    if v.NVSMI_TIME_RE.match(c) or v.ISO_TIME_RE.match(c):
        return "time"
    if _UUID_RE.match(c):
        return "uuid"
    if _BUS_RE.match(c):
        return "bus_id"
    m = _UNIT_VALUE_RE.match(c)
    if m is not None:
        return m.group(1)
    if _NUMERIC_RE.match(c):
        return "num"
    if c.lower().startswith("0x"):
        return "hex"
    if any(ch.isalpha() for ch in c):
        return "text"
    return "?"


def _mib(cell: str) -> float | None:
    try:
        parsed = v.number(cell)
    except v.CellError:
        return None
    return None if parsed is None else parsed[0]


def _row_max(row: list[str], i: int, others: list[int]) -> bool:
    mine = _mib(row[i])
    if mine is None:
        return True
    return all((x := _mib(row[j])) is None or mine >= x for j in others if j != i)


def column_shapes(rows: list[list[str]]) -> list[str]:
    """What each column's values look like (``time``, ``%``, ``MiB``, ``num`` ...)."""
    shapes: list[str] = []
    for i in range(len(rows[0])):
        kinds = {_shape(r[i]) for r in rows} - {"na"}
        shapes.append(kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "na"))
    return shapes


def epoch_column(rows: list[list[str]], shapes: list[str]) -> int | None:
    """A bare-number column of non-decreasing epoch times (s, ms, us or ns), if any."""
    for i, shape in enumerate(shapes):
        if shape != "num":
            continue
        values = [float(r[i]) for r in rows if _NUMERIC_RE.match(r[i].strip())]
        if not values or min(values) < 1e8:
            continue
        if all(v.epoch_number(x)[1] for x in values) and values == sorted(values):
            return i
    return None


def infer_headerless(rows: list[list[str]]) -> tuple[list[Column], list[str]] | str:
    """Guess the columns of a noheader file from value shapes (a reason when we cannot)."""
    ncols = len(rows[0])
    shapes = column_shapes(rows)
    columns: list[Column] = []
    notes: list[str] = []
    order = {
        "%": ["sm", "mem"],
        "MiB": [],
        "W": ["power", "power_limit"],
        "MHz": ["sm_clock", "max_sm_clock"],
    }
    simple = {
        "time": "time",
        "uuid": "uuid",
        "bus_id": "bus_id",
        "text": "name",
        "hex": "throttle_mask",
    }
    used_simple: set[str] = set()
    mib_cols: list[int] = []
    plain_cols: list[int] = []
    if "time" not in shapes:
        epoch = epoch_column(rows, shapes)
        if epoch is not None:
            shapes[epoch] = "time"
            notes.append(f"column {epoch + 1}: increasing epoch times")
    for i, shape in enumerate(shapes):
        if shape in simple and simple[shape] not in used_simple:
            used_simple.add(simple[shape])
            columns.append(Column(i, simple[shape], MIB, f"column {i + 1}"))
        elif shape in ("%", "W", "MHz"):
            if order[shape]:
                role = order[shape].pop(0)
                columns.append(Column(i, role, MIB, f"column {i + 1} ({shape})"))
                if role in ("sm", "mem") and ncols > 1:
                    notes.append(f"column {i + 1}: % values taken as {role}")
        elif shape == "MiB":
            mib_cols.append(i)
        elif shape == "num":
            plain_cols.append(i)
    # MiB columns: the one always the largest is memory.total; the rest in the
    # conventional order used, free.
    if mib_cols:
        total = None
        if len(mib_cols) >= 2:
            # memory.total is the column never below any other MiB column in any row.
            for i in mib_cols:
                if all(_row_max(r, i, mib_cols) for r in rows):
                    total = i
                    break
        rest = [i for i in mib_cols if i != total]
        if total is not None:
            columns.append(Column(total, "vram_total", MIB, f"column {total + 1} (MiB)"))
        for i, role in zip(rest, ("vram_used", "vram_free"), strict=False):
            columns.append(Column(i, role, MIB, f"column {i + 1} (MiB)"))
        notes.append(
            "MiB columns read as "
            + ", ".join(
                f"{c.label.split(' ')[1]}={c.role}" for c in columns if c.role.startswith("vram")
            )
        )
    # A small integer right at the start (or after the timestamp) is the GPU index.
    if plain_cols:
        first = plain_cols[0]
        lead = first == 0 or (first == 1 and shapes[0] == "time")
        ints = [float(r[first]) for r in rows if _NUMERIC_RE.match(r[first].strip())]
        metric_known = any(c.role not in ("time", "uuid", "bus_id", "name") for c in columns)
        if lead and ints and metric_known and all(x == int(x) and 0 <= x <= 15 for x in ints):
            columns.append(Column(first, "gpu", MIB, f"column {first + 1}"))
            plain_cols.pop(0)
    metric_known = any(c.role not in ("time", "uuid", "bus_id", "name", "gpu") for c in columns)
    if not metric_known and len(plain_cols) == 1:
        i = plain_cols[0]
        bare = [float(r[i]) for r in rows if _NUMERIC_RE.match(r[i].strip())]
        if bare and all(0 <= x <= 100 for x in bare):
            columns.append(Column(i, "sm", MIB, f"column {i + 1}"))
            notes.append(
                f"column {i + 1}: bare numbers 0-100 taken as utilization.gpu (override with --map)"
            )
            plain_cols = []
    if plain_cols:
        notes.append(
            "unidentified columns "
            + ", ".join(str(i + 1) for i in plain_cols)
            + " (bare numbers; name them with --map, e.g. --map temp=5)"
        )
    if not any(c.role not in ("time", "uuid", "bus_id", "name", "gpu") for c in columns):
        return (
            f"no header and {ncols} column(s) of bare numbers: cannot tell which metric is "
            "which; say so with --map sm=1,vram_used=2 (1-based column numbers)"
        )
    return columns, notes
