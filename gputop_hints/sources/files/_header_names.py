"""Header names -> column roles, shared by the readers of tables with a header row.

A hand-made CSV and a whitespace-aligned table printed by a script name their
columns the same ways: names are matched case-insensitively after folding
separators (``memory.used``, ``Memory Used``, ``memory_used`` are one name); a
unit in the name (``_mb``, ``_mib``, ``_gb``, ``[MiB]``, ``(GB)``, ``_pct``)
sets the scale (a spelled-out ``_megabytes`` is 1e6 bytes, as MLflow writes it); a
percentage of an amount (``memory_usage_percentage``) is not read as the amount.
VRAM without a unit is read as MiB unless the values are too large for that (then
bytes) or fractional and small (then GiB).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._table import Column
from gputop_hints.units import MIB

ALIASES: dict[str, str] = {}
for _role, _names in {
    "time": "timestamp time ts datetime date_time epoch unix_time unixtime wall_time walltime "
    "elapsed elapsed_time runtime time_s seconds t relative_time",
    "gpu": "gpu gpu_index gpu_id gpu_idx index idx device device_id device_index gpu_num",
    "name": "name gpu_name device_name",
    "uuid": "uuid gpu_uuid",
    "sm": "gpu_util gpu_utilization gpu_utilisation utilization_gpu utilisation_gpu util util_gpu "
    "utilization gpu_usage gpu_load sm sm_util sm_utilization sm_activity gpu_busy "
    "gpu_percent",
    "mem": "mem_util memory_util mem_utilization memory_utilization utilization_memory util_mem "
    "mem_busy memory_busy mem_access memory_access mem_bw_util memory_access_percent",
    "vram_used": "memory_used mem_used vram_used used_memory used_mem gpu_memory_used "
    "gpu_mem_used gpu_mem gpu_memory fb_used fb vram memory_usage mem_usage gpu_memory_usage",
    "vram_total": "memory_total mem_total vram_total total_memory total_mem gpu_memory_total "
    "gpu_mem_total fb_total memory_max mem_max vram_max",
    "vram_free": "memory_free mem_free vram_free free_memory free_mem gpu_memory_free fb_free",
    "temp": "temperature temp temperature_gpu gpu_temp gpu_temperature",
    "power": "power power_draw power_usage power_used gpu_power pwr",
    "power_limit": "power_limit power_cap enforced_power_limit power_max",
    "sm_clock": "sm_clock clocks_sm clock_sm clocks_current_sm pclk graphics_clock",
    "pcie_rx": "pcie_rx rx_pci rxpci pcie_rx_throughput",
    "pcie_tx": "pcie_tx tx_pci txpci pcie_tx_throughput",
    "pcie_gen": "pcie_gen pcie_link_gen_current",
    "pcie_width": "pcie_width pcie_link_width_current",
}.items():
    for _n in _names.split():
        ALIASES[_n] = _role

_UNIT_IN_NAME = re.compile(r"[\[(]\s*([^\])]*)\s*[\])]")
SIZE_SUFFIX = {
    "bytes": 1.0,
    "b": 1.0,
    "kb": 2.0**10,
    "kib": 2.0**10,
    "mb": MIB,
    "mib": MIB,
    "gb": 2.0**30,
    "gib": 2.0**30,
    # Spelled out, decimal: MLflow's 'gpu_0_memory_usage_megabytes' is NVML's bytes / 1e6.
    "megabytes": 1e6,
}
PERCENT_UNITS = frozenset({"pct", "percent", "perc", "percentage", "%"})
_OTHER_SUFFIX = (*PERCENT_UNITS - {"%"}, "w", "watts", "c", "celsius", "mhz", "s", "sec", "ms")
AMOUNT_ROLES = frozenset(
    {"vram_used", "vram_total", "vram_free", "power", "power_limit", "temp", "sm_clock"}
    | {"pcie_rx", "pcie_tx"}
)
"""Roles read as an amount (bytes, watts, degrees...): a percentage of one (MLflow's
'memory_usage_percentage', 'power_usage_percentage') is another quantity."""


_ALLOCATOR_WORD = re.compile(r"(?:^|_)(?:allocated|alloc|reserved|cached)(?:_|$)")
_MEMORY_WORD = re.compile(r"(?:^|_)(?:mem|memory)(?:_|$)")


def allocator_figure(name: str) -> bool:
    """Whether a normalised name is a caching allocator's figure -- PyTorch's
    ``torch.cuda.memory_allocated()`` / ``memory_reserved()`` (``gpu_memory_allocated``,
    ``gpu_mem_alloc``, ``max_memory_reserved``): tensors (or the cache holding them),
    less than what NVML/nvidia-smi shows used (the cache's spare and the CUDA context
    are not in it). Never read as VRAM used."""
    return bool(_ALLOCATOR_WORD.search(name) and _MEMORY_WORD.search(name))


ALLOCATOR_NOTE = (
    "a caching allocator's figure (PyTorch's torch.cuda.memory_allocated/reserved: "
    "tensors or their cache, less than the VRAM nvidia-smi shows used): not read"
)


def normalise_name(raw: str) -> tuple[str, str | None]:
    """'Memory Used [MiB]' -> ('memory_used', 'mib'); 'vram_used_gb' -> ('vram_used', 'gb')."""
    unit: str | None = None
    m = _UNIT_IN_NAME.search(raw)
    if m is not None:
        unit = m.group(1).strip().lower().replace(" ", "") or None
        raw = _UNIT_IN_NAME.sub(" ", raw)
    # 'GPU%' and 'util%' as 'gpu_percent', 'util_percent' (as 'GPU %' reads).
    name = re.sub(r"[^a-z0-9%]+", "_", raw.strip().lower()).strip("_")
    name = re.sub(r"(?<=[a-z0-9])%", "_%", name).replace("%", "percent")
    if name in ALIASES:
        return _share_of_amount(name, unit)
    parts = name.split("_")
    if len(parts) > 1:
        tail = parts[-1]
        base = "_".join(parts[:-1])
        if tail in SIZE_SUFFIX or tail in _OTHER_SUFFIX:
            return _share_of_amount(base, unit or tail)
    return name, unit


def _share_of_amount(name: str, unit: str | None) -> tuple[str, str | None]:
    """A percentage of an amount ('memory_usage_percentage', 'power [%]') keeps its
    unit in its name, so that it names no role: never read as bytes or watts."""
    if unit in PERCENT_UNITS and ALIASES.get(name) in AMOUNT_ROLES:
        return f"{name}_percent", None
    return name, unit


def vram_scale(unit: str | None, values: list[float]) -> tuple[float, str]:
    if unit is not None:
        if unit in SIZE_SUFFIX:
            return SIZE_SUFFIX[unit], unit
        if unit in v.BYTE_UNITS:
            return v.BYTE_UNITS[unit], unit
    if values and max(values) > 4e6:
        return 1.0, "bytes (values too large for MiB)"
    if values and max(values) <= 2048 and any(x != int(x) for x in values):
        return 2.0**30, "GiB (small fractional values)"
    return MIB, "MiB (assumed: no unit in the header)"


def is_number(cell: str) -> bool:
    """Whether a cell holds a number (a unit after it allowed), not text."""
    try:
        return v.number(cell) is not None
    except v.CellError:
        return False


def header_columns(
    header: Sequence[str],
    data: Sequence[Sequence[str]],
    date_rows: Sequence[Sequence[str]] | None = None,
) -> tuple[list[Column], list[str]]:
    """The columns a header names (the first of each role), and notes on the VRAM
    scale chosen; ``data`` (sample rows of cells) tells a unitless VRAM scale;
    ``date_rows`` (more rows, when at hand; else ``data``) the order of a ``Date``
    column's day and month."""
    columns: list[Column] = []
    notes: list[str] = []
    seen: set[str] = set()
    date_role, date_order, date_note = _date_column_role(
        header, data, data if date_rows is None else date_rows
    )
    if date_note:
        notes.append(date_note)
    for i, raw in enumerate(header):
        name, unit = normalise_name(raw)
        role = ALIASES.get(name)
        if allocator_figure(name):
            notes.append(f"{raw}: {ALLOCATOR_NOTE}")
            continue
        if name == "date" and date_role is not None:
            role = date_role
        if role is None and "/" in raw:  # a logger's path: 'train/gpu_util', 'sys/memory.used'
            name, unit = normalise_name(raw.rsplit("/", 1)[1])
            role = ALIASES.get(name)
        if role is None and name.endswith("_percent") and ALIASES.get(name[:-8]) in AMOUNT_ROLES:
            notes.append(f"{raw}: a share (%) of {ALIASES[name[:-8]]}, not an amount: not read")
            continue
        if role is None or role in seen:
            continue
        if name == "epoch" and _counts_epochs(i, data):
            continue  # a training loop's epoch number (Lightning's metrics.csv), no time
        seen.add(role)
        scale = 1.0
        if role.startswith("vram"):
            values = []
            for r in data:
                try:
                    parsed = v.number(r[i])
                except v.CellError:
                    continue
                if parsed is not None and not parsed[1]:
                    values.append(parsed[0])
            scale, why = vram_scale(unit, values)
            notes.append(f"{raw}: {why}")
        elif role in ("pcie_rx", "pcie_tx"):
            scale = SIZE_SUFFIX.get((unit or "mb").replace("/s", ""), MIB)
        columns.append(Column(i, role, scale, raw, date_order if role == "date" else "ymd"))
    if "vram_used" not in seen:
        found = _bare_memory(header, data, seen)
        if found is not None:
            columns.append(found[0])
            notes.append(found[1])
    return columns, notes


def _date_column_role(
    header: Sequence[str], data: Sequence[Sequence[str]], date_rows: Sequence[Sequence[str]]
) -> tuple[str | None, str, str | None]:
    """What a column named ``date`` is, its order of day and month, and a note: the
    date part of the time ('date' role) when a time column beside it holds times of
    day and it holds dates -- year first (``Date,Time`` -> ``2024-01-15,13:32:39``), or
    day/month first with the year last when the file tells which (see
    :func:`_date_order`); the time itself ('time') when no other column names a time
    and it holds timestamps (``date`` -> ``2024-01-15 13:32:39``); else None (not
    read)."""
    names = [normalise_name(raw)[0] for raw in header]
    if "date" not in names:
        return None, "ymd", None
    at = names.index("date")
    times = [i for i, n in enumerate(names) if ALIASES.get(n) == "time"]
    cells = [r[at] for r in data if at < len(r) and r[at].strip().strip('"')]
    if not cells:
        return None, "ymd", None
    if times:
        t = times[0]
        tod = [r[t] for r in data if t < len(r) and r[t].strip()]
        if not tod or not all(v.is_time_of_day(c) for c in tod):
            return None, "ymd", None
        if all(v.is_calendar_date(c) for c in cells):
            return "date", "ymd", None
        if all(v.year_last_date(c) is not None for c in cells):
            more = [r[at] for r in date_rows if at < len(r) and r[at].strip().strip('"')]
            return _date_order(header[at], cells + more)
        return None, "ymd", None
    try:
        stamps = [v.timestamp(c) for c in cells]
    except v.CellError:
        return None, "ymd", None
    return ("time" if all(st is not None and st[1] for st in stamps) else None), "ymd", None


def _date_order(label: str, cells: Sequence[str]) -> tuple[str | None, str, str | None]:
    """The order of dates written year last (``04-03-2021``): a line cannot tell
    ``DD-MM`` from ``MM-DD``, a file can -- a first part over 12 is a day (day
    first), a second part over 12 is one (month first). Neither (or both): not read,
    said in the note."""
    parts = [p for p in (v.year_last_date(c) for c in cells) if p is not None]
    day_first = any(a > 12 for a, _ in parts)
    month_first = any(b > 12 for _, b in parts)
    example = cells[0].strip().strip('"')
    if day_first and not month_first:
        first = next(c for c, p in zip(cells, parts, strict=False) if p[0] > 12)
        return "date", "dmy", (
            f"{label}: dates read day first (DD-MM-YYYY: {first.strip()!r} has a day over 12)"
        )
    if month_first and not day_first:
        first = next(c for c, p in zip(cells, parts, strict=False) if p[1] > 12)
        return "date", "mdy", (
            f"{label}: dates read month first (MM-DD-YYYY: {first.strip()!r} has a day over 12)"
        )
    why = "both orders appear" if day_first else "no part over 12"
    return None, "ymd", (
        f"{label}: the order of day and month could not be told ({example!r}; {why}): "
        "dates not read, times of day only"
    )


_BARE_MEMORY = frozenset({"mem", "memory"})
_HOST_NAMES = re.compile(r"(?:^|_)(?:cpu|ram|host|system|sys|rss|swap|proc|process)(?:_|$)")


def _bare_memory(
    header: Sequence[str], data: Sequence[Sequence[str]], roles: set[str]
) -> tuple[Column, str] | None:
    """A ``mem_mb`` / ``Memory (MiB)`` column -- memory with a size unit but no word
    saying whose -- as VRAM used, when the header is a GPU's alone: it names a GPU
    metric (SM %, VRAM total or free) and nothing of the host's (CPU, RAM, RSS ...),
    which a bare ``mem`` could be. One such column only; else none is read."""
    if not roles & {"sm", "vram_total", "vram_free"}:
        return None
    found: list[tuple[int, str, str]] = []
    for i, raw in enumerate(header):
        name, unit = normalise_name(raw)
        if _HOST_NAMES.search(name):
            return None
        sized = unit is not None and (unit in SIZE_SUFFIX or unit in v.BYTE_UNITS)
        if name in _BARE_MEMORY and sized:
            found.append((i, raw, str(unit)))
    if len(found) != 1:
        return None
    i, raw, unit = found[0]
    scale = SIZE_SUFFIX.get(unit) or v.BYTE_UNITS[unit]
    return Column(i, "vram_used", scale, raw), f"{raw}: VRAM used ({unit}; a GPU's log)"


def _counts_epochs(position: int, data: Sequence[Sequence[str]]) -> bool:
    """Whether an ``epoch`` column holds a training loop's epoch numbers (small whole
    numbers: 0, 1, 2 ...) rather than Unix time (seconds since 1970, ~1e9 today)."""
    seen = False
    for row in data:
        cell = row[position].strip() if position < len(row) else ""
        if not cell:
            continue
        try:
            value = float(cell)
        except ValueError:
            return False
        if value >= 1e6 or value != int(value):
            return False
        seen = True
    return seen
