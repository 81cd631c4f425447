"""The rows of nvidia-smi's table, read by their content rather than their columns.

Column widths and titles changed many times between drivers 3xx and 58x (79,
87, 89 and 91 characters; ``Persistence-M`` or Windows' ``Driver-Model``; a
``MIG M.`` row from 450 on; ``GI ID``/``CI ID`` and a wider PID column in the
Processes box), but every GPU row keeps its cells between ``|`` bars and every
value its own shape (``34%``, ``60C``, ``P2``, ``75W / 250W``,
``11996MiB / 12189MiB``). So a row is split at the bars and each cell read by
a pattern, which reads every layout seen and is robust to the next one.

This module parses single lines into :class:`TableGpu` and :class:`TableProcess`
and turns a finished snapshot into the model's dataclasses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from gputop_hints.model import GpuProcess, GpuSample
from gputop_hints.sources.files import _values as v
from gputop_hints.units import MIB

_NAME_ROW = re.compile(r"^\s*(\d{1,4})\s+(.*?)\s+(On|Off|WDDM|TCC|MCDM|N/A)\s*$")
_BUS_CELL = re.compile(r"^\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\b")
_VALUES_CELL = re.compile(
    r"^\s*(\S+)\s+(\S+)\s+(P\d{1,2}|\S+)\s+(\S+)\s*/\s*(\S+)\s*$"
)  # fan, temperature, performance state, power usage / cap
_MEMORY_CELL = re.compile(r"^\s*(\S+?)\s*/\s*(\S+?)\s*$")
_PROCESS_ROW = re.compile(
    r"^\s*(\d{1,4})\s+(?:(\S+)\s+(\S+)\s+)?(\d+)\s+(C\+G|M\+C|[CGM])\s+(.*?)\s*"
    r"(\d+\s*[KMGT]i?B|N/A)\s*$"
)
_MIG_ROW = re.compile(r"^\s*(\d{1,4})\s+(\d+|N/A)\s+(\d+|N/A)\s+(\d+)\s*$")
_FAST_VALUES = re.compile(
    r"^\|\s*(?:(\d+)%|N/A)\s+(\d+)C\s+(P\d+)\s+(\d+)W\s*/\s*(\d+)W\s*\|"
    r"\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|\s*(\d+)%\s"
)  # the common, all-numeric values row: read in one match
DRIVER = re.compile(r"Driver Version:\s*(\S+)")
CUDA = re.compile(r"CUDA Version:\s*(\S+)")


@dataclass
class TableGpu:
    """One GPU of a snapshot, as far as its rows were read."""

    index: int
    name: str | None
    bus_id: str | None = None
    fan_percent: float | None = None
    temperature_c: float | None = None
    perf_state: str | None = None
    power_watts: float | None = None
    power_limit_watts: float | None = None
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    sm_percent: float | None = None
    has_values: bool = False
    """The second row (fan, temperature, power, memory, utilization) was read."""


@dataclass
class TableProcess:
    """One row of the Processes box."""

    gpu_index: int
    pid: int
    kind: str
    """``C`` compute, ``G`` graphics, ``C+G`` both (Windows), ``M``/``M+C`` MPS."""
    name: str
    vram_bytes: int | None
    gpu_instance: str | None = None
    compute_instance: str | None = None


@dataclass
class TableSnapshot:
    """Everything one printed table said."""

    line: int
    """Where it starts (its date line, else its title line), for messages."""
    timestamp: float | None
    driver: str | None = None
    cuda: str | None = None
    gpus: list[TableGpu] = field(default_factory=list)
    processes: list[TableProcess] | None = None
    """None when the table has no Processes box (a watch screen cut at 24 rows)."""
    mig_devices: int = 0


class RowError(ValueError):
    """A row of the table that does not read as what its place says it is."""


def cells(line: str) -> list[str]:
    """The cells between the bars of ``| a | b | c |``."""
    parts = line.split("|")
    return parts[1:-1] if len(parts) >= 3 else []


def _optional(cell: str) -> str | None:
    text = cell.strip()
    return None if v.is_unknown(text) or text.upper() == "ERR!" else text


def _number(cell: str, suffix: str, low: float, high: float) -> float | None:
    text = _optional(cell)
    if text is None:
        return None
    if text.upper().endswith(suffix.upper()):
        text = text[: -len(suffix)]
    try:
        value = float(text)
    except ValueError as exc:
        raise RowError(f"not a number: {cell.strip()[:20]!r}") from exc
    if not low <= value <= high:
        raise RowError(f"{value:g} outside {low:g}-{high:g}")
    return value


def _size(cell: str) -> int | None:
    text = _optional(cell)
    if text is None:
        return None
    try:
        return v.byte_count(text, MIB)
    except v.CellError as exc:
        raise RowError(str(exc)) from exc


def read_name_row(row: list[str]) -> TableGpu | None:
    """``|   0  TITAN X (Pascal)    Off  | 00000000:02:00.0 Off |  N/A |`` -> a new GPU."""
    m = _NAME_ROW.match(row[0])
    if m is None:
        return None
    bus = _BUS_CELL.match(row[1]) if len(row) > 1 else None
    return TableGpu(
        index=int(m.group(1)),
        name=m.group(2).strip() or None,
        bus_id=bus.group(1) if bus else None,
    )


def read_values_fast(gpu: TableGpu, line: str) -> bool:
    """The values row when every value is a plain number (most rows of a big log)."""
    m = _FAST_VALUES.match(line)
    if m is None:
        return False
    fan, temp, perf, power, cap, used, total, util = m.groups()
    gpu.fan_percent = None if fan is None else float(fan)
    gpu.temperature_c = float(temp)
    gpu.perf_state = perf
    gpu.power_watts = float(power)
    gpu.power_limit_watts = float(cap)
    gpu.vram_used_bytes = int(used) * MIB
    gpu.vram_total_bytes = int(total) * MIB
    percent = float(util)
    gpu.sm_percent = percent if percent <= 100 else None
    gpu.has_values = percent <= 100
    return gpu.has_values


def read_values_row(gpu: TableGpu, row: list[str]) -> bool:
    """``| 34%   60C    P2    75W / 250W |  11996MiB / 12189MiB |     27%      Default |``.

    Fills ``gpu``; False when the row is not this shape (a ``MIG M.`` row).
    Raises RowError when it is but a value does not read."""
    if len(row) < 3:
        return False
    m = _VALUES_CELL.match(row[0])
    mem = _MEMORY_CELL.match(row[1])
    if m is None or mem is None:
        return False
    fan, temp, perf, power, cap = m.groups()
    gpu.fan_percent = _number(fan, "%", 0, 100)
    gpu.temperature_c = _number(temp, "C", -60, 200)
    gpu.perf_state = _optional(perf)
    gpu.power_watts = _number(power, "W", 0, 20000)
    gpu.power_limit_watts = _number(cap, "W", 0, 20000)
    gpu.vram_used_bytes = _size(mem.group(1))
    gpu.vram_total_bytes = _size(mem.group(2))
    util = row[2].split()
    gpu.sm_percent = _number(util[0], "%", 0, 100) if util else None
    gpu.has_values = True
    return True


def read_process_row(text: str) -> TableProcess | None:
    """A Processes row (any layout) or None for ``No running processes found``."""
    m = _PROCESS_ROW.match(text)
    if m is None:
        if "no running processes" in text.lower() or not text.strip():
            return None
        raise RowError(f"not a process row: {text.strip()[:40]!r}")
    gpu, gi, ci, pid, kind, name, memory = m.groups()
    return TableProcess(
        gpu_index=int(gpu),
        pid=int(pid),
        kind=kind,
        name=name.strip(),
        vram_bytes=_size(memory),
        gpu_instance=gi,
        compute_instance=ci,
    )


def is_mig_device_row(row: list[str]) -> bool:
    """The first row of a MIG device in the ``MIG devices:`` box (``| 0  1  0  0 | ...``)."""
    return bool(row) and _MIG_ROW.match(row[0]) is not None


def note_gpu_states(
    gpus: Iterable[TableGpu], perf_states: dict[str, dict[str, int]], fan_peak: dict[str, float]
) -> None:
    """Count each GPU's performance state and keep its highest fan %: what a table
    says that has no place in a snapshot (``counters.found``, constant memory)."""
    for g in gpus:
        key = str(g.index)
        if g.perf_state is not None:
            counts = perf_states.setdefault(key, {})
            counts[g.perf_state] = counts.get(g.perf_state, 0) + 1
        if g.fan_percent is not None and g.fan_percent > fan_peak.get(key, -1.0):
            fan_peak[key] = g.fan_percent


def gpu_sample(gpu: TableGpu, memory_access_percent: float | None = None) -> GpuSample:
    return GpuSample(
        index=gpu.index,
        name=gpu.name,
        sm_percent=gpu.sm_percent,
        memory_access_percent=memory_access_percent,
        vram_used_bytes=gpu.vram_used_bytes,
        vram_total_bytes=gpu.vram_total_bytes,
        temperature_c=gpu.temperature_c,
        power_watts=gpu.power_watts,
        power_limit_watts=gpu.power_limit_watts,
    )


def gpu_process(proc: TableProcess) -> GpuProcess:
    return GpuProcess(
        pid=proc.pid,
        gpu_index=proc.gpu_index,
        vram_bytes=proc.vram_bytes,
        name=proc.name,
        command=proc.name,
    )
