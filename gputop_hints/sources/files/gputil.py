"""GPUtil output that scripts append to a log: ``key: value`` blocks and ``showUtilization``.

People print GPUtil's ``getGPUs()`` fields, one block per timestamp::

    === 2024-10-31 23:04:10 ===
    GPU 0: NVIDIA GeForce RTX 3060
    GPU Load: 99%
    GPU Memory: 812 / 6144MB
    Temperature: 65 C

(also ``GPU ID: 0``, ``GPU Name: ...``, ``Memory Used: 812MB``, ``Memory Total:
6144MB``, several ``key: value`` pairs on one line split by commas), or append
``GPUtil.showUtilization()`` after a date line::

    2024-10-31 23:04:10
    | ID | GPU | MEM |
    ------------------
    |  0 | 99% | 13% |

Keys are read as the generic CSV reads header names (:mod:`._header_names`),
after GPUtil's own (``ID``, ``Load``, ``MEM``). GPUtil's memory utilisation
(``MEM``, ``memoryUtil``) is the share of VRAM in use, not memory-bus activity:
it gives VRAM used when the total is known (a column, or ``--map vram_total=SIZE``).
GPUtil reports sizes in MB (MiB, from nvidia-smi).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._datelines import date_line
from gputop_hints.sources.files._header_names import ALIASES, normalise_name
from gputop_hints.sources.files._table import Assembler, Column, Row, assemble, parse_row
from gputop_hints.sources.files._tabular import table_stream
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import (
    METRIC_POWER,
    METRIC_SM,
    METRIC_TEMPERATURE,
    METRIC_VRAM,
    ReadCounters,
)
from gputop_hints.units import MIB

FORMAT = "gputil"
LABEL = "GPUtil output"

SHARE = "vram_share"
"""GPUtil's memoryUtil: VRAM used / total, in percent."""

KEYS = {
    "id": "gpu",
    "load": "sm",
    "gpu": "sm",
    "mem": SHARE,
    "memory": "vram_used",
    "memory_util": SHARE,
    "mem_util": SHARE,
    "memory_utilization": SHARE,
    "memory_utilisation": SHARE,
    "gpu_memory_util": SHARE,
    "memory_usage": "vram_used",
    "gpu_temp": "temp",
}
"""GPUtil's names (its attributes and ``showUtilization`` headers) before the generic ones."""

_GPU_HEAD = re.compile(r"^GPU\s+(\d{1,4})\s*:\s*(.*)$", re.IGNORECASE)
_PAIR_SPLIT = re.compile(r",\s*(?=[A-Za-z][A-Za-z0-9 ._%()-]*:)")
_KV = re.compile(r"^([A-Za-z][A-Za-z0-9 ._%()\[\]-]*?)\s*:\s*(.*)$")
_RATIO = re.compile(r"^\s*([^/]+?)\s*/\s*([^/]+?)\s*$")
_RULE = re.compile(r"^-{4,}$")
_SHARE_AFTER = re.compile(r"\s*\(\s*\d+(?:\.\d+)?\s*%\s*\)\s*$")
"""A percentage in brackets after a used / total pair (``(13.2%)``)."""
_IDENTITY = ("gpu", "name", "uuid")


def role_of(key: str) -> str | None:
    name, _unit = normalise_name(key)
    return KEYS.get(name) or ALIASES.get(name)


def _value(role: str, text: str, line: int, label: str) -> Any:
    """One value read as the tabular readers read a cell of that role."""
    text = text.replace("°", "").strip()
    if role == SHARE:
        try:
            return v.percent(text)
        except v.CellError as exc:
            raise v.CellError(f"{label}: {exc}") from None
    row = parse_row([text], [Column(0, role, MIB, label)], line)
    if role == "gpu":
        return row.key
    return row.fields.get(role)


@dataclass
class _Record:
    line: int
    key: int | None = None
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class Parser:
    """Line by line: blocks stamped by date lines, each GPU a record."""

    counters: ReadCounters
    time: float | None = None
    records: list[_Record] = field(default_factory=list)
    vram_total: int | None = None
    """``--map vram_total=SIZE``: the total of GPUs whose log gives none."""
    table: list[tuple[str, str | None]] | None = None
    """The roles of the ``showUtilization`` columns, once its header is seen."""
    roles: set[str] = field(default_factory=set)

    def _flush(self) -> list[Row]:
        rows: list[Row] = []
        for i, rec in enumerate(self.records):
            f = rec.fields
            if f.get("vram_total") is None and self.vram_total is not None:
                f["vram_total"] = self.vram_total
            share = f.pop(SHARE, None)
            if share is not None and f.get("vram_used") is None and f.get("vram_total"):
                f["vram_used"] = round(f["vram_total"] * share / 100)
            if not any(value is not None for k, value in f.items() if k not in _IDENTITY):
                continue  # nothing read (its bad lines are counted)
            key = rec.key if rec.key is not None else i
            rows.append(Row(rec.line, self.time, self.time is not None, key, f))
        self.records = []
        return rows

    def _record(self, line: int) -> _Record:
        if not self.records:
            self.records.append(_Record(line))
        return self.records[-1]

    def _put(self, number: int, key: str, text: str) -> None:
        role = role_of(key)
        if role is not None and role != "time":  # else a field we do not use (serial...)
            self._set(number, role, key.strip()[:40], text)

    def _set(self, number: int, role: str, label: str, text: str) -> None:
        if role in ("vram_used", "vram_free"):
            # "812.0MB / 6144.0MB (13.2%)": the share after the pair is theirs, computed
            text = _SHARE_AFTER.sub("", text)
        ratio = _RATIO.match(text)
        if role in ("vram_used", "vram_free") and ratio is not None:
            used, total = ratio.groups()  # "812 / 6144MB": used and total, one unit
            unit = re.sub(r"^[\d.\s]+", "", total)
            if unit and not re.search(r"[A-Za-z]", used):
                used += unit
            self._set(number, role, label, used)
            self._set(number, "vram_total", label, total)
            return
        try:
            value = _value(role, text, number, label)
        except v.CellError as exc:
            self.counters.note_bad_line(number, str(exc))
            return
        self.roles.add(role)
        rec = self._record(number)
        if role == "gpu":
            if rec.key is not None or len(rec.fields) > ("name" in rec.fields):
                rec = _Record(number)
                self.records.append(rec)
            rec.key = value
            return
        if role in rec.fields and role != "vram_total":
            rec = _Record(number)
            self.records.append(rec)
        rec.fields[role] = value

    def _table_row(self, number: int, cells: list[str]) -> None:
        assert self.table is not None
        if len(cells) != len(self.table):
            self.counters.note_bad_line(
                number, f"expected {len(self.table)} columns, found {len(cells)}"
            )
            return
        self.records.append(_Record(number))
        for cell, (label, role) in zip(cells, self.table, strict=True):
            if role is not None:
                self._set(number, role, label, cell)

    def feed(self, number: int, line: str) -> list[Row]:
        stripped = line.strip()
        if not stripped or _RULE.match(stripped):
            return []
        if stripped.startswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|") if c.strip()]
            if cells and not any(ch.isdigit() for ch in cells[0]):
                self.table = [(c[:40], role_of(c)) for c in cells]
                return self._flush() if self.records else []
            if self.table is None:
                self.counters.note_bad_line(number, "a table row before its header")
                return []
            self._table_row(number, cells)
            return []
        stamp = date_line(stripped)
        if stamp is not None and not _GPU_HEAD.match(stripped):
            out = self._flush()
            self.time = stamp
            self.table = None
            return out
        head = _GPU_HEAD.match(stripped)
        if head is not None and role_of(head.group(2).partition(":")[0]) is None:
            rec = _Record(number, int(head.group(1)))
            self.records.append(rec)
            name = head.group(2).strip()
            if name:
                rec.fields["name"] = name
            return []
        pairs = [_KV.match(p.strip()) for p in _PAIR_SPLIT.split(stripped)]
        if not all(pairs):
            self.counters.note_bad_line(number, "not a 'key: value' line of GPUtil output")
            return []
        for m in pairs:
            assert m is not None
            self._put(number, m.group(1), m.group(2))
        return []

    def finish(self) -> list[Row]:
        return self._flush()


def read(lines: Iterable[tuple[int, str]], parser: Parser) -> Iterator[Row]:
    for number, line in lines:
        yield from parser.feed(number, line)
    yield from parser.finish()


@dataclass
class GputilPlan:
    rows: list[Row]
    roles: set[str]


def sniff(head: Head, mapping: Mapping[str, str] | None) -> GputilPlan | str:
    lines = head.nonblank[:40]
    table = False
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|") if c.strip()]
        if line.strip().startswith("|") and cells and cells[0].lower() == "id":
            table = table or any(role_of(c) == "sm" for c in cells[1:])
    gpu_heads = sum(1 for line in lines if _GPU_HEAD.match(line.strip()))
    metric_keys = 0
    for line in lines:
        m = _KV.match(line.strip())
        if m is not None and role_of(m.group(1)) in ("sm", SHARE, "vram_used", "vram_total"):
            metric_keys += 1
    dated = any(date_line(line) is not None for line in lines)
    if not table and not (metric_keys >= 2 and (gpu_heads or dated)):
        return "no GPUtil 'GPU Load: 99%' block or '| ID | GPU | MEM |' table"
    parser = Parser(ReadCounters())
    rows = list(read(enumerate(head.lines, start=1), parser))
    if not rows:
        return "GPUtil-like lines, but none reads"
    return GputilPlan(rows, parser.roles)


def open_gputil(
    path: Path, plan: GputilPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    roles = {r for r in plan.roles if r not in (SHARE, "time")}
    notes = [LABEL]
    if SHARE in plan.roles and "vram_total" not in roles:
        notes.append("GPUtil's MEM is a share of VRAM: give --map vram_total=SIZE for bytes")
        if mapping and "vram_total" in {k.lower() for k in mapping}:
            roles.add("vram_used")
    columns = [Column(i, role, MIB, role) for i, role in enumerate(sorted(roles))]

    def rows(
        source: TextSource, counters: ReadCounters, assembler: Assembler, vram_total: int | None
    ) -> Iterator[Snapshot]:
        parser = Parser(counters, vram_total=vram_total)
        return assemble(read(source.lines(), parser), assembler)

    return table_stream(path, FORMAT, LABEL, columns, plan.rows, notes, interval_s, mapping, rows)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_gputil,
    metrics=frozenset({METRIC_SM, METRIC_VRAM, METRIC_TEMPERATURE, METRIC_POWER}),
    docs="GPUtil output",
)
