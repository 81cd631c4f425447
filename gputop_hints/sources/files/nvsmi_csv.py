"""``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] -l 1`` logs.

With a header the columns are named by their query fields (``utilization.gpu
[%]``). Without one they are inferred from what the values look like --
nvidia-smi's timestamp, a small GPU index, a GPU name, ``GPU-...`` UUIDs, PCI
bus ids, and values with units (``%``, ``MiB``, ``W``, ``MHz``); bare numbers
under ``nounits`` by range and shape where one reading is left (see
``_headerless.infer_columns``). What stays ambiguous needs ``--map``: the refusal
prints the ``--map`` line with the columns found filled in.
"""

from __future__ import annotations

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
    split_simple,
    trim_trailing,
)
from gputop_hints.sources.files._gpu_polls import PollShape, find_polls
from gputop_hints.sources.files._headerless import infer_columns, names_columns
from gputop_hints.sources.files._table import (
    Assembler,
    Column,
    probe_interval,
)
from gputop_hints.sources.files._tabular import table_stream
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.mapping import normalise
from gputop_hints.sources.files.spec import GPU_COLUMNS, FormatSpec
from gputop_hints.streams import (
    METRIC_THROTTLE,
    ReadCounters,
)
from gputop_hints.units import MIB

FORMAT = "nvidia-smi-csv"
LABEL = "nvidia-smi CSV"

_REASONS = {
    "gpu_idle": "gpu_idle",
    "applications_clocks_setting": "applications_clocks_setting",
    "sw_power_cap": "sw_power_cap",
    "hw_slowdown": "hw_slowdown",
    "hw_thermal_slowdown": "hw_thermal",
    "hw_power_brake_slowdown": "hw_power_brake",
    "sw_thermal_slowdown": "sw_thermal",
    "sync_boost": "sync_boost",
}

NVSMI_FIELDS: dict[str, str] = {
    "timestamp": "time",
    "index": "gpu",
    "name": "name",
    "gpu_name": "name",
    "uuid": "uuid",
    "gpu_uuid": "uuid",
    "pci.bus_id": "bus_id",
    "gpu_bus_id": "bus_id",
    "driver_version": "driver",
    "utilization.gpu": "sm",
    "utilization.memory": "mem",
    "memory.total": "vram_total",
    "memory.used": "vram_used",
    "memory.free": "vram_free",
    "temperature.gpu": "temp",
    "power.draw": "power",
    "power.draw.average": "power",
    "power.draw.instant": "power",
    "power.limit": "power_limit",
    "enforced.power.limit": "power_limit",
    "clocks.sm": "sm_clock",
    "clocks.current.sm": "sm_clock",
    "clocks.gr": "sm_clock",  # the graphics clock: the SM clock on data-centre GPUs
    "clocks.current.graphics": "sm_clock",
    "clocks.max.sm": "max_sm_clock",
    "clocks.max.sm_clock": "max_sm_clock",
    "pcie.link.gen.current": "pcie_gen",
    "pcie.link.gen.gpucurrent": "pcie_gen",
    "pcie.link.width.current": "pcie_width",
    "clocks_throttle_reasons.active": "throttle_mask",
    "clocks_event_reasons.active": "throttle_mask",
    "clocks_throttle_reasons.supported": "",
    "clocks_event_reasons.supported": "",
}
for _prefix in ("clocks_throttle_reasons", "clocks_event_reasons"):
    for _field, _reason in _REASONS.items():
        NVSMI_FIELDS[f"{_prefix}.{_field}"] = f"throttle:{_reason}"

_FIELD_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$")
_HEADER_CELL_RE = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(?:\[([^\]]*)\])?\s*$")


def header_columns(cells: list[str]) -> tuple[list[Column], bool] | None:
    """Columns from an nvidia-smi header line; None when it is not one."""
    columns: list[Column] = []
    seen: set[str] = set()
    known = 0
    units = False
    cells = trim_trailing(list(cells), 1)
    for i, cell in enumerate(cells):
        m = _HEADER_CELL_RE.match(cell)
        if m is None or not _FIELD_RE.match(m.group(1)):
            return None
        name = m.group(1)
        units = units or m.group(2) is not None
        role = NVSMI_FIELDS.get(name)
        if role is None:
            continue
        known += 1
        if not role or role in seen:  # a field queried twice: the first one counts
            continue
        seen.add(role)
        columns.append(Column(i, role, MIB, cell.strip()))
    if known == 0:
        return None
    return columns, units


def sniff(head: Head, mapping: Mapping[str, str] | None) -> CsvPlan | str:
    lines = head.nonblank
    if not lines:
        return "empty file"
    first = lines[0]
    if first.lstrip().startswith(("{", "#", "[")):
        return "first line is not CSV"
    cells = split_simple(first)
    parsed = header_columns(cells)
    if parsed is not None:
        if "," in first and ", " not in first:
            return (
                "header uses nvidia-smi field names but not its ', ' separator "
                "(a hand-made CSV: tried as generic CSV)"
            )
        columns, units = parsed
        header = [c.strip() for c in trim_trailing(cells, 1)]
        ncols = len(header)
        plan = CsvPlan(columns, ncols, header, units=units)
        data = lines[1:]
    else:
        data = lines
        rows = [trim_trailing(split_simple(line), 1) for line in data[:50]]
        if not rows:
            return "no data"
        counts = {len(r) for r in rows}
        ncols = max(counts, key=[len(r) for r in rows].count)
        good = [r for r in rows if len(r) == ncols]
        if len(good) < max(1, len(rows) * 3 // 4):
            return "lines have differing numbers of fields"
        if names_columns(rows[0], rows[1:]):
            return (
                "the first line names columns, none as nvidia-smi does "
                f"({', '.join(rows[0])[:80]}): tried as generic CSV"
            )
        found = infer_columns(good, head.path)
        if found.reason is not None and not mapping:
            return found.reason
        # With --map, what was inferred stays (an epoch-time column, the index...)
        # and the map names the rest, winning over any guess.
        plan = CsvPlan(found.columns, ncols, None, notes=list(found.notes))
        plan.inferred = found.inferred()
        header = None
    guessed = {(c.position, c.role) for c in plan.columns}
    try:
        plan.columns, notes = apply_mapping(plan.columns, mapping, header, ncols, {})
    except KeyError as exc:
        return str(exc.args[0])
    if plan.inferred:
        mapped = set(normalise(mapping))
        kept = {c.position + 1 for c in plan.columns if (c.position, c.role) in guessed}
        plan.inferred = {
            k: name
            for k, name in plan.inferred.items()
            if k in kept and not any(c.position + 1 == k and c.role in mapped for c in plan.columns)
        }
    plan.notes += notes
    if not any(
        c.role not in ("time", "uuid", "bus_id", "name", "gpu", "driver") for c in plan.columns
    ):
        return "no metric columns"
    time_cols = [c.position for c in plan.columns if c.role == "time"]
    sample = [trim_trailing(split_simple(line), ncols) for line in data[:50]]
    sample = [cells for cells in sample if len(cells) == ncols]
    for cells in sample if header is not None else ():
        cell = cells[time_cols[0]] if time_cols else ""
        if time_cols and not v.is_unknown(cell) and not v.NVSMI_TIME_RE.match(cell.strip()):
            return (
                f"timestamp {cell.strip()[:30]!r} is not nvidia-smi's 'YYYY/MM/DD HH:MM:SS.mmm'"
                " (a hand-made CSV: tried as generic CSV)"
            )
    plan.rows = parse_sample(sample, plan.columns, 2 if header else 1)
    if data and not plan.rows:
        return "no line parses as nvidia-smi CSV values"
    roles = {c.role for c in plan.columns}
    if "time" in roles and not roles & {"gpu", "uuid", "bus_id"}:
        plan.polls = _polls(data, plan, ncols, 2 if header else 1)
    return plan


def _polls(data: list[str], plan: CsvPlan, ncols: int, first_line: int) -> PollShape | None:
    """The polls of rows without an index column, from every row in the head (its
    last line may be cut)."""
    lines = data[:-1] if len(data) > 50 else data
    cells = [trim_trailing(split_simple(line), ncols) for line in lines]
    rows = parse_sample([c for c in cells if len(c) == ncols], plan.columns, first_line)
    return find_polls([r.timestamp for r in rows if r.timestamp is not None])


def nvsmi_reheader(cells: list[str]) -> list[Column] | None:
    if not cells or not cells[0][:1].isalpha():
        return None
    found = header_columns(cells)
    return None if found is None else found[0]


def plan_interval(plan: CsvPlan) -> float | None:
    return probe_interval(plan.rows)


def open_csv(
    path: Path, plan: CsvPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of a ``--query-gpu`` log: one snapshot per tick of rows."""
    shape = "with header" if plan.header is not None else "without header"
    shape += " and units" if plan.units else ""
    notes = [f"{LABEL} {shape}, {plan.ncols} column(s)", *plan.notes]

    def rows(
        source: TextSource, counters: ReadCounters, assembler: Assembler, vram_total: int | None
    ) -> Iterator[Snapshot]:
        return read_rows(
            source, plan, counters, assembler, vram_total=vram_total, reheader=nvsmi_reheader
        )

    return table_stream(
        path,
        FORMAT,
        LABEL,
        plan.columns,
        plan.rows,
        notes,
        interval_s,
        mapping,
        rows,
        inferred={f"column {k}": name for k, name in plan.inferred.items()},
        polls=plan.polls,
    )


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_csv,
    metrics=GPU_COLUMNS | {METRIC_THROTTLE},
    docs="nvidia-smi `--query-gpu` CSV",
)
