"""Training logs with GPU readings in their lines: ``gpu_util=95% gpu_mem=30.1GB``.

People's own scripts log the GPU beside the loss, through ``logging`` or
``print``, as names and values in free text rather than as a table:

    2024-12-04 10:00:00 INFO step=100 loss=2.31 gpu_util=95% gpu_mem=30112MiB
    [2024-12-04 10:00:00] Step 100 | GPU 0: util 95% mem 31.2GB/80.0GB | GPU 1: util 33% ...
    2024-12-04 10:00:00,gpu=1,util=34,mem_used=20000,mem_total=81920

A reading is a number (a unit after it allowed: ``%``, ``MiB``/``GB``, ``W``,
``C``, ``MHz``; ``used/total`` for VRAM and ``draw/limit`` for power) after a
name the CSV readers know (:mod:`._header_names`: ``gpu_util``, ``memory.used``,
``GPU Load``, ``temp``, ``power`` ...), the name being the one to three words
just before it. Which GPU: a name that numbers one (``gpu0_util``), or the last
``GPU N`` / ``gpu=N`` / ``cuda:N`` before it in the line. Before any of those a
name must say it is the GPU's (``gpu_util``, ``vram_used``, ``utilization.gpu``):
a bare ``util`` or ``mem`` could be the CPU's, and after ``CPU``, ``RAM``,
``host`` or ``system`` nothing is read until a GPU is named again. A name
without a GPU number in a log that never names one is GPU 0's.

The time is the first date-and-time in the line (ISO 8601, nvidia-smi's, ctime
...) or a ``time=``/``timestamp=`` reading; without either, samples are a
``--interval`` apart. Lines with no GPU reading (a loss alone, a banner) are
skipped and counted (``header["other_lines"]``); a reading out of its range
(``gpu_util=140%``) counts its line bad and leaves that value unknown.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._datelines import parse_date
from gputop_hints.sources.files._header_names import (
    ALIASES,
    ALLOCATOR_NOTE,
    SIZE_SUFFIX,
    allocator_figure,
    normalise_name,
)
from gputop_hints.sources.files._table import Assembler, Column, Row, assemble, bad, row_time
from gputop_hints.sources.files._tabular import table_stream
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files._wide import gpu_column
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import (
    METRIC_MEMORY_ACCESS,
    METRIC_POWER,
    METRIC_SM,
    METRIC_TEMPERATURE,
    METRIC_VRAM,
    ReadCounters,
)
from gputop_hints.units import MIB

FORMAT = "kv-lines"
LABEL = "GPU readings in log lines"

_READING = re.compile(
    r"(?<![\w.])(-?\d+(?:\.\d+)?)\s*"
    r"(%|[KMGT](?:i?B)?(?![a-z])|B(?![a-z])|W(?![a-z])|°?C(?![a-z])|MHz(?![a-z]))?"
    r"(?:\s*/\s*(\d+(?:\.\d+)?)\s*(%|[KMGT](?:i?B)?(?![a-z])|B(?![a-z])|W(?![a-z]))?)?",
    re.IGNORECASE,
)
"""A number, its unit, and a ``/ total`` after it."""
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")
_BOUNDARY = re.compile(r"[|,;()\[\]{}]")
"""What ends the name of a reading: the pieces of a line are set apart by these."""
_GPU_WORD = re.compile(r"(?:gpu|cuda)[_\-:#]?(\d{1,3})$", re.IGNORECASE)
"""``GPU0`` / ``cuda:1`` written as one word."""

_HOST_WORDS = frozenset({"cpu", "cpus", "ram", "host", "system", "sys", "disk", "net", "io"})
_GPU_MARKERS = frozenset({"gpu", "gpu_id", "gpu_index", "gpu_idx", "cuda", "device", "device_id"})
_GPU_SAYING = ("gpu", "vram", "cuda", "fb_", "utilization_gpu", "sm_")
"""A name that says it is the GPU's (read before any GPU is named in the line)."""

_ROLES = (
    "sm", "mem", "vram_used", "vram_total", "vram_free", "temp", "power", "power_limit", "sm_clock",
)  # fmt: skip
_SECOND = {"vram_used": "vram_total", "power": "power_limit"}
"""What the number after ``/`` is, for a reading of this role."""
_EXTRA: dict[str, str] = {
    "memory": "vram_used",
    "mem": "vram_used",
    "load": "sm",
    "usage": "sm",
}
"""Names read only in a GPU's piece of a line, where they can only be its own
(``GPU 0: util 95% mem 31.2GB/80GB``); VRAM only with a size unit (``mem 45%``
says neither VRAM nor memory-access %). A caching allocator's figure (PyTorch's
``gpu_memory_allocated``, ``reserved memory``: see ``allocator_figure``) is not
VRAM used: never read."""
_ALLOCATOR_NAME = re.compile(
    r"\b[A-Za-z_.]*?(?:mem|memory)[_ .]?(?:allocated|alloc|reserved|cached)\b[A-Za-z_]*"
    r"|\b(?:allocated|reserved|cached)[_ ](?:mem|memory)\b",
    re.IGNORECASE,
)
"""An allocator's figure named in a line (for the note: left unread)."""

_TIME_NAMES = frozenset(
    {"time", "timestamp", "ts", "unix_time", "unixtime", "wall_time", "walltime"}
)
"""Names of a reading that is the line's time (seconds since 1970); ``epoch``, ``t`` or
``elapsed`` in a training log are an epoch count or a duration, not the time."""

SNIFF_LINES = 3
"""Lines with a GPU reading the head must have."""


@dataclass
class KvPlan:
    columns: list[Column]
    """One per role seen in the head, labelled with the first name it had."""
    rows: list[Row] = field(default_factory=list)
    numbered: bool = True
    """Some line names its GPU (else every reading is GPU 0's)."""
    timed: bool = False
    allocator: list[str] = field(default_factory=list)
    """Allocator figures named in the head (not read), for the note."""


@dataclass
class _Line:
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    time: tuple[float | None, bool] = (None, False)
    numbered: bool = False


def _key(text: str) -> tuple[list[str], bool]:
    """The words that may name a reading (the last piece of ``text``, at most three
    words), and whether that piece speaks of the host (CPU, RAM ...)."""
    piece = _BOUNDARY.split(text)[-1]
    words = _WORD.findall(piece)
    host = any(w.lower().rstrip(":") in _HOST_WORDS for w in words)
    return words[-3:], host


def _role(words: list[str], scoped: bool) -> tuple[str, str | None, str, int | None] | None:
    """(role, unit in the name, the name as written, GPU number in it) for the longest
    run of the last words that names a reading; None when none does."""
    if words and any(
        allocator_figure(normalise_name(" ".join(words[-n:]))[0]) for n in (1, 2)
    ):
        return None  # 'gpu_memory_allocated', 'reserved memory': not VRAM used
    for n in range(len(words), 0, -1):
        raw = " ".join(words[-n:])
        numbered = gpu_column(raw)
        if numbered is not None:
            return numbered[1], numbered[2], raw, numbered[0]
        name, unit = normalise_name(raw)
        role = ALIASES.get(name)
        if role == "gpu" or name in _GPU_MARKERS:
            return "gpu", None, raw, None
        if name in _TIME_NAMES:
            return "time", unit, raw, None
        if role in _ROLES and (scoped or name.startswith(_GPU_SAYING)):
            return role, unit, raw, None
        if scoped and name in _EXTRA:
            return _EXTRA[name], unit, raw, None
    return None


_LETTER_SIZE = {"k": 2.0**10, "m": 2.0**20, "g": 2.0**30, "t": 2.0**40}
"""``30.1G``: sizes as PyTorch's and many scripts' messages write them (binary)."""


@functools.lru_cache(maxsize=4096)
def _value(role: str, number: str, unit: str | None, name_unit: str | None) -> float | int | None:
    """A reading in the model's units; raises ValueError when it cannot be this role's.
    Remembered by its text (a log repeats a handful of utilizations and sizes; an
    error is not remembered, so it is raised again)."""
    value = float(number)
    unit = (unit or "").lower().replace("°", "") or (name_unit or "").lower() or None
    if role in ("sm", "mem"):
        if unit not in (None, "%", "pct", "percent") or not 0 <= value <= 100:
            raise ValueError(f"{number}{unit or ''} is not a percentage")
        return value
    if role.startswith("vram"):
        if unit is None:
            if value < 64:  # 30.1 what? GB, a share? (MiB below 64 is no GPU's use)
                return None
            scale: float = MIB
        else:
            scale = SIZE_SUFFIX.get(unit, v.BYTE_UNITS.get(unit, _LETTER_SIZE.get(unit, 0.0)))
        if not scale:
            raise ValueError(f"{number}{unit or ''} is not a size")
        return round(value * scale)
    if role == "temp":
        if unit not in (None, "c", "celsius") or not -60 <= value <= 200:
            raise ValueError(f"{number}{unit or ''} is not a temperature")
        return value
    if role == "sm_clock":
        if unit not in (None, "mhz") or not 0 <= value <= 100000:
            raise ValueError(f"{number}{unit or ''} is not a clock")
        return round(value)
    if unit not in (None, "w", "watts") or not 0 <= value <= 20000:  # power
        raise ValueError(f"{number}{unit or ''} is not a power")
    return value


_SET, _MARKER, _TIME, _READ = range(4)

Step = tuple[int, int, Any, Any, Any, Any]
"""(which number of the line, what it is, and its arguments): :func:`_plan`'s steps."""


@dataclass(frozen=True)
class _Plan:
    count: int
    """The numbers :data:`_READING` finds in the line."""
    steps: tuple[Step, ...]
    numbered: bool


def _plan(text: str) -> _Plan:
    """What each number of a line is, worked out from the words around it -- the same
    for every line that differs from it only in its numbers (:func:`read_line` keeps
    the plan by the line's shape). A ``GPU N`` number is taken to name a GPU."""
    steps: list[Step] = []
    named = host = numbered = False  # a GPU named (and not left for the host) yet
    last = count = 0
    for k, m in enumerate(_READING.finditer(text)):
        count += 1
        words, host_here = _key(text[last : m.start()])
        last = m.end()
        if host_here:
            host, named = True, False
            steps.append((k, _SET, None, None, None, None))
        word = _GPU_WORD.match(words[-1]) if words else None
        if word is not None:  # 'GPU0: util 95%'
            host, named = False, True
            numbered = True
            steps.append((k, _SET, int(word.group(1)), None, None, None))
        elif any(w.lower() == "gpu" for w in words):  # 'GPU stats: utilization=95'
            host, named = False, True
        _number, unit, second, _second_unit = m.groups()
        found = _role(words, named)
        if found is None or found[0] == "gpu":
            if words and unit == "%" and second is None and (word or found):
                # 'GPU: 95%', 'GPU0: 95%': the GPU's utilization
                steps.append((k, _READ, "sm", None, words[-1], None))
            elif found is not None and unit is None and second is None:
                host, named = False, True  # 'GPU 1', 'gpu=1', 'cuda:1'
                numbered = True
                steps.append((k, _MARKER, None, None, None, None))
            continue
        role, name_unit, raw, index = found
        if role == "time":
            steps.append((k, _TIME, None, None, None, None))
            continue
        if host and index is None:
            continue
        if role.startswith("vram") and (unit or "").endswith("%"):
            continue  # a share of VRAM (or of memory time: 'mem 45%' says not which)
        if index is not None:
            numbered = True
        steps.append((k, _READ, role, name_unit, raw, index))
    return _Plan(count, tuple(steps), numbered)


_LEADING = re.compile(
    r"\[?(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(\.\d+)?(?![\d.])"
    r"(?!\s*(?:Z|UTC|[+-]\d\d:?\d\d))"
).match
"""An ISO time without a zone at the start of the line (Python ``logging``'s), read
without :func:`parse_date`'s searches: the same time it gives."""


def _leading_time(text: str) -> float | None:
    m = _LEADING(text)
    if m is None:
        return None
    y, mo, d, hh, mi, ss, frac = m.groups()
    try:
        return v.local_time(int(y), int(mo), int(d), int(hh), int(mi), int(ss), None) + (
            float(frac) if frac else 0.0
        )
    except (ValueError, OverflowError):
        return None


_SHAPE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")
"""Every number :data:`_READING` reads, for a line's shape (its numbers made ``0``)."""
_PLANS: dict[str, _Plan] = {}
_MAY_READ = re.compile(r"gpu|cuda|vram|device|fb_|sm_", re.IGNORECASE).search
"""A line without any of these names no GPU and no name of a GPU's: it reads nothing."""


def read_line(text: str) -> _Line:
    """The GPU readings of one line, by GPU number, with its time."""
    if _MAY_READ(text) is None:
        return _Line()
    shape = _SHAPE.sub("0", text)
    plan = _PLANS.get(shape)
    if plan is None:
        plan = _plan(text)
        if len(_PLANS) >= 4096:
            _PLANS.clear()
        _PLANS[shape] = plan
    numbers = _READING.findall(text)
    if len(numbers) != plan.count:  # not the shape's numbers after all
        plan = _plan(text)
    return _apply(plan, numbers, text)


def _apply(plan: _Plan, numbers: list[tuple[str, str, str, str]], text: str) -> _Line:
    out = _Line(numbered=plan.numbered)
    gpu: int | None = None  # the GPU the line is speaking of, once named
    time_reading: str | None = None
    for k, kind, a, b, raw, index in plan.steps:
        number, unit, second, second_unit = numbers[k]
        if kind == _SET:
            gpu = a
            continue
        if kind == _MARKER:
            if not (number.isdigit() and int(number) < 4096):
                out.problems.append(f"{raw or 'GPU'} {number!r} is no GPU number")
                break  # what follows was read as that GPU's
            gpu = int(number)
            continue
        if kind == _TIME:
            time_reading = number
            continue
        role, name_unit = a, b
        target = index if index is not None else (gpu if gpu is not None else 0)
        fields = out.rows.setdefault(target, {})
        try:
            value = _value(role, number, unit or None, name_unit)
            if value is None:
                continue
            fields[role] = value
            out.labels.setdefault(role, raw)
            if second and role in _SECOND:
                other = _SECOND[role]
                total = _value(other, second, second_unit or unit or None, name_unit)
                if total is not None:
                    fields[other] = total
                    out.labels.setdefault(other, raw)
        except ValueError as exc:
            out.problems.append(f"{raw}: {exc}")
    if out.rows:
        stamp = _leading_time(text)
        if stamp is None:
            stamp = parse_date(text)
        if stamp is not None:
            out.time = (stamp, True)
        elif time_reading is not None:
            try:
                stamp, absolute = row_time(time_reading)
            except v.CellError:
                stamp, absolute = None, False
            if stamp is not None and absolute:  # seconds since 1970 (or ms, us, ns)
                out.time = (stamp, True)
    return out


def _rows(line_number: int, found: _Line) -> Iterator[Row]:
    ts, absolute = found.time
    for index in sorted(found.rows):
        fields = found.rows[index]
        if any(fields.get(r) is not None for r in ("sm", "mem", "vram_used", "temp", "power")):
            yield Row(line_number, ts, absolute, index, dict(fields))


def sniff(head: Head, mapping: Mapping[str, str] | None) -> KvPlan | str:
    if mapping:
        return "--map is for tables; GPU readings in log lines are read by their names"
    reading = 0
    labels: dict[str, str] = {}
    rows: list[Row] = []
    numbered = timed = False
    allocator: list[str] = []
    for number, line in enumerate(head.lines, start=1):
        if not line.strip() or len(line) > 4096:
            continue
        if len(allocator) < 4:
            for m in _ALLOCATOR_NAME.finditer(line):
                if m.group(0) not in allocator and len(allocator) < 4:
                    allocator.append(m.group(0))
        found = read_line(line)
        lines_rows = list(_rows(number, found))
        if not lines_rows:
            continue
        reading += 1
        rows += lines_rows
        numbered = numbered or found.numbered
        timed = timed or found.time[0] is not None
        for role, raw in found.labels.items():
            labels.setdefault(role, raw)
    if reading < SNIFF_LINES:
        return (
            f"{reading} line(s) with a GPU reading named like 'gpu_util=95%' in the head "
            f"(needs {SNIFF_LINES})"
        )
    columns = [Column(i, role, 1.0, raw) for i, (role, raw) in enumerate(labels.items())]
    if timed:
        columns.append(Column(len(columns), "time", 1.0, "the time in each line"))
    return KvPlan(columns, rows, numbered, timed, allocator)


def read(source: TextSource, counters: ReadCounters, assembler: Assembler) -> Iterator[Snapshot]:
    other = 0
    counters.found["other_lines"] = 0

    def rows(lines: Iterable[tuple[int, str]]) -> Iterator[Row]:
        nonlocal other
        for number, text in lines:
            if len(text) > 65536:  # no log line of readings is this long
                bad(counters, number, "line too long for a log line")
                continue
            found = read_line(text)
            if found.problems:
                bad(counters, number, found.problems[0])
            made = False
            for row in _rows(number, found):
                made = True
                yield row
            if not made and text.strip():
                other += 1
                counters.found["other_lines"] = other

    return assemble(rows(source.lines()), assembler)


def open_kv(
    path: Path, plan: KvPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of a log with GPU readings in its lines: one snapshot per tick."""
    names = ", ".join(f"{c.label} ({c.role})" for c in plan.columns if c.role != "time")
    notes = [f"{LABEL}: {names}"]
    if not plan.numbered:
        notes.append("no GPU is numbered in the lines: read as GPU 0")
    if plan.allocator:
        notes.append(f"{', '.join(plan.allocator)}: {ALLOCATOR_NOTE}")

    def rows(
        source: TextSource, counters: ReadCounters, assembler: Assembler, _vram: int | None
    ) -> Iterator[Snapshot]:
        return read(source, counters, assembler)

    return table_stream(
        path, FORMAT, LABEL, plan.columns, plan.rows, notes, interval_s, mapping, rows
    )


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_kv,
    metrics=frozenset(
        {METRIC_SM, METRIC_MEMORY_ACCESS, METRIC_VRAM, METRIC_TEMPERATURE, METRIC_POWER}
    ),
    docs="GPU readings in log lines",
)
