"""Hand-made CSVs: a header row naming metrics in the common ways.

Header names are matched case-insensitively after folding separators
(``memory.used``, ``Memory Used``, ``memory_used`` are one name); a unit in the
name (``_mb``, ``_mib``, ``_gb``, ``[MiB]``, ``(GB)``, ``_pct``) sets the scale.
VRAM without a unit is read as MiB (what nvidia-smi and most scripts write)
unless the values are too large for that (then bytes) or fractional and small
(then GiB); the guess is written into ``StreamInfo.detail``.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._csvio import (
    CsvPlan,
    apply_mapping,
    parse_sample,
    read_rows,
    trim_trailing,
)
from gputop_hints.sources.files._table import Assembler, Column
from gputop_hints.sources.files._tabular import table_stream
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.mapping import constant_size
from gputop_hints.sources.files.spec import GPU_COLUMNS, FormatSpec
from gputop_hints.streams import (
    ReadCounters,
)
from gputop_hints.units import MIB

FORMAT = "csv"
LABEL = "CSV"

ALIASES: dict[str, str] = {}
for _role, _names in {
    "time": "timestamp time ts datetime date_time epoch unix_time unixtime wall_time walltime "
    "elapsed elapsed_time runtime time_s seconds t",
    "gpu": "gpu gpu_index gpu_id gpu_idx index idx device device_id device_index gpu_num",
    "name": "name gpu_name device_name",
    "uuid": "uuid gpu_uuid",
    "sm": "gpu_util gpu_utilization gpu_utilisation utilization_gpu utilisation_gpu util "
    "utilization gpu_usage gpu_load sm sm_util sm_utilization sm_activity gpu_busy "
    "gpu_percent",
    "mem": "mem_util memory_util mem_utilization memory_utilization utilization_memory "
    "mem_busy memory_busy mem_access memory_access mem_bw_util memory_access_percent",
    "vram_used": "memory_used mem_used vram_used used_memory used_mem gpu_memory_used "
    "gpu_mem_used gpu_mem gpu_memory fb_used fb vram memory_usage mem_usage gpu_memory_usage",
    "vram_total": "memory_total mem_total vram_total total_memory total_mem gpu_memory_total "
    "gpu_mem_total fb_total",
    "vram_free": "memory_free mem_free vram_free free_memory free_mem gpu_memory_free fb_free",
    "temp": "temperature temp temperature_gpu gpu_temp gpu_temperature",
    "power": "power power_draw power_usage gpu_power pwr",
    "power_limit": "power_limit power_cap enforced_power_limit",
    "sm_clock": "sm_clock clocks_sm clock_sm clocks_current_sm pclk graphics_clock",
    "pcie_rx": "pcie_rx rx_pci rxpci pcie_rx_throughput",
    "pcie_tx": "pcie_tx tx_pci txpci pcie_tx_throughput",
    "pcie_gen": "pcie_gen pcie_link_gen_current",
    "pcie_width": "pcie_width pcie_link_width_current",
}.items():
    for _n in _names.split():
        ALIASES[_n] = _role

_UNIT_IN_NAME = re.compile(r"[\[(]\s*([^\])]*)\s*[\])]")
_SIZE_SUFFIX = {
    "bytes": 1.0,
    "b": 1.0,
    "kb": 2.0**10,
    "kib": 2.0**10,
    "mb": MIB,
    "mib": MIB,
    "gb": 2.0**30,
    "gib": 2.0**30,
}
_OTHER_SUFFIX = ("pct", "percent", "perc", "w", "watts", "c", "celsius", "mhz", "s", "sec", "ms")


def normalise_name(raw: str) -> tuple[str, str | None]:
    """'Memory Used [MiB]' -> ('memory_used', 'mib'); 'vram_used_gb' -> ('vram_used', 'gb')."""
    unit: str | None = None
    m = _UNIT_IN_NAME.search(raw)
    if m is not None:
        unit = m.group(1).strip().lower().replace(" ", "") or None
        raw = _UNIT_IN_NAME.sub(" ", raw)
    name = re.sub(r"[^a-z0-9%]+", "_", raw.strip().lower()).strip("_")
    name = name.replace("%", "percent")
    if name in ALIASES:
        return name, unit
    parts = name.split("_")
    if len(parts) > 1:
        tail = parts[-1]
        base = "_".join(parts[:-1])
        if tail in _SIZE_SUFFIX or tail in _OTHER_SUFFIX:
            return base, unit or tail
    return name, unit


def _vram_scale(unit: str | None, values: list[float]) -> tuple[float, str]:
    if unit is not None:
        if unit in _SIZE_SUFFIX:
            return _SIZE_SUFFIX[unit], unit
        if unit in v.BYTE_UNITS:
            return v.BYTE_UNITS[unit], unit
    if values and max(values) > 4e6:
        return 1.0, "bytes (values too large for MiB)"
    if values and max(values) <= 2048 and any(x != int(x) for x in values):
        return 2.0**30, "GiB (small fractional values)"
    return MIB, "MiB (assumed: no unit in the header)"


def _is_number(cell: str) -> bool:
    try:
        return v.number(cell) is not None
    except v.CellError:
        return False


def _delimiter(line: str) -> str:
    counts = {d: line.count(d) for d in (",", ";", "\t", "|")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def sniff(head: Head, mapping: Mapping[str, str] | None) -> CsvPlan | str:
    lines = head.nonblank
    if not lines:
        return "empty file"
    first = lines[0]
    if first.lstrip().startswith(("{", "[")):
        return "first line is JSON, not a CSV header"
    delimiter = _delimiter(first)
    try:
        header = [h.strip() for h in next(csv.reader([first], delimiter=delimiter))]
    except (csv.Error, StopIteration):
        return "header line is not CSV"
    header = trim_trailing(header, 1)
    numeric = sum(1 for h in header if _is_number(h))
    if numeric * 2 >= len(header):
        return "no header row (the first line holds numbers)"
    if first.lstrip().startswith("#"):
        return "first line is a comment"
    ncols = len(header)
    data: list[list[str]] = []
    try:
        for cells in csv.reader(lines[1:51], delimiter=delimiter, skipinitialspace=True):
            cells = trim_trailing([c.strip() for c in cells], ncols)
            if len(cells) == ncols:
                data.append(cells)
    except csv.Error:
        pass
    columns: list[Column] = []
    notes: list[str] = []
    seen: set[str] = set()
    for i, raw in enumerate(header):
        name, unit = normalise_name(raw)
        role = ALIASES.get(name)
        if role is None or role in seen:
            continue
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
            scale, why = _vram_scale(unit, values)
            notes.append(f"{raw}: {why}")
        elif role in ("pcie_rx", "pcie_tx"):
            scale = _SIZE_SUFFIX.get((unit or "mb").replace("/s", ""), MIB)
        columns.append(Column(i, role, scale, raw))
    try:
        columns, mapped = apply_mapping(columns, mapping, header, ncols, _SIZE_SUFFIX)
    except KeyError as exc:
        return str(exc.args[0])
    notes += mapped
    metric_roles = [c for c in columns if c.role not in ("time", "gpu", "name", "uuid")]
    if not metric_roles:
        has_const = bool(mapping) and any(
            constant_size(str(s)) is not None for s in (mapping or {}).values()
        )
        if not has_const:
            return (
                f"no column names a GPU metric (header: {', '.join(header)[:120]}); "
                "name them with --map sm=COL,vram_used=COL"
            )
    plan = CsvPlan(columns, ncols, header, delimiter=delimiter, notes=notes)
    plan.rows = parse_sample(data, columns, 2)
    if data and not plan.rows:
        return "no data row parses"
    return plan


def open_generic(
    path: Path, plan: CsvPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of a hand-made CSV: one snapshot per tick of rows."""
    shape = "with header" if plan.header is not None else "without header"
    notes = [f"{LABEL} {shape}, {plan.ncols} column(s)", *plan.notes]

    def rows(
        source: TextSource, counters: ReadCounters, assembler: Assembler, vram_total: int | None
    ) -> Iterator[Snapshot]:
        return read_rows(source, plan, counters, assembler, vram_total=vram_total, reheader=None)

    return table_stream(
        path, FORMAT, LABEL, plan.columns, plan.rows, notes, interval_s, mapping, rows
    )


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_generic,
    metrics=GPU_COLUMNS,
    docs="Generic CSV",
)
