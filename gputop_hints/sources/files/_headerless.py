"""Columns of an ``nvidia-smi --query-gpu ... --format=csv,noheader`` log, by their values.

nvidia-smi's timestamp, ISO or epoch times, ``GPU-...`` UUIDs, PCI bus ids,
text (the name), a small integer at the start (the index), and values with
units (``%``, ``MiB``, ``W``, ``MHz``) in the order everybody queries them.
Bare numbers under ``nounits`` are told apart by range and shape when the
evidence leaves one reading (see :func:`infer_columns`); what stays ambiguous
needs ``--map``, and the refusal prints the ``--map`` line to complete.
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

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


ROLE_FIELDS: dict[str, str] = {
    "time": "timestamp",
    "gpu": "index",
    "name": "name",
    "uuid": "uuid",
    "bus_id": "pci.bus_id",
    "throttle_mask": "clocks_event_reasons.active",
    "sm": "utilization.gpu",
    "mem": "utilization.memory",
    "vram_total": "memory.total",
    "vram_used": "memory.used",
    "vram_free": "memory.free",
    "temp": "temperature.gpu",
    "power": "power.draw",
    "power_limit": "power.limit",
    "sm_clock": "clocks.sm/clocks.gr",
    "max_sm_clock": "clocks.max.sm",
}
"""The nvidia-smi query field an inferred column is taken for (for the notes)."""
MAP_KEYS_OF_ROLES: tuple[str, ...] = (
    "time",
    "gpu",
    "name",
    "uuid",
    "sm",
    "mem",
    "vram_total",
    "vram_used",
    "vram_free",
    "temp",
    "power",
    "power_limit",
    "sm_clock",
)
"""Roles a ``--map`` key names by the same word (the suggested line uses them)."""
_IDENTITY = ("time", "uuid", "bus_id", "name", "gpu")
MAX_INDEX = 15
TEMP_MIN_C = 15.0
"""A GPU reading below this is not a temperature (no GPU runs colder than its room)."""
TEMP_MAX_STEP_C = 30.0
"""A jump larger than this between two readings of one GPU is not a temperature."""
IDLE_BELOW = 15.0
"""A 0-100 column that falls below this at some poll is a utilization (an idle GPU)."""
TEMP_C = (20.0, 95.0)
TEMP_STEP_C = 20.0
"""A bare 0-100 column is a plausible temperature when its readings stay in TEMP_C
and one GPU's never move by more than this between polls."""
UTIL_STEP_RATIO = 3.0
"""A utilization beside a temperature, neither idling: it moves between polls at least
this many times as much on average (a busy GPU's 84-100 against a degree or two)."""
TEMP_MEAN_STEP_C = 3.0
"""A temperature moves at most this much a poll on average (a GPU warming under load
gains a degree or two a second; a utilization.memory of 92, 95, 86 does not)."""
BEHAVIOUR_POLLS = 8
"""Readings per GPU needed before two 0-100 columns are told apart by behaviour."""
CLOCK_MHZ = (100.0, 3000.0)
POWER_MAX_W = 1500.0
MIB_MAX = 400_000.0


@dataclass
class Inference:
    """Columns read from the values of a headerless file, and what stays open."""

    columns: list[Column] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unknown: dict[int, str] = field(default_factory=dict)
    """0-based position -> what its values could be (a bare-number column left open)."""
    reason: str | None = None
    """Why the file cannot be read without --map (None: it can)."""

    def inferred(self) -> dict[int, str]:
        """1-based column -> the nvidia-smi field it was taken for."""
        return {
            c.position + 1: ROLE_FIELDS.get(c.role, c.role)
            for c in sorted(self.columns, key=lambda c: c.position)
        }


def _values(rows: list[list[str]], i: int) -> list[float]:
    return [float(r[i]) for r in rows if _NUMERIC_RE.match(r[i].strip())]


def _cycles(values: list[float]) -> bool:
    """0, 1, ..., N-1 over and over (N >= 2): the rows of one poll, GPU by GPU."""
    count = int(max(values, default=0)) + 1
    return count >= 2 and all(x == i % count for i, x in enumerate(values))


def _per_gpu(rows: list[list[str]], i: int, gpu: int | None) -> dict[str, list[float]]:
    series: dict[str, list[float]] = {}
    for r in rows:
        if _NUMERIC_RE.match(r[i].strip()):
            series.setdefault("" if gpu is None else r[gpu].strip(), []).append(float(r[i]))
    return series


def _constant(rows: list[list[str]], i: int, gpu: int | None) -> bool:
    return all(len(set(xs)) == 1 for xs in _per_gpu(rows, i, gpu).values())


def _max_step(rows: list[list[str]], i: int, gpu: int | None) -> float:
    steps = [
        abs(b - a) for xs in _per_gpu(rows, i, gpu).values() for a, b in itertools.pairwise(xs)
    ]
    return max(steps, default=0.0)


def _never_below(rows: list[list[str]], i: int, others: list[int]) -> bool:
    """Column ``i`` is at least every column of ``others`` in every row."""
    return all(_row_max(r, i, [*others, i]) for r in rows)


def infer_columns(rows: list[list[str]], path: Path | None = None) -> Inference:
    """The columns of a headerless ``--query-gpu`` CSV from what their values look like.

    With units in the cells, each unit names its field (``%``, ``MiB``, ``W``,
    ``MHz``) and the order everybody queries them settles the rest; a lone bare
    integer column of 15-110 beside them is temperature.gpu (nvidia-smi prints it
    without a unit). Without units (``nounits``), bare numbers are read by range
    and shape, and only when one reading is left: decimals are watts (power.draw;
    a second, constant and never lower, is power.limit), integers above 3000 are
    MiB (the one constant per GPU and never below the others is memory.total, the
    rest used then free), one integer column of 100-3000 with no MiB column is the
    graphics clock, and 0-100 integers are utilization.gpu when they fall below
    15 or jump by over 30 between polls, temperature.gpu when they never do --
    but only when exactly one column of each kind is there to be told apart. A
    small integer right after the timestamp that counts 0..N-1 over the rows of
    each poll (or is 0 on every row) is the index. Anything left open makes the
    file unreadable without ``--map``, and :attr:`Inference.reason` gives the
    ``--map`` line with the columns found filled in."""
    ncols = len(rows[0])
    shapes = column_shapes(rows)
    found = Inference()
    columns, notes = found.columns, found.notes
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
    units = any(shape in ("%", "MiB", "W", "MHz") for shape in shapes)
    if "time" not in shapes:
        epoch = epoch_column(rows, shapes)
        if epoch is not None:
            shapes[epoch] = "time"
            notes.append(f"column {epoch + 1}: epoch times (increasing)")
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
    if mib_cols:
        _memory(rows, mib_cols, columns, notes, None)
    # A small integer right at the start (or after the timestamp) is the GPU index.
    gpu: int | None = None
    if plain_cols:
        first = plain_cols[0]
        lead = first == 0 or (first == 1 and shapes[0] == "time")
        ints = _values(rows, first)
        metric_known = any(c.role not in _IDENTITY for c in columns)
        small = bool(ints) and all(x == int(x) and 0 <= x <= MAX_INDEX for x in ints)
        counts = _cycles(ints) or (not units and set(ints) == {0.0} and len(plain_cols) > 1)
        if lead and small and (metric_known or counts):
            gpu = first
            columns.append(Column(first, "gpu", MIB, f"column {first + 1}"))
            plain_cols.pop(0)
            if set(ints) == {0.0}:
                notes.append(f"column {first + 1}: 0 on every row, taken as the index (one GPU)")
    metric_known = any(c.role not in _IDENTITY for c in columns)
    if not metric_known and len(plain_cols) == 1:
        i = plain_cols[0]
        bare = _values(rows, i)
        if bare and all(0 <= x <= 100 for x in bare):
            columns.append(Column(i, "sm", MIB, f"column {i + 1}"))
            notes.append(
                f"column {i + 1}: bare numbers 0-100 taken as utilization.gpu (override with --map)"
            )
            plain_cols = []
    if plain_cols and units:
        temps = [i for i in plain_cols if _temperature_only(rows, i, gpu)]
        if len(temps) == 1 and "temp" not in {c.role for c in columns}:
            columns.append(Column(temps[0], "temp", MIB, f"column {temps[0] + 1}"))
            notes.append(
                f"column {temps[0] + 1}: bare integers 15-110 beside values with units "
                "taken as temperature.gpu (nvidia-smi prints it without a unit)"
            )
            plain_cols.remove(temps[0])
        if plain_cols:
            notes.append(
                "unidentified columns "
                + ", ".join(str(i + 1) for i in plain_cols)
                + " (bare numbers; name them with --map, e.g. --map temp=5)"
            )
    elif plain_cols:
        _bare_numbers(rows, plain_cols, gpu, found)
    if found.columns and (not units or found.unknown):
        notes.append(
            "columns inferred from their values: "
            + ", ".join(f"{k}={name}" for k, name in found.inferred().items())
        )
    if found.unknown:
        found.reason = _map_line(found, ncols, path)
    elif not any(c.role not in _IDENTITY for c in columns):
        found.reason = (
            f"no header and {ncols} column(s) of bare numbers: cannot tell which metric is "
            "which; say so with --map sm=1,vram_used=2 (1-based column numbers)"
        )
    return found


def _temperature_only(rows: list[list[str]], i: int, gpu: int | None) -> bool:
    values = _values(rows, i)
    return (
        bool(values)
        and all(x == int(x) and TEMP_MIN_C <= x <= 110 for x in values)
        and _max_step(rows, i, gpu) <= TEMP_MAX_STEP_C
    )


def _memory(
    rows: list[list[str]], cols: list[int], columns: list[Column], notes: list[str], gpu: int | None
) -> list[int]:
    """Name MiB columns (memory.total, then used, free); returns the ones left open."""
    total = None
    if len(cols) >= 2:
        # memory.total is the column never below any other MiB column in any row.
        for i in cols:
            if _never_below(rows, i, cols) and (gpu is None or _constant(rows, i, gpu)):
                total = i
                break
    rest = [i for i in cols if i != total]
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
    return rest[2:]


def _bare_numbers(
    rows: list[list[str]], cols: list[int], gpu: int | None, found: Inference
) -> None:
    """Bare numbers (``nounits``) by range and shape; what stays open goes to
    ``found.unknown``."""
    decimals, percents, clocks, mibs = [], [], [], []
    for i in cols:
        values = _values(rows, i)
        cells = [r[i].strip() for r in rows if _NUMERIC_RE.match(r[i].strip())]
        if not values or min(values) < 0:
            found.unknown[i] = "a number"
        elif any("." in c for c in cells):
            if max(values) <= POWER_MAX_W:
                decimals.append(i)
            else:
                found.unknown[i] = "a decimal number"
        elif max(values) <= 100:
            percents.append(i)
        elif min(values) >= CLOCK_MHZ[0] and max(values) <= CLOCK_MHZ[1]:
            clocks.append(i)
        elif max(values) <= MIB_MAX:
            mibs.append(i)
        else:
            found.unknown[i] = "a number"
    columns, notes = found.columns, found.notes
    # Watts: nvidia-smi prints power with two decimals, nothing else of this range.
    if len(decimals) == 1:
        columns.append(Column(decimals[0], "power", MIB, f"column {decimals[0] + 1}"))
    elif len(decimals) == 2:
        a, b = decimals
        limit = next(
            (i for i in (b, a) if _constant(rows, i, gpu) and _never_below(rows, i, decimals)),
            None,
        )
        if limit is None:
            found.unknown.update(dict.fromkeys(decimals, "power or power_limit"))
        else:
            draw = a if limit == b else b
            columns.append(Column(draw, "power", MIB, f"column {draw + 1}"))
            columns.append(Column(limit, "power_limit", MIB, f"column {limit + 1}"))
    else:
        found.unknown.update(dict.fromkeys(decimals, "power or power_limit"))
    # MiB: integers too large for anything else. memory.total is constant per GPU
    # and never below any other MiB-sized column (a clock-sized one included).
    if mibs:
        pool = mibs + clocks
        total = next(
            (
                i
                for i in mibs
                if len(pool) > 1 and _constant(rows, i, gpu) and _never_below(rows, i, pool)
            ),
            None,
        )
        if total is not None:
            columns.append(Column(total, "vram_total", MIB, f"column {total + 1}"))
        rest = [i for i in mibs if i != total]
        for i, role in zip(rest, ("vram_used", "vram_free"), strict=False):
            columns.append(Column(i, role, MIB, f"column {i + 1}"))
        found.unknown.update(dict.fromkeys(rest[2:], "vram_used or vram_free"))
        notes.append(
            "MiB-sized columns read as "
            + ", ".join(f"{c.position + 1}={c.role}" for c in columns if c.role.startswith("vram"))
        )
    if len(clocks) == 1 and not mibs:
        columns.append(Column(clocks[0], "sm_clock", MIB, f"column {clocks[0] + 1}"))
    else:
        why = "sm_clock or memory (vram_used, vram_free)" if mibs else "a clock (sm_clock ...)"
        found.unknown.update(dict.fromkeys(clocks, why))
    # 0-100: utilization or temperature, told apart only one against one: the
    # utilization falls to idle (below 15) at some poll, the temperature is a
    # plausible reading (20-95) that moves slowly, so it stays up while the GPU idles.
    idles = [i for i in percents if min(_values(rows, i)) < IDLE_BELOW]
    temps = [i for i in percents if i not in idles and _plausible_temperature(rows, i, gpu)]
    others = [i for i in percents if i not in idles and i not in temps]
    if len(idles) == 1 and not others and len(temps) <= 1:
        columns.append(Column(idles[0], "sm", MIB, f"column {idles[0] + 1}"))
        notes.append(
            f"column {idles[0] + 1}: 0-100 values that fall below {IDLE_BELOW:g}: utilization.gpu"
        )
        if temps:
            columns.append(Column(temps[0], "temp", MIB, f"column {temps[0] + 1}"))
            notes.append(
                f"column {temps[0] + 1}: slowly moving values of {TEMP_C[0]:g}-{TEMP_C[1]:g}, "
                "up while the GPU idles: temperature.gpu"
            )
    elif len(percents) == 2 and (told := _utilization_beside_temperature(rows, percents, gpu)):
        util, temp, why = told
        columns.append(Column(util, "sm", MIB, f"column {util + 1}"))
        columns.append(Column(temp, "temp", MIB, f"column {temp + 1}"))
        notes.append(f"column {util + 1}: 0-100 values that {why}: utilization.gpu")
        notes.append(
            f"column {temp + 1}: values of {TEMP_C[0]:g}-{TEMP_C[1]:g} moving "
            f"{_mean_step(rows, temp, gpu):.1f} a poll on average: temperature.gpu"
        )
    else:
        found.unknown.update(dict.fromkeys(idles + others, "utilization (sm or mem)"))
        found.unknown.update(dict.fromkeys(temps, "temperature or utilization (temp, sm, mem)"))


def _mean_step(rows: list[list[str]], i: int, gpu: int | None) -> float:
    """The mean move of one GPU's readings between polls."""
    steps = [
        abs(b - a) for xs in _per_gpu(rows, i, gpu).values() for a, b in itertools.pairwise(xs)
    ]
    return sum(steps) / len(steps) if steps else 0.0


def _utilization_beside_temperature(
    rows: list[list[str]], cols: list[int], gpu: int | None
) -> tuple[int, int, str] | None:
    """(utilization, temperature, why) of two 0-100 columns told apart by behaviour,
    or None. The temperature is a plausible one (20-95, never a step over 20); the
    utilization sits at a bound (0 or 100, which a GPU's temperature does not reach)
    or jumps: its mean move between polls at least :data:`UTIL_STEP_RATIO` times the
    temperature's (at least 0.5, a degree rounded). The temperature moves at most
    :data:`TEMP_MEAN_STEP_C` a poll on average, and each GPU has at least
    :data:`BEHAVIOUR_POLLS` readings to judge by. Exactly one way round must hold."""
    if any(len(xs) < BEHAVIOUR_POLLS for xs in _per_gpu(rows, cols[0], gpu).values()):
        return None
    told = []
    for util, temp in itertools.permutations(cols):
        if (
            not _plausible_temperature(rows, temp, gpu)
            or _mean_step(rows, temp, gpu) > TEMP_MEAN_STEP_C
        ):
            continue
        values = _values(rows, util)
        util_step = _mean_step(rows, util, gpu)
        temp_step = max(_mean_step(rows, temp, gpu), 0.5)
        if 0 in values or 100 in values:
            bound = "0" if 0 in values else "100"
            told.append((util, temp, f"reach {bound} (a temperature does not)"))
        elif util_step >= UTIL_STEP_RATIO * temp_step:
            told.append((util, temp, f"jump {util_step:.1f} a poll on average"))
    return told[0] if len(told) == 1 else None


def _plausible_temperature(rows: list[list[str]], i: int, gpu: int | None) -> bool:
    values = _values(rows, i)
    return (
        bool(values)
        and all(x == int(x) and TEMP_C[0] <= x <= TEMP_C[1] for x in values)
        and _max_step(rows, i, gpu) <= TEMP_STEP_C
    )


def _map_line(found: Inference, ncols: int, path: Path | None) -> str:
    """The refusal: which columns are open, and the --map line that reads the file
    with the columns found filled in and ``?`` for the rest."""
    entries = {c.position: c.role for c in found.columns if c.role in MAP_KEYS_OF_ROLES}
    entries.update(dict.fromkeys(found.unknown, "?"))
    spec = ",".join(f"{role}={pos + 1}" for pos, role in sorted(entries.items()))
    target = shlex.quote(str(path)) if path is not None else "FILE"
    open_list = "; ".join(f"column {i + 1}: {why}" for i, why in sorted(found.unknown.items()))
    return (
        f"no header, and {len(found.unknown)} of its {ncols} column(s) hold bare numbers that "
        f"could be more than one metric ({open_list}). Read it with this command, each ? "
        "replaced by the --map key of that column (temp, sm, mem, vram_used, vram_free, "
        f"power, power_limit, sm_clock):\n      gputop-hints report --map {spec} {target}"
    )


def names_columns(first: list[str], rows: list[list[str]]) -> bool:
    """Whether ``first`` is a header over ``rows`` rather than a row of values: in at
    least half of the columns whose cells below are numbers (three in four or more)
    it holds a word (``epoch``, ``gpu_id: 0/utilization.gpu (%)``). A headerless file
    guessed from its values would otherwise take a header it does not know as one
    bad line and read the columns under it for what their values look like."""
    numeric = worded = 0
    for i, cell in enumerate(first):
        below = [r[i] for r in rows if i < len(r) and r[i].strip()]
        if len(below) < 2 or sum(map(_numeric, below)) * 4 < len(below) * 3:
            continue
        numeric += 1
        text = cell.strip().strip('"')
        if text[:1].isalpha() and not v.is_unknown(text) and not _numeric(text):
            worded += 1
    return numeric > 0 and worded * 2 >= numeric


def _numeric(cell: str) -> bool:
    try:
        return v.number(cell) is not None
    except v.CellError:
        return False
