"""``nvitop -1`` (``nvitop --once``) output appended to a file.

``while true; do echo "==== $(date -Iseconds) ===="; nvitop -1; sleep 5; done >> gpu.log``:
each output is a date line, a box-drawn GPU table whose title is ``│ NVITOP 1.7.2
Driver Version: ...  CUDA Driver Version: ... │`` (two rows per GPU, as nvidia-smi's,
memory possibly in GiB, and on a wide terminal MEM/UTL and MBW/PWR bar columns to the
right), the host's ``[ CPU: ... 45.5% ]  ( Load Average: ... )`` and ``[ MEM: ... ]``
lines, and a Processes box (``GPU PID USER GPU-MEM %SM %GMBW %CPU %MEM TIME
COMMAND``). ``nvitop -1 --ascii`` draws the same with ``+ - = |``; ``--force-color``
adds SGR colour sequences, dropped before reading.

Each output becomes one snapshot, timed by the last date line above it (nvitop's own,
being the nearest; else a ``date`` or ``====`` line). Per GPU: SM % (GPU-Util), VRAM
used/total, temperature, power and its cap, and the memory-bandwidth % of the MBW bar
when the terminal was wide enough to draw it; the GPU's values row is read by the
nvidia-smi table reader's cell patterns (:mod:`._nvsmi_rows`). Per process: pid, GPU,
user, GPU memory, %SM, %GMBW, %CPU and the command (as nvitop cut it). Host: the load
average and the memory in use (the MEM line's USED) in the snapshot; the CPU line is
one whole-host number, not per-core, so it is summarised in
``StreamInfo.header["system_cpu_percent"]`` (shaped as the W&B and MLflow readers'
summary), and host CPU per core stays unknown. Fan speed and performance
state are summarised in the header (``fan_percent_peak``, ``perf_states``) as for
nvidia-smi tables.

Strings read here (commands, users, the host name) are data: they reach the terminal
only through the writers' escaping (gputop_hints.text).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from gputop_hints.model import GpuProcess, HostSample, Snapshot
from gputop_hints.sources.files import _datelines as dates
from gputop_hints.sources.files import _nvsmi_rows as rows
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._incremental import drive
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._nvsmi_rows import RowError, TableGpu, gpu_sample, note_gpu_states
from gputop_hints.sources.files._table import Clock, median_interval
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import (
    METRIC_HOST_CPU,
    METRIC_MEMORY_ACCESS,
    METRIC_PCIE,
    METRIC_POWER,
    METRIC_PROCESSES,
    METRIC_SM,
    METRIC_SUBSECOND,
    METRIC_TEMPERATURE,
    METRIC_THROTTLE,
    METRIC_VRAM,
    ReadCounters,
    StreamInfo,
)
from gputop_hints.units import MIB

FORMAT = "nvitop"
LABEL = "nvitop -1 output"

_JOINTS = "╒╤╕╪╘╧╛├┤┼╞╡┬┴╥╨┌┐└┘"
_BARS = frozenset("│|")
_EDGES = frozenset("│|+" + _JOINTS)
"""What a line of nvitop's boxes starts and ends with, drawn or ``--ascii``."""
_RULES = frozenset("═─=-")
_DOUBLE_RULES = frozenset("═=")
_SGR = re.compile(r"\x1b\[[0-9;]*m")
_TITLE = re.compile(r"^\|\s*NVITOP\s+\S+")
_DRIVER = re.compile(r"Driver Version:\s*([^\s|]+)")
_CUDA = re.compile(r"CUDA Driver Version:\s*([^\s|]+)")
_MBW = re.compile(r"MBW:[\s|▏▎▍▌▋▊▉█]*(\d+(?:\.\d+)?)%")  # the bar: eighths, or | (--ascii)
_CPU = re.compile(r"^\[\s*CPU:[^\d\]]*?(?:(\d+(?:\.\d+)?)%|(MAX))")
_MEM_USED = re.compile(r"^\[\s*MEM:.*?USED:\s*(\d+(?:\.\d+)?[KMGT]iB)")
_LOAD = re.compile(r"Load Average:\s*(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)")
_USER_HOST = re.compile(r"Processes:\s+\S+@(\S+)\s*$")
_PROCESS_ROW = re.compile(
    r"^\s*(\d{1,4})(?::\d+)*\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)"
    r"\s+(\S+)\s+(\S+)\s+(\d+(?:\.\d+)? days|\S+)(?:\s\s(.*?))?\s*$"
)  # GPU PID type USER GPU-MEM %SM %GMBW %CPU %MEM TIME COMMAND
_GONE = "No Such Process"


class _Part(Enum):
    """Where in one output the reader is; the value names it in messages."""

    HEAD = "title"
    GPUS = "GPU box"
    BETWEEN = "host lines"
    PROC_HEAD = "Processes title"
    PROC_ROWS = "Processes box"


@dataclass
class NvitopProcess:
    """One row of the Processes box."""

    gpu_index: int
    pid: int
    user: str | None
    vram_bytes: int | None
    sm_percent: float | None
    memory_access_percent: float | None
    cpu_percent: float | None
    command: str


@dataclass
class NvitopOutput:
    """Everything one ``nvitop -1`` output said."""

    line: int
    """Where it starts (its date line, else its title line), for messages."""
    timestamp: float | None
    driver: str | None = None
    cuda: str | None = None
    gpus: list[TableGpu] = field(default_factory=list)
    bandwidth: dict[int, float] = field(default_factory=dict)
    """GPU index -> the MBW bar's %, on a terminal wide enough to draw it."""
    cpu_percent: float | None = None
    load_average: tuple[float, float, float] | None = None
    memory_used_bytes: int | None = None
    """Host memory in use (the MEM line's USED, 0.01 GiB)."""
    hostname: str | None = None
    processes: list[NvitopProcess] | None = None


def _percent(text: str) -> float | None:
    """A %SM/%GMBW/%CPU cell: a number, or N/A (unknown)."""
    try:
        value = float(text)
    except ValueError:
        if text.upper() == "N/A":
            return None
        raise RowError(f"not a number: {text[:20]!r}") from None
    if value < 0:
        raise RowError(f"negative percentage {value:g}")
    return value


def _size(text: str) -> int | None:
    """A GPU-MEM cell (``20.00GiB``, ``1024MiB``), or N/A (unknown)."""
    if v.is_unknown(text):
        return None
    try:
        return v.byte_count(text, MIB)
    except v.CellError as exc:
        raise RowError(str(exc)) from exc


def read_process_row(text: str) -> NvitopProcess | None:
    """A Processes row, or None for ``No running processes found``."""
    m = _PROCESS_ROW.match(text)
    if m is None:
        if "no running processes" in text.lower() or "gathering" in text.lower():
            return None
        raise RowError(f"not a process row: {text.strip()[:40]!r}")
    gpu, pid, _kind, user, memory, sm, gmbw, cpu, _mem, _time, command = m.groups()
    sm_percent = _percent(sm)
    if sm_percent is not None and sm_percent > 100:
        raise RowError(f"%SM {sm_percent:g} outside 0-100")
    vram = _size(memory)
    command = command or ""
    return NvitopProcess(
        gpu_index=int(gpu),
        pid=int(pid),
        user=None if user.upper() == "N/A" else user,
        vram_bytes=vram,
        sm_percent=sm_percent,
        memory_access_percent=_percent(gmbw),
        cpu_percent=_percent(cpu),
        # nvitop's word for a process it could not see on the host, not a command.
        command="" if command == _GONE else command,
    )


class OutputReader:
    """Turns the lines of appended ``nvitop -1`` outputs into :class:`NvitopOutput`.

    An output is complete when its GPU box and its Processes box are closed. One cut
    short -- at the end of the file, by the next date line or output, or with the next
    output glued onto a half-written line -- is a bad record counted at the line where
    it started; a row that does not read is counted and the rest kept."""

    def __init__(self, on_bad: Callable[[int, str], None]) -> None:
        self.on_bad = on_bad
        self._date: float | None = None
        self._date_line: int | None = None
        self._out: NvitopOutput | None = None
        self._part = _Part.HEAD
        self._gpu: TableGpu | None = None

    def feed(self, number: int, line: str) -> NvitopOutput | None:
        """Read one line; returns an output when this line completed one."""
        text = line.strip()
        if not text:
            return None
        if "\x1b" in text:  # nvitop -1 --force-color: its colours are no part of a value
            text = _SGR.sub("", text).strip()
            if not text:
                return None
        first = text[0]
        if first in _EDGES:
            if text[-1] not in _EDGES and (at := dates.glued_date(text)) is not None:
                if self._out is not None:
                    self._drop(f"cut short at line {number} (the next output is glued onto it)")
                return self._other_line(number, text[at:])
            second = text[1:2]
            if first not in _BARS or second in _RULES:
                # --ascii draws the joints at the box's sides as bars: |====+====|
                return self._border(second in _DOUBLE_RULES)
            return self._row(number, text.replace("│", "|"))
        if first == "[" and self._out is not None and self._part is _Part.BETWEEN:
            self._host_line(text)
            return None
        return self._other_line(number, text)

    def finish(self) -> NvitopOutput | None:
        """The end of the input: the last output if complete (else counted as bad)."""
        return self._close("cut short at the end of the file")

    def _other_line(self, number: int, text: str) -> NvitopOutput | None:
        stamp = dates.date_line(text)
        if stamp is None:
            return None  # a prompt, a command, nvitop's error message
        done = self._close(f"cut short at line {number} by the next date line")
        self._date, self._date_line = stamp, number
        return done

    def _border(self, closing: bool) -> NvitopOutput | None:
        """A rule across a box; ``closing`` for a double one (under the titles, or
        the bottom of a box)."""
        out = self._out
        if out is None:
            return None
        part = self._part
        if part is _Part.HEAD and closing:
            self._part = _Part.GPUS  # the ╞═══╪ line under the column titles
        elif part is _Part.GPUS:
            self._end_gpu()
            if closing:
                self._part = _Part.BETWEEN  # ╘═══╧: the GPU box is closed
        elif part is _Part.PROC_HEAD and closing:
            self._part = _Part.PROC_ROWS
        elif part is _Part.PROC_ROWS and closing:
            return self._close("")
        return None

    def _row(self, number: int, text: str) -> NvitopOutput | None:
        if _TITLE.match(text):
            done = self._close(f"cut short at line {number} by the next output")
            self._start(number, text)
            return done
        out = self._out
        if out is None:
            return None
        part = self._part
        if part is _Part.GPUS:
            self._gpu_row(number, text)
        elif part is _Part.BETWEEN and "Processes:" in text:
            self._part = _Part.PROC_HEAD
            out.processes = []
            host = _USER_HOST.search(text[1:-1])
            out.hostname = host.group(1) if host else None
        elif part is _Part.PROC_ROWS:
            try:
                proc = read_process_row(text[1:-1])
            except RowError as exc:
                self.on_bad(number, f"Processes: {exc}")
                return None
            if proc is not None:
                assert out.processes is not None
                out.processes.append(proc)
        return None

    def _gpu_row(self, number: int, text: str) -> None:
        row = rows.cells(text)
        if len(row) < 3:
            return
        gpu = rows.read_name_row(row[:3])
        if gpu is not None:
            self._end_gpu()
            self._gpu = gpu
            bandwidth = _MBW.search(text)
            if bandwidth is not None and self._out is not None:
                self._out.bandwidth[gpu.index] = min(float(bandwidth.group(1)), 100.0)
            return
        if self._gpu is None or self._gpu.has_values:
            return
        try:
            rows.read_values_row(self._gpu, row[:3])
        except RowError as exc:
            self._gpu.has_values = True  # keep the GPU with what did read
            self.on_bad(number, f"GPU {self._gpu.index}: {exc}")

    def _host_line(self, text: str) -> None:
        assert self._out is not None
        cpu = _CPU.match(text)
        if cpu is not None:
            self._out.cpu_percent = 100.0 if cpu.group(2) else min(float(cpu.group(1)), 100.0)
        used = _MEM_USED.match(text)
        if used is not None:
            try:
                self._out.memory_used_bytes = v.byte_count(used.group(1), MIB)
            except v.CellError:
                self._out.memory_used_bytes = None
        load = _LOAD.search(text)
        if load is not None:
            a, b, c = (float(x) for x in load.groups())
            self._out.load_average = (a, b, c)

    def _start(self, number: int, title: str) -> None:
        driver = _DRIVER.search(title)
        cuda = _CUDA.search(title)
        start = self._date_line if self._date_line is not None else number
        self._out = NvitopOutput(
            line=start,
            timestamp=self._date,
            driver=driver.group(1) if driver else None,
            cuda=cuda.group(1) if cuda else None,
        )
        self._date = self._date_line = None
        self._part = _Part.HEAD
        self._gpu = None

    def _end_gpu(self) -> None:
        gpu, self._gpu = self._gpu, None
        if gpu is not None and self._out is not None:
            self._out.gpus.append(gpu)

    def _close(self, why_bad: str) -> NvitopOutput | None:
        out = self._out
        if out is None:
            return None
        complete = (
            self._part is _Part.PROC_ROWS
            and not why_bad
            and bool(out.gpus)
            and all(g.has_values for g in out.gpus)
        )
        self._out = None
        self._gpu = None
        where = self._part.value
        self._part = _Part.HEAD
        if complete:
            return out
        reason = f"{why_bad} (in its {where})" if why_bad else f"incomplete {where}"
        self.on_bad(out.line, f"nvitop output {reason}")
        return None

    def _drop(self, reason: str) -> None:
        out, self._out = self._out, None
        self._gpu = None
        self._part = _Part.HEAD
        if out is not None:
            self.on_bad(out.line, f"nvitop output {reason}")


@dataclass
class NvitopPlan:
    """What the head of the file showed."""

    outputs: list[NvitopOutput] = field(default_factory=list)
    titles: int = 0


def sniff(head: Head, mapping: Mapping[str, str] | None) -> NvitopPlan | str:
    titles = sum(1 for line in head.lines if _TITLE.match(line.strip().replace("│", "|")))
    if titles == 0:
        return "no '│ NVITOP x.y.z  Driver Version ...' table title"
    plan = NvitopPlan(titles=titles)
    reader = OutputReader(lambda _n, _r: None)
    plan.outputs = list(drive(reader, enumerate(head.lines, start=1), finish=False))
    return plan


class _Summaries:
    """What has no place in a snapshot, kept in ``counters.found`` (constant memory)."""

    def __init__(self, counters: ReadCounters) -> None:
        self.perf_states: dict[str, dict[str, int]] = {}
        self.fan_peak: dict[str, float] = {}
        counters.found.update(perf_states=self.perf_states, fan_percent_peak=self.fan_peak)
        self.counters = counters

    def add(self, out: NvitopOutput) -> None:
        note_gpu_states(out.gpus, self.perf_states, self.fan_peak)
        if out.cpu_percent is not None:  # as the W&B reader summarises system.cpu
            self.counters.note_stat("system_cpu_percent", "all", out.cpu_percent)


def _snapshot(out: NvitopOutput, timestamp: float, interval: float, detail: str) -> Snapshot:
    gpus = tuple(
        gpu_sample(g, out.bandwidth.get(g.index))
        for g in sorted(out.gpus, key=lambda g: g.index)
    )
    processes = tuple(
        GpuProcess(
            pid=p.pid,
            gpu_index=p.gpu_index,
            vram_bytes=p.vram_bytes,
            sm_percent=p.sm_percent,
            memory_access_percent=p.memory_access_percent,
            cpu_percent=p.cpu_percent,
            user=p.user,
            name=_name(p.command),
            command=p.command,
        )
        for p in out.processes or ()
    )
    host = HostSample(
        hostname=out.hostname or "unknown",
        cpu_percent_per_core=(),
        allowed_cores=(),
        load_average=out.load_average,
        memory_used_bytes=out.memory_used_bytes,
    )
    return Snapshot(
        timestamp=timestamp,
        interval_s=interval,
        host=host,
        gpus=gpus,
        processes=processes,
        source="replay",
        source_detail=detail,
        driver_version=out.driver,
        cuda_driver_version=out.cuda,
    )


def _name(command: str) -> str | None:
    """The program's name from a command line (``/usr/bin/python3 train.py`` -> python3);
    the command as printed when nvitop cut it inside its first word (``/root/.pyenv/v..``
    on an 80-column terminal): the most there is to tell processes apart by."""
    words = command.split()
    if not words:
        return None
    if len(words) == 1 and command.endswith(".."):
        return command
    return words[0].rsplit("/", 1)[-1] or None


def open_nvitop(
    path: Path, plan: NvitopPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of snapshots of a log of appended ``nvitop -1`` outputs."""
    notes: list[str] = []
    heads = plan.outputs
    drivers = sorted({o.driver for o in heads if o.driver})
    notes.append(f"{LABEL}, driver {', '.join(drivers)}" if drivers else LABEL)
    if mapping:
        notes.append("--map is not used for nvitop output (its layout names every value)")
    times = [o.timestamp for o in heads if o.timestamp is not None]
    if heads and not times and interval_s is None:
        notes.append("no date line above the outputs")
    interval = choose_interval(median_interval(times), interval_s, notes, bool(times))
    missing = [METRIC_PCIE, METRIC_HOST_CPU, METRIC_SUBSECOND, METRIC_THROTTLE]
    if heads and not any(o.bandwidth for o in heads):
        missing.insert(0, METRIC_MEMORY_ACCESS)
        notes.append("no MBW bars (a terminal under ~150 columns): memory bandwidth unknown")
    notes.append(
        "host CPU per core unknown (nvitop's CPU line is one number: see "
        "header['system_cpu_percent'])"
    )
    hostnames = [o.hostname for o in heads if o.hostname]
    info = StreamInfo(
        path=str(path),
        format=FORMAT,
        interval_s=interval,
        hostname=hostnames[0] if hostnames else None,
        gpu_count=max((len(o.gpus) for o in heads), default=None) or None,
        missing=tuple(missing),
        detail="; ".join(notes),
        header={},
    )
    detail = f"{LABEL}: {path.name}"
    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        clock = Clock(counters, interval)
        summaries = _Summaries(counters)
        outputs = OutputReader(counters.note_bad_line)
        for out in drive(outputs, source.lines()):
            summaries.add(out)
            counters.saw_gpus(len(out.gpus))
            yield _snapshot(out, clock.next(out.timestamp), interval, detail)

    return ImportedStream(path, info, reader, counters=counters)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_nvitop,
    metrics=frozenset(
        {
            METRIC_SM,
            METRIC_MEMORY_ACCESS,
            METRIC_VRAM,
            METRIC_TEMPERATURE,
            METRIC_POWER,
            METRIC_PROCESSES,
        }
    ),
    docs="nvitop -1 output",
)
