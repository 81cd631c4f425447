"""``nvidia-smi pmon`` output: per-process SM %, memory % and (``-s m``) VRAM.

::

    # gpu         pid  type    sm   mem   enc   dec   command
    # Idx           #   C/G     %     %     %     %   name
        0      12345     C    45    20     -     -   python
        1          -     -     -     -     -     -   -

Header driven like dmon (its pair of ``#`` lines repeats); ``-o DT`` adds
``Date``/``Time`` columns; ``fb`` (``-s m``, MB read as MiB) is the process's
VRAM. A row of dashes says the GPU runs no process. Per-process SM % is NVML's
process-utilization sample, so a process without a sample reads ``-``: unknown.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gputop_hints.model import GpuProcess, Snapshot
from gputop_hints.sources.files import _polls
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._polls import ProcessRow
from gputop_hints.sources.files._text import Head, HeaderMemo, TextSource
from gputop_hints.sources.files.nvsmi_apps import stream_info
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import (
    METRIC_MEMORY_ACCESS,
    METRIC_PROCESSES,
    METRIC_SM,
    ReadCounters,
    note_bad_line,
)
from gputop_hints.units import MIB

FORMAT = "nvidia-smi-pmon"
LABEL = "nvidia-smi pmon"


@dataclass
class PmonPlan:
    names: list[str]
    rows: list[ProcessRow] = field(default_factory=list)


def header_names(line: str) -> list[str] | None:
    """``# gpu pid type sm ...`` or ``#Date Time gpu pid ...`` -> lower-case names."""
    text = line.strip()
    if not text.startswith("#"):
        return None
    names = [n.lower() for n in text[1:].split()]
    if "gpu" not in names or "pid" not in names:
        return None
    return names


def _row(cells: list[str], names: list[str], line: int) -> ProcessRow:
    if len(cells) < len(names) - 1:
        raise v.CellError(f"expected {len(names)} fields, found {len(cells)}")
    if len(cells) > len(names):  # a command with spaces: the rest is its name
        cells = [*cells[: len(names) - 1], " ".join(cells[len(names) - 1 :])]
    at = dict(zip(names, cells, strict=False))
    gpu = v.integer(at["gpu"], 0, 4095)
    if gpu is None:
        raise v.CellError("no GPU index")
    stamp = None
    if "time" in at:
        stamp, _ = v.dmon_datetime(at.get("date"), at["time"])
    pid = v.integer(at["pid"], 0, 2**31)
    if pid is None:
        return ProcessRow(line, stamp, gpu, None)
    fb = at.get("fb")
    name = v.text(at.get("command", ""))
    proc = GpuProcess(
        pid=pid,
        gpu_index=gpu,
        sm_percent=v.percent(at.get("sm", "-")),
        memory_access_percent=v.percent(at.get("mem", "-")),
        vram_bytes=None if fb is None else v.byte_count(fb, MIB),
        name=name,
        command=name or "",
    )
    return ProcessRow(line, stamp, gpu, proc)


_MEMO_ROWS = 256
"""Rows remembered by their cells but the date and time (cleared when full)."""


class _RowMemo:
    """_row for the rows of one header, remembering those that read: a row whose
    cells but the date and time equal an earlier one's (a process polled again with
    the same figures) takes its GPU and GpuProcess, and only its time is read. Rows
    that raise are not remembered, so errors read as before."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        at = {name: i for i, name in enumerate(names)}  # the last of a repeated name
        self.time_at = at.get("time", -1)
        self.date_at = at.get("date", -1)
        others = [i for i, name in enumerate(names) if name not in ("date", "time")]
        self.rest: Callable[[list[str]], object] = (
            operator.itemgetter(*others) if others else lambda cells: ()
        )
        self.memo: dict[object, tuple[int, GpuProcess | None]] = {}
        self.last_when: tuple[str | None, str] = (None, "")
        """The date and time cells of the last remembered row that read, and its time."""
        self.last_stamp: float | None = None

    def read(
        self, cells: list[str], line: int
    ) -> tuple[float | None, int | str, GpuProcess | None]:
        """The row's time, GPU and process (:func:`_row`'s, as a tuple)."""
        if len(cells) != len(self.names):
            row = _row(cells, self.names, line)
            return row.timestamp, row.gpu, row.process
        key = self.rest(cells)
        hit = self.memo.get(key)
        if hit is None:
            row = _row(cells, self.names, line)
            if len(self.memo) >= _MEMO_ROWS:
                self.memo.clear()
            assert isinstance(row.gpu, int)
            self.memo[key] = (row.gpu, row.process)
            return row.timestamp, row.gpu, row.process
        stamp = None
        if self.time_at >= 0:
            date = cells[self.date_at] if self.date_at >= 0 else None
            when = (date, cells[self.time_at])
            if when == self.last_when:  # a poll's rows share its time
                stamp = self.last_stamp
            else:
                stamp, _ = v.dmon_datetime(*when)
                self.last_when, self.last_stamp = when, stamp
        return stamp, hit[0], hit[1]


def sniff(head: Head, mapping: Mapping[str, str] | None) -> PmonPlan | str:
    lines = head.nonblank
    if not lines:
        return "empty file"
    names = header_names(lines[0])
    if names is None:
        return "first line is not a '# gpu pid type ...' pmon header"
    plan = PmonPlan(names)
    for n, line in enumerate(lines[1:80], start=2):
        if line.lstrip().startswith("#"):
            continue
        try:
            plan.rows.append(_row(line.split(), names, n))
        except v.CellError:
            continue
    if len(lines) > 2 and not plan.rows:
        return "no line reads as pmon values"
    return plan


def open_pmon(
    path: Path, plan: PmonPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """Per-process rows of a pmon log, as snapshots of identity-only GPUs."""
    notes = [f"columns {' '.join(plan.names)}"]
    times = sorted({r.timestamp for r in plan.rows if r.timestamp is not None})
    present = tuple(
        metric
        for name, metric in (("sm", METRIC_SM), ("mem", METRIC_MEMORY_ACCESS))
        if name in plan.names
    )
    if present:
        notes.append(_polls.FROM_ONLY_PROCESS)
    info, interval = stream_info(path, FORMAT, LABEL, times, interval_s, notes, present)
    detail = f"{LABEL}: {path.name}"

    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        tolerance = min(max(0.5 * interval, 0.002), 5.0)
        yield from _polls.snapshots(
            _read_polls(source, plan.names, counters, tolerance), counters, interval, detail
        )

    return ImportedStream(path, info, reader, counters=counters)


def _read_polls(
    source: TextSource, names: list[str], counters: ReadCounters, tolerance: float
) -> Iterator[_polls.Poll]:
    """The log's rows grouped into polls: :func:`_polls.polls` of its rows, in one loop
    (a row is not made a :class:`~._polls.ProcessRow`, the reader's cost per row)."""
    memo = _RowMemo(names)
    header = HeaderMemo(header_names)
    current: _polls.Poll | None = None
    seen: set[tuple[int | str, int | None]] = set()
    for line, text in source.lines():
        cells = text.split()  # pmon indents its rows: split first, strip never
        if not cells:
            continue
        if cells[0][0] == "#":
            names = header(text) or names
            if names != memo.names:
                memo = _RowMemo(names)
            continue
        try:
            stamp, gpu, proc = memo.read(cells, line)
        except v.CellError as exc:
            note_bad_line(counters, line, str(exc))
            continue
        key = (gpu, proc.pid if proc is not None else None)
        if (
            current is None
            or key in seen
            or (
                stamp is not None
                and current.timestamp is not None
                and abs(stamp - current.timestamp) > tolerance
            )
        ):
            if current is not None:
                yield current
            current = _polls.Poll(stamp)
            seen = set()
        seen.add(key)
        procs = current.gpus.setdefault(gpu, [])
        if proc is not None:
            procs.append(proc)
    if current is not None:
        yield current


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_pmon,
    metrics=frozenset({METRIC_PROCESSES, METRIC_SM, METRIC_MEMORY_ACCESS}),
    docs="Per-process logs: --query-compute-apps and pmon",
    per_process=True,
)
