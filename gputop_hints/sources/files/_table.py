"""The shared engine of the tabular importers (nvidia-smi CSV, dmon, generic CSV).

A format-specific front end decides which column holds what (a list of
:class:`Column` with a *role* and a unit scale); this module turns rows of cells
into :class:`~gputop_hints.model.GpuSample` fields, groups the rows of one tick
into a :class:`~gputop_hints.model.Snapshot`, and keeps time monotonic.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any

from gputop_hints.model import (
    CLOCK_EVENT_REASONS,
    PROFILING_FIELDS,
    GpuSample,
    HostSample,
    Snapshot,
)
from gputop_hints.sources.files import _values as v
from gputop_hints.streams import (
    ALL_METRICS,
    METRIC_MEMORY_ACCESS,
    METRIC_PCIE,
    METRIC_POWER,
    METRIC_SM,
    METRIC_TEMPERATURE,
    METRIC_THROTTLE,
    METRIC_VRAM,
    ReadCounters,
)

ROLE_METRIC = {
    "sm": METRIC_SM,
    "mem": METRIC_MEMORY_ACCESS,
    "vram_used": METRIC_VRAM,
    "vram_total": METRIC_VRAM,
    "vram_free": METRIC_VRAM,
    "temp": METRIC_TEMPERATURE,
    "power": METRIC_POWER,
    "pcie_rx": METRIC_PCIE,
    "pcie_tx": METRIC_PCIE,
    "throttle_mask": METRIC_THROTTLE,
}


@dataclass
class Column:
    position: int
    """0-based cell index."""
    role: str
    """What the cell holds: ``time``, ``date`` (dmon ``-o D``), ``gpu``, ``name``,
    ``uuid``, ``bus_id``, ``driver``, ``sm``, ``mem``, ``vram_used``/``_total``/``_free``,
    ``temp``, ``power``, ``power_limit``, ``sm_clock``, the profiling percentages
    (:data:`PROFILING_ROLES`), ``max_sm_clock``,
    ``pcie_gen``, ``pcie_width``, ``pcie_rx``, ``pcie_tx``, ``throttle_mask``,
    ``throttle:<reason>`` (Active/Not Active) or ``throttle_pct:<reason>`` (dmon's
    pviol/tviol: % of time, > 0 means active)."""
    scale: float = 1.0
    """Multiplier to SI for sizes/rates when the cell carries no unit."""
    label: str = ""
    """The header text (or "column N") for messages."""
    order: str = "ymd"
    """A ``date`` column's order (``ymd``; ``dmy``/``mdy``: the year last, day or month
    first, as the file told -- see ``_header_names._date_order``)."""


Samples = dict[int, tuple[tuple[tuple[str, Any], ...], GpuSample, dict[str, Any]]]


@dataclass(slots=True)
class Row:
    line: int
    timestamp: float | None
    absolute: bool
    key: int | str | None
    fields: dict[str, Any]
    bad_cells: list[tuple[str, str]] = field(default_factory=list)
    """(column label, why) for metric cells that did not read: left unknown, the
    rest of the row kept."""
    samples: Samples | None = None
    """The GpuSamples built from rows with these same cells but the time (shared by
    them, see :func:`parse_row`): GPU index -> (the fields it was built from, it, the
    dict of those fields)."""


PROFILING_ROLES = tuple(name.removesuffix("_percent") for name in PROFILING_FIELDS)
"""Roles of DCGM profiling ratios, as percentages: GpuSample's ``<role>_percent``."""

IDENTITY_ROLES = frozenset({"time", "date", "gpu"})
"""A row whose time or GPU does not read cannot be placed: it is dropped whole."""


def note_bad_cells(counters: ReadCounters, row: Row) -> None:
    """Count a row's bad cells per column (``header["bad_cells"]``: label -> [count,
    first line]) and the row once in the bad-line count, with the first reason."""
    if not row.bad_cells:
        return
    per_column = counters.found.setdefault("bad_cells", {})
    assert isinstance(per_column, dict)
    for label, _why in row.bad_cells:
        count, first = per_column.get(label, (0, row.line))
        per_column[label] = [count + 1, first]
    label, why = row.bad_cells[0]
    counters.note_bad_line(row.line, f"{label}: {why} (the rest of the row is kept)")


def missing_for(roles: Iterable[str], *, host_cpu: bool = False) -> tuple[str, ...]:
    present = {ROLE_METRIC[r] for r in roles if r in ROLE_METRIC}
    present |= {METRIC_THROTTLE for r in roles if r.startswith("throttle")}
    if host_cpu:
        present.add("host_cpu")
    return tuple(m for m in ALL_METRICS if m not in present)


def _truthy_flag(cell: str) -> bool | None:
    t = v.text(cell)
    if t is None:
        return None
    low = t.lower()
    if low in ("active", "1", "yes", "true"):
        return True
    if low in ("not active", "0", "no", "false"):
        return False
    raise v.CellError(f"expected Active/Not Active, got {t[:30]!r}")


_TIME, _DATE, _GPU, _IDENT, _FIELD, _OTHER = range(6)
"""How :func:`parse_row` reads a column (see :func:`_column_plan`)."""

_CellReader = Callable[[str], Any]
_Step = tuple[int, str, int, "_CellReader | None", Column, dict[str, Any]]
"""(position, role, how it is read, its reader, the column, the values its reader
gave lately by cell text)."""
_CELL_VALUES = 512
"""A column's values remembered by their cell's text (cleared when full): a log repeats
a handful of utilizations and sizes, and a reader is a pure function of the cell."""
_UNREAD = object()
_Memo = dict[
    object,
    tuple[dict[str, Any], "int | str | None", list[tuple[str, str]], "str | None", Samples],
]
_Plan = tuple[bool, bool, list[_Step], int, int, Callable[[Sequence[str]], object], _Memo]
"""(has a gpu column, has a date column, the steps, the position of the one time
column (or _NO_TIME, _TIMES: several), the number of cells the memo needs, what it keys
rows on (their other read cells), the memo of rows by that key)."""
_plans: dict[int, tuple[Sequence[Column], int, _Plan]] = {}
"""Column plans by id of the column list, with the list (kept, so its id is not
reused) and its length (a list still being built gets a new plan)."""


def _clock_mhz(cell: str) -> int | None:
    mhz = v.plain(cell, ("mhz",), 0.0, 100000.0)
    return None if mhz is None else round(mhz)


def _reader(col: Column) -> _CellReader | None:
    """The cell reader of a metric column; None for the roles parse_row reads itself."""
    role, scale = col.role, col.scale
    if role in ("name", "driver"):
        return v.text
    if role in ("sm", "mem", *PROFILING_ROLES):
        return v.percent
    if role in ("vram_used", "vram_total", "vram_free"):
        return lambda cell: v.byte_count(cell, scale)
    if role in ("pcie_rx", "pcie_tx"):
        return lambda cell: v.rate(cell, scale)
    if role == "temp":
        return lambda cell: v.plain(cell, ("c",), -60.0, 200.0)
    if role in ("power", "power_limit"):
        return lambda cell: v.plain(cell, ("w",), 0.0, 20000.0)
    if role in ("sm_clock", "max_sm_clock"):
        return _clock_mhz
    if role == "pcie_gen":
        return lambda cell: v.integer(cell, 1, 16)
    if role == "pcie_width":
        return lambda cell: v.integer(cell, 1, 64)
    return None


def _column_plan(columns: Sequence[Column]) -> _Plan:
    """What parse_row does with each column, worked out once per column list."""
    cached = _plans.get(id(columns))
    if cached is not None and cached[0] is columns and cached[1] == len(columns):
        return cached[2]
    has_gpu_column = any(col.role == "gpu" for col in columns)
    has_date_column = any(col.role == "date" for col in columns)
    steps: list[_Step] = []
    for col in columns:
        role = col.role
        reader: _CellReader | None = None
        if role == "time":
            kind = _TIME
        elif role == "date":
            kind = _DATE
            if col.order != "ymd":
                reader = functools.partial(v.year_first, order=col.order)
        elif role == "gpu":
            kind = _GPU
        elif role in ("uuid", "bus_id"):
            kind = _IDENT
        else:
            reader = _reader(col)
            kind = _OTHER if reader is None else _FIELD
        steps.append((col.position, role, kind, reader, col, {}))
    times = [col.position for col in columns if col.role == "time"]
    others = [col.position for col in columns if col.role != "time"]
    rest: Callable[[Sequence[str]], object] = (
        operator.itemgetter(*others) if others else lambda cells: ()
    )
    needs = max((col.position for col in columns), default=-1) + 1
    time_at = times[0] if len(times) == 1 else _NO_TIME if not times else _TIMES
    plan: _Plan = (has_gpu_column, has_date_column, steps, time_at, needs, rest, {})
    if len(_plans) > 64:
        _plans.clear()
    _plans[id(columns)] = (columns, len(columns), plan)
    return plan


_MEMO_ROWS = 256
_NO_TIME, _TIMES = -1, -2
"""Rows remembered per column plan by their cells but the time (cleared when full)."""


When = tuple[float | None, bool] | str | None
"""A row's time read beforehand (:func:`time_of`), the message of the CellError reading
it raised, or None (not read beforehand)."""


def time_of(time_cell: str) -> When:
    """A time cell read once for the rows that share it (:func:`parse_row`'s ``when``):
    its (time, absolute?) as parse_row reads it without a date column, or the message
    parse_row raises for it."""
    try:
        return _row_time(time_cell, None, False)
    except v.CellError as exc:
        return str(exc)


def parse_row(cells: Sequence[str], columns: Sequence[Column], line: int, when: When = None) -> Row:
    """Cells -> Row; raises CellError (with the column label) when a cell is malformed.

    ``when`` is the row's time as :func:`time_of` read its time cell, once for the rows
    that share the cell (the GPUs of one JSON object): it is not read again (a CellError
    of its message is raised where reading it raised). Only for columns of one time
    column and no date column.

    A row whose cells but the time equal an earlier row's (an idle GPU logged
    again, one GPU of several alternating) takes that row's values: only its time
    is read. Rows that raise are not remembered, so errors read as before."""
    has_gpu_column, has_date_column, steps, time_at, needs, rest_of, memo = _column_plan(columns)
    ncells = len(cells)
    rest: object = None
    if time_at != _TIMES and ncells >= needs:
        rest = rest_of(cells)
        hit = memo.get(rest)
        if hit is not None:
            fields0, key0, bad0, date0, shared = hit
            if when is not None:
                if isinstance(when, str):
                    raise v.CellError(when)
                ts0, absolute0 = when
            else:
                ts0, absolute0 = (
                    (None, False)
                    if time_at == _NO_TIME
                    else _row_time(cells[time_at], date0, has_date_column)
                )
            return Row(line, ts0, absolute0, key0, dict(fields0), list(bad0), shared)
    fields: dict[str, Any] = {}
    key: int | str | None = None
    date_cell: str | None = None
    time_cell: str | None = None
    throttle: set[str] | None = None
    bad_cells: list[tuple[str, str]] = []
    for position, role, kind, reader, col, values in steps:
        if position >= ncells:
            continue
        cell = cells[position]
        try:
            if kind == _FIELD:
                value = values.get(cell, _UNREAD)
                if value is _UNREAD:
                    value = reader(cell)  # type: ignore[misc]
                    if len(values) >= _CELL_VALUES:
                        values.clear()
                    values[cell] = value
                fields[role] = value
            elif kind == _TIME:
                time_cell = cell
            elif kind == _DATE:
                date_cell = cell if reader is None else reader(cell)
            elif kind == _GPU:
                index = v.integer(cell, 0, 4095)
                key = index
            elif kind == _IDENT:
                ident = v.text(cell)
                fields[role] = ident
                if key is None and ident is not None and not has_gpu_column:
                    key = ident
            elif role == "throttle_mask":
                raw = v.text(cell)
                if raw is not None:
                    try:
                        mask = int(raw, 16) if raw.lower().startswith("0x") else int(raw)
                    except ValueError as exc:
                        raise v.CellError(f"bad bitmask {raw[:30]!r}") from exc
                    throttle = throttle or set()
                    throttle.update(name for bit, name in CLOCK_EVENT_REASONS if mask & bit)
            elif role.startswith("throttle:"):
                flag = _truthy_flag(cell)
                if flag is not None:
                    throttle = throttle or set()
                    if flag:
                        throttle.add(role.split(":", 1)[1])
            elif role.startswith("throttle_pct:"):
                pct = v.plain(cell, ("%",), 0.0, 100.0)
                if pct is not None:
                    throttle = throttle or set()
                    if pct > 0:
                        throttle.add(role.split(":", 1)[1])
        except v.CellError as exc:
            if role in IDENTITY_ROLES:
                raise v.CellError(f"{col.label or role}: {exc}") from None
            bad_cells.append((col.label or role, str(exc)))
    if when is None:
        ts, absolute = _row_time(time_cell, date_cell, has_date_column)
    elif isinstance(when, str):
        raise v.CellError(when)
    else:
        ts, absolute = when
    if throttle is not None:
        fields["throttle"] = tuple(sorted(throttle))
    if bad_cells and not any(
        value is not None for name, value in fields.items() if name not in ("name", "uuid")
    ):
        raise v.CellError(f"{bad_cells[0][0]}: {bad_cells[0][1]}")  # nothing left to keep
    samples: Samples | None = None
    if rest is not None:
        if len(memo) >= _MEMO_ROWS:
            memo.clear()
        samples = {}
        memo[rest] = (dict(fields), key, list(bad_cells), date_cell, samples)
    return Row(line, ts, absolute, key, fields, bad_cells, samples)


def row_time(time_cell: str) -> tuple[float | None, bool]:
    """The (time, absolute?) of a row's time cell (stripped) without a date column;
    raises CellError (``time: ...``) as :func:`parse_row` does."""
    if "/" not in time_cell and ":" not in time_cell:
        try:  # fast path: a plain number, as v.timestamp reads it
            value = float(time_cell)
        except ValueError:
            pass
        else:
            if 0.0 <= value < math.inf and "_" not in time_cell:
                return v.epoch_number(value)
    elif "/" in time_cell:
        local = v.nvsmi_time(time_cell)
        if local is not None:
            return local, True
    return _parsed_time(time_cell, None, False)


def _row_time(
    time_cell: str | None, date_cell: str | None, has_date_column: bool
) -> tuple[float | None, bool]:
    """A row's (time, absolute?) from its time cell (and dmon's date cell)."""
    if time_cell is None:
        return None, False
    if not has_date_column:
        return row_time(time_cell)
    try:  # what _parsed_time does with a date column, without the call
        return v.dmon_datetime(date_cell, time_cell)
    except v.CellError as exc:
        raise v.CellError(f"time: {exc}") from None


def _parsed_time(
    time_cell: str, date_cell: str | None, has_date_column: bool
) -> tuple[float | None, bool]:
    """:func:`_row_time` past its quick paths: a time of day (with dmon's date cell) or
    any timestamp shape :func:`v.timestamp` reads (remembered by the cell's text: the
    GPUs of one poll share it)."""
    if not has_date_column:
        if time.tzname is not _TIME_CELLS_ZONE[0]:
            _TIME_CELLS.clear()
            _TIME_CELLS_ZONE[0] = time.tzname
        known = _TIME_CELLS.get(time_cell)
        if known is not None:
            return known
        if (
            len(time_cell) == 20
            and time_cell[19] == "Z"
            and time_cell[10] == "T"
            and time_cell[16] == ":"
            and time_cell[17] in "012345"
            and time_cell[18].isdigit()
            and time_cell.isascii()
        ):  # 2025-01-15T10:00:00Z: its minute's start (read once), plus its seconds
            minute = _UTC_MINUTES.get(time_cell[:17])
            if minute is None:
                try:
                    minute = v.timestamp(time_cell[:17] + "00Z")
                except v.CellError:
                    minute = None  # the careful path below says why, in its own words
                else:
                    if len(_UTC_MINUTES) >= 256:
                        _UTC_MINUTES.clear()
                    _UTC_MINUTES[time_cell[:17]] = minute
            if minute is not None and minute[0] is not None:
                return minute[0] + int(time_cell[17:19]), minute[1]
    try:
        if has_date_column or _is_time_of_day(time_cell):
            return v.dmon_datetime(date_cell, time_cell)
        parsed = v.timestamp(time_cell)
    except v.CellError as exc:
        raise v.CellError(f"time: {exc}") from None
    answer = (None, False) if parsed is None else parsed
    if len(_TIME_CELLS) >= 256:
        _TIME_CELLS.clear()
    _TIME_CELLS[time_cell] = answer
    return answer


_TIME_CELLS: dict[str, tuple[float | None, bool]] = {}
""":func:`_parsed_time`'s answers lately for a time cell alone (cleared when full; a
cell that does not read is not kept)."""
_TIME_CELLS_ZONE: list[object] = [None]
"""The ``time.tzname`` that cache is for (``TZ`` moves a local time)."""
_UTC_MINUTES: dict[str, tuple[float | None, bool] | None] = {}
""":func:`_parsed_time`'s answers for the start of a minute of ISO times in UTC
(``2025-01-15T10:00:``), cleared when full."""


def _is_time_of_day(cell: str) -> bool:
    text = cell.strip()
    return len(text) <= 12 and text.count(":") == 2 and "/" not in text and "-" not in text


def gpu_sample(index: int, f: dict[str, Any]) -> GpuSample:
    used = f.get("vram_used")
    total = f.get("vram_total")
    free = f.get("vram_free")
    # Derived sizes are approximate: total = used + free + reserved on recent drivers.
    if used is None and total is not None and free is not None and total >= free:
        used = total - free
    if total is None and used is not None and free is not None:
        total = used + free
    return GpuSample(
        index=index,
        name=f.get("name"),
        uuid=f.get("uuid"),
        sm_percent=f.get("sm"),
        memory_access_percent=f.get("mem"),
        vram_used_bytes=used,
        vram_total_bytes=total,
        pcie_rx_bytes_per_s=f.get("pcie_rx"),
        pcie_tx_bytes_per_s=f.get("pcie_tx"),
        pcie_generation=f.get("pcie_gen"),
        pcie_width=f.get("pcie_width"),
        temperature_c=f.get("temp"),
        power_watts=f.get("power"),
        power_limit_watts=f.get("power_limit"),
        sm_clock_mhz=f.get("sm_clock"),
        max_sm_clock_mhz=f.get("max_sm_clock"),
        throttle_reasons=f.get("throttle"),
        sm_active_percent=f.get("sm_active"),
        sm_occupancy_percent=f.get("sm_occupancy"),
        tensor_active_percent=f.get("tensor_active"),
        dram_active_percent=f.get("dram_active"),
    )


def median_interval(times: Sequence[float]) -> float | None:
    """Median spacing of distinct, increasing timestamps (None with fewer than two)."""
    distinct = sorted(set(times))
    gaps = [b - a for a, b in itertools.pairwise(distinct) if b > a]
    if not gaps:
        return None
    return float(statistics.median(gaps))


def probe_interval(rows: Sequence[Row]) -> float | None:
    """The nominal interval from sampled rows: the spacing of one GPU's timestamps."""
    timed = [r for r in rows if r.timestamp is not None]
    if not timed:
        return None
    first_key = timed[0].key
    times = [r.timestamp for r in timed if r.key == first_key and r.timestamp is not None]
    return median_interval(times)


class Clock:
    """Turns raw row times into monotonic snapshot times.

    Missing times are synthesised at the nominal interval from 0. A clock that
    jumps backwards (a DST change in local-time stamps, two logs concatenated) is
    stitched: later samples are shifted to follow on one interval later."""

    def __init__(self, counters: ReadCounters, interval: float) -> None:
        self.counters = counters
        self.interval = interval
        self.offset = 0.0
        self.last: float | None = None
        self.count = 0

    def next(self, raw: float | None) -> float:
        if raw is None:
            t = self.count * self.interval if self.last is None else self.last + self.interval
        else:
            t = raw + self.offset
            if self.last is not None and t < self.last:
                shift = self.last + self.interval - t
                self.offset += shift
                t += shift
                jumps = self.counters.found.get("clock_jumps_back", 0)
                self.counters.found["clock_jumps_back"] = int(jumps) + 1  # type: ignore[call-overload]
        self.last = t
        self.count += 1
        return t


_BY_INDEX = operator.attrgetter("index")

_SNAPSHOT_HEAD = (
    "timestamp", "interval_s", "host", "gpus", "processes", "source", "source_detail",
    "driver_version",
)  # fmt: skip
"""The fields the Assembler passes to Snapshot by position (~25 % cheaper than by
keyword: a snapshot per row): a field added or moved in the model fails at import."""
if tuple(f.name for f in dataclass_fields(Snapshot))[: len(_SNAPSHOT_HEAD)] != _SNAPSHOT_HEAD:
    raise TypeError(f"Snapshot fields changed: the Assembler passes {_SNAPSHOT_HEAD} first")


class Assembler:
    """Groups rows into ticks: a new tick starts when a GPU repeats or time moves on."""

    def __init__(self, counters: ReadCounters, interval: float, hostname: str, detail: str) -> None:
        self.counters = counters
        self.interval = interval
        self.clock = Clock(counters, interval)
        self.host = HostSample(hostname=hostname, cpu_percent_per_core=(), allowed_cores=())
        self.detail = detail
        self.tolerance = min(max(0.5 * interval, 0.002), 5.0)
        self._rows: list[tuple[int, dict[str, Any], Samples | None]] = []
        self._indices: set[int] = set()
        """The GPU indices of ``_rows``, and the highest of them (kept from its second
        row on: a tick of one row needs neither)."""
        self._top = -1
        self._keys: set[int | str] = set()
        self._time: float | None = None
        self._index_of: dict[str, int] = {}
        self.driver: str | None = None
        self._last_samples: dict[int, tuple[tuple[object, ...], GpuSample, Samples | None]] = {}
        self._most_gpus = 0
        """The most GPUs of a snapshot yet (what ``counters.saw_gpus`` was last told)."""

    def _index(self, key: int | str | None) -> int:
        if key is None:
            return len(self._rows)
        if isinstance(key, int):
            return key
        if key not in self._index_of:
            self._index_of[key] = len(self._index_of)
        return self._index_of[key]

    def add(self, row: Row) -> Snapshot | None:
        out: Snapshot | None = None
        key = row.key
        timestamp = row.timestamp
        rows = self._rows
        if rows:
            new_tick = False
            if key is not None and key in self._keys:
                new_tick = True
            elif timestamp is not None and self._time is not None:
                new_tick = abs(timestamp - self._time) > self.tolerance
            elif key is None and (timestamp is None or self._time is None):
                new_tick = True  # no GPU column and no time: one row, one tick
            if new_tick:
                out = self.flush()
                rows = self._rows
        if key is None:
            index = len(rows)
        else:
            self._keys.add(key)
            index = key if isinstance(key, int) else self._index(key)
        if not rows:
            self._time = timestamp
        else:
            if len(rows) == 1:  # a second row: the first one's index is taken
                self._indices.add(rows[0][0])
                self._top = rows[0][0]
            if index in self._indices:
                index = self._top + 1
            self._indices.add(index)
            if index > self._top:
                self._top = index
        rows.append((index, row.fields, row.samples))
        return out

    def add_keyless(
        self, timestamp: float | None, fields: dict[str, Any], samples: Samples | None
    ) -> Snapshot | None:
        """:meth:`add` of a row without a key (nor bad cells, nor need of its line):
        a tick of one row followed by a row a tick later (the common case of a file
        of one GPU without an index column) takes the short way: :meth:`flush` of
        that one row, inline."""
        rows = self._rows
        if (
            len(rows) == 1
            and timestamp is not None
            and self._time is not None
            and abs(timestamp - self._time) > self.tolerance
        ):
            index, before, shared = rows[0]
            known = None if shared is None else shared.get(index)
            gpu = (
                known[1]
                if known is not None and known[2] is before
                else self._sample(index, before, shared)
            )  # the check _sample makes of a known row's fields, without the call
            clock = self.clock
            t = self._time + clock.offset
            if clock.last is not None and t < clock.last:
                t = clock.next(self._time)  # the clock jumps back
            else:  # what Clock.next does with a time that does not jump back
                clock.last = t
                clock.count += 1
            rows[0] = (0, fields, samples)  # the one row of the next tick
            self._time = timestamp
            if self._keys:
                self._keys = set()
            if not self._most_gpus:
                self._most_gpus = 1
                self.counters.saw_gpus(1)
            return Snapshot(
                t, self.interval, self.host, (gpu,), (), "replay", self.detail,
                before.get("driver") or None,
            )  # fmt: skip
        return self.add(Row(0, timestamp, False, None, fields, [], samples))

    def _sample(self, index: int, f: dict[str, Any], samples: Samples | None) -> GpuSample:
        """gpu_sample, handing back the GPU's last sample when its row read the same
        (a frozen value: equal ones can be shared; idle GPUs repeat row after row),
        else the one built from a row of the same cells (``samples``): from these very
        fields (a reader hands the fields of a known row again, never changed), or
        fields equal to them."""
        last = self._last_samples.get(index)
        known = None
        if samples is not None:
            if last is not None and last[2] is samples:
                return last[1]  # a row of the same cells: the same fields, no need to compare
            known = samples.get(index)
            if known is not None and known[2] is f:
                return known[1]  # (the GPU's last sample is left: it stays true)
        key = (index, *f.items())
        if last is not None and last[0] == key:
            return last[1]
        if samples is None:
            sample = gpu_sample(index, f)
        else:
            items = tuple(f.items())
            sample = known[1] if known is not None and known[0] == items else gpu_sample(index, f)
            samples[index] = (items, sample, f)  # with the fields dict met last
        if len(self._last_samples) >= 4096:
            self._last_samples.clear()
        self._last_samples[index] = (key, sample, samples)
        return sample

    def run(self, rows: Iterable[Row]) -> Iterator[Snapshot]:
        """The snapshots of ``rows``: each :meth:`add`, then :meth:`flush`."""
        for row in rows:
            snap = self.add(row)
            if snap is not None:
                yield snap
        last = self.flush()
        if last is not None:
            yield last

    def flush(self) -> Snapshot | None:
        rows = self._rows
        if not rows:
            return None
        t = self.clock.next(self._time)
        if len(rows) == 1:
            index, fields, samples = rows[0]
            last = self._last_samples.get(index)
            gpu = (
                last[1]
                if last is not None and samples is not None and last[2] is samples
                else self._sample(index, fields, samples)
            )  # the check _sample begins with, without the call: most rows take it
            gpus: tuple[GpuSample, ...] = (gpu,)
            driver = fields.get("driver") or None
        else:
            sample = self._sample
            gpus = tuple(sorted([sample(i, f, s) for i, f, s in rows], key=_BY_INDEX))
            driver = None
            for _, f, _ in rows:
                found = f.get("driver")
                if found:
                    driver = found
                    break
            self._indices = set()
            self._top = -1
        self._rows = []
        if self._keys:
            self._keys = set()
        self._time = None
        if len(gpus) > self._most_gpus:
            self._most_gpus = len(gpus)
            self.counters.saw_gpus(len(gpus))
        return Snapshot(t, self.interval, self.host, gpus, (), "replay", self.detail, driver)


def assemble(rows: Iterable[Row], assembler: Assembler) -> Iterator[Snapshot]:
    return assembler.run(rows)


def bad(counters: ReadCounters, line: int, reason: str) -> None:
    counters.note_bad_line(line, reason)
