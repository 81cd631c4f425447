"""``dcgmi dmon -e 203,204,252,...`` output (DCGM's field monitor).

::

    #Entity   GPUTL  MCUTL  FBUSD  POWER  TMPTR  SMACT  DRAMA
    ID
    GPU 0        95     40  20000  250.1     61  0.912  0.402
    GPU 1         0      0      7   60.3     33  0.000  0.000

Header driven: columns are DCGM's short field names, or the numeric field ids
when the log shows those; the header pair may repeat. SM % is ``GPUTL``
(NVML's utilization.gpu), else ``GRACT`` (graphics engine active, a 0-1 ratio
of the same thing); memory-access % is ``MCUTL``, else ``DRAMA``. Profiling
ratios are fractions 0-1 and become percentages; ``SMACT``, ``SMOCC``, ``TENSO`` and
``DRAMA`` are also kept as the model's profiling percentages (SM active, occupancy,
tensor active, DRAM active: docs/metrics.md). ``N/A`` is unknown. dmon has
no timestamps: ``--interval`` (dcgmi's ``-d`` in seconds) spaces the samples.
Entities other than whole GPUs (``GPU-I``, ``GPU-CI``, switches) are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._table import (
    Assembler,
    Column,
    Row,
    assemble,
    missing_for,
    note_bad_cells,
    parse_row,
)
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.spec import GPU_COLUMNS, FormatSpec
from gputop_hints.streams import (
    ReadCounters,
    StreamInfo,
    note_bad_line,
)
from gputop_hints.units import MIB

FORMAT = "dcgmi-dmon"
LABEL = "dcgmi dmon"

# short name -> (field id, role, scale): scale 100 turns a 0-1 ratio into a percentage.
FIELDS: dict[str, tuple[int, str, float]] = {
    "GPUTL": (203, "sm", 1.0),
    "MCUTL": (204, "mem", 1.0),
    "GRACT": (1001, "sm", 100.0),
    "DRAMA": (1005, "mem", 100.0),
    "FBTTL": (250, "vram_total", MIB),
    "FBFRE": (251, "vram_free", MIB),
    "FBUSD": (252, "vram_used", MIB),
    "POWER": (155, "power", 1.0),
    "TMPTR": (150, "temp", 1.0),
    "SMCLK": (100, "sm_clock", 1.0),
    "PCITX": (1009, "pcie_tx", 1.0),
    "PCIRX": (1010, "pcie_rx", 1.0),
}
# Profiling ratios (0-1) carried as they are into the model's profiling percentages,
# whatever else the column also stands in for (DRAMA is memory-access % without MCUTL).
PROFILING: dict[str, tuple[int, str]] = {
    "SMACT": (1002, "sm_active"),
    "SMOCC": (1003, "sm_occupancy"),
    "TENSO": (1004, "tensor_active"),
    "DRAMA": (1005, "dram_active"),
}
_BY_ID = {str(number): name for name, (number, _r, _s) in FIELDS.items()} | {
    str(number): name for name, (number, _r) in PROFILING.items()
}
KNOWN_OTHER = {"FP64A", "FP32A", "FP16A", "NVLTX", "NVLRX", "MMCLK"}


@dataclass
class DcgmiPlan:
    names: list[str]
    columns: list[Column] = field(default_factory=list)
    scales: dict[int, float] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)


def header_names(line: str) -> list[str] | None:
    """``#Entity GPUTL ...`` -> the field names (ids translated), None otherwise."""
    text = line.strip()
    if not text.startswith("#"):
        return None
    tokens = text[1:].split()
    if not tokens or tokens[0].lower() != "entity":
        return None
    return [_BY_ID.get(t, t.upper()) for t in tokens[1:]]


def _plan(names: list[str]) -> DcgmiPlan:
    plan = DcgmiPlan(names)
    roles: set[str] = set()
    # GPUTL/MCUTL win over GRACT/DRAMA when both are there: order the preferred first.
    ranked = sorted(enumerate(names), key=lambda p: p[1] not in ("GPUTL", "MCUTL"))
    for i, name in ranked:
        found = FIELDS.get(name)
        if found is None or found[1] in roles:
            continue
        roles.add(found[1])
        scale = found[2]
        plan.columns.append(Column(i + 1, found[1], MIB if scale == MIB else 1.0, name))
        if scale == 100.0:
            plan.scales[i + 1] = scale
    for i, name in enumerate(names):
        if name in PROFILING:
            plan.columns.append(Column(i + 1, PROFILING[name][1], 1.0, name))
            plan.scales[i + 1] = 100.0
    plan.columns.append(Column(0, "gpu", 1.0, "Entity"))
    return plan


def _cells(text: str, plan: DcgmiPlan) -> list[str] | None:
    """``GPU 0  95  40 ...`` -> ['0', '95', '40', ...] with ratios scaled; None for other
    entities and the ``ID`` line."""
    tokens = text.split()
    if len(tokens) < 2 or tokens[0] != "GPU":
        return None
    cells = tokens[1:]
    for position, scale in plan.scales.items():
        if position < len(cells):
            try:
                parsed = v.number(cells[position])
            except v.CellError:
                continue  # left for the row parser to report
            if parsed is not None:
                cells[position] = f"{parsed[0] * scale:g}"
    return cells


def _row(text: str, plan: DcgmiPlan, line: int) -> Row | None:
    cells = _cells(text, plan)
    if cells is None:
        return None
    if len(cells) != len(plan.names) + 1:
        raise v.CellError(f"expected {len(plan.names) + 1} fields, found {len(cells)}")
    return parse_row(cells, plan.columns, line)


_MEMO_LINES = 256
"""Lines remembered by their text (cleared when full)."""


def _copy_row(row: Row, line: int) -> Row:
    return Row(
        line,
        row.timestamp,
        row.absolute,
        row.key,
        dict(row.fields),
        list(row.bad_cells),
        row.samples,
    )


def sniff(head: Head, mapping: Mapping[str, str] | None) -> DcgmiPlan | str:
    lines = head.nonblank
    names = header_names(lines[0]) if lines else None
    if names is None:
        return "first line is not a '#Entity ...' dcgmi dmon header"
    known = [n for n in names if n in FIELDS or n in PROFILING or n in KNOWN_OTHER]
    if not known:
        return f"no DCGM field we know in {' '.join(names)[:80]}"
    plan = _plan(names)
    if len(plan.columns) == 1:
        return "no dcgmi field we can use (need GPUTL, MCUTL, FBUSD, POWER, TMPTR ...)"
    for n, line in enumerate(lines[1:80], start=2):
        try:
            row = _row(line, plan, n)
        except v.CellError:
            continue
        if row is not None:
            plan.rows.append(row)
    return plan


def open_dcgmi(
    path: Path, plan: DcgmiPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    notes = [f"{LABEL} with fields {' '.join(plan.names)}"]
    interval = choose_interval(None, interval_s, notes, False)
    roles = [c.role for c in plan.columns]
    info = StreamInfo(
        path=str(path),
        format=FORMAT,
        interval_s=interval,
        gpu_count=len({r.key for r in plan.rows}) or None,
        missing=missing_for(roles),
        detail="; ".join(notes),
        header={"columns": {c.label: c.role for c in plan.columns}},
    )
    detail = f"{LABEL}: {path.name}"

    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        def rows() -> Iterator[Row]:
            current = plan
            # Lines that read, by their text: a line repeated (an idle GPU, a
            # steady load) takes the earlier one's values. Lines that raise are
            # not remembered, so errors read as before.
            memo: dict[str, Row] = {}
            for line, text in source.lines():
                if not text.strip():
                    continue
                names = header_names(text)
                if names is not None:
                    again = plan if names == plan.names else _plan(names)
                    if again is not current:
                        memo = {}
                    current = again
                    continue
                known = memo.get(text)
                row: Row | None
                if known is not None:
                    row = _copy_row(known, line)
                else:
                    try:
                        row = _row(text, current, line)
                    except v.CellError as exc:
                        note_bad_line(counters, line, str(exc))
                        continue
                    if row is not None:
                        if len(memo) >= _MEMO_LINES:
                            memo.clear()
                        memo[text] = _copy_row(row, row.line)
                if row is not None:
                    note_bad_cells(counters, row)
                    yield row

        yield from assemble(rows(), Assembler(counters, interval, "unknown", detail))

    return ImportedStream(path, info, reader, counters=counters)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_dcgmi,
    metrics=GPU_COLUMNS,
    docs="dcgmi dmon",
)
