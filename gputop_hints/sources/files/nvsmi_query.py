"""``nvidia-smi -q`` long-query dumps, one or many appended (``nvidia-smi -q -l 5``).

Each dump starts with the ``==============NVSMI LOG==============`` banner and
a ``Timestamp`` line, then one block per GPU (``GPU 00000000:CA:00.0``) of
``Key : value`` lines nested by four-space indents. What is read, where the
driver prints it: utilization (GPU, Memory), FB memory (Total, Used), PCIe
generation/width (current) and Tx/Rx throughput, SM clock and its maximum, the
clock event (throttle) reasons, power draw and limit, temperature, and the
Processes (pid, type, name, used memory). Key names changed across drivers
(``Clocks Throttle Reasons`` -> ``Clocks Event Reasons``, ``Power Readings`` ->
``GPU Power Readings`` with ``Average``/``Instantaneous Power Draw``); both are
known. A dump cut short (fewer GPU blocks than ``Attached GPUs``, or a block
without its Processes entry) is a counted bad record. A filtered dump
(``nvidia-smi -q -d UTILIZATION -l 1``, or ``-d MEMORY,POWER``...) prints only the
chosen sections, without the Product Name that heads a full GPU block and without
Processes: its blocks are whole as they are, and give what they hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop_hints.model import GpuProcess, GpuSample, HostSample, Snapshot
from gputop_hints.sources.files import _datelines as dates
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._incremental import Incremental, drive
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._table import Clock, median_interval
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import (
    ALL_METRICS,
    METRIC_HOST_CPU,
    METRIC_SUBSECOND,
    ReadCounters,
    StreamInfo,
)
from gputop_hints.units import MIB

FORMAT = "nvidia-smi-query"
LABEL = "nvidia-smi -q"
BANNER = "NVSMI LOG"

_REASONS = {
    "idle": "gpu_idle",
    "applications clocks setting": "applications_clocks_setting",
    "sw power cap": "sw_power_cap",
    "hw slowdown": "hw_slowdown",
    "hw thermal slowdown": "hw_thermal",
    "hw power brake slowdown": "hw_power_brake",
    "sync boost": "sync_boost",
    "sw thermal slowdown": "sw_thermal",
    "display clock setting": "display_clocks_setting",
}
_REASON_SECTIONS = ("clocks event reasons", "clocks throttle reasons")
_POWER_SECTIONS = ("gpu power readings", "power readings")


@dataclass
class _Gpu:
    fields: dict[str, Any] = field(default_factory=dict)
    reasons: set[str] | None = None
    processes: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    """Its Processes entry was read (the last thing nvidia-smi prints that we need)."""


@dataclass
class QueryDump:
    line: int
    timestamp: float | None = None
    driver: str | None = None
    attached: int | None = None
    gpus: list[_Gpu] = field(default_factory=list)


@dataclass
class QueryPlan:
    dumps: list[QueryDump] = field(default_factory=list)


def _value(key: str, section: str, parent: str, raw: str, gpu: _Gpu) -> None:
    """Store one ``Key : value`` of a GPU block where the model wants it."""
    f = gpu.fields
    try:
        if section == "utilization" and key in ("gpu", "memory"):
            f["sm" if key == "gpu" else "mem"] = v.percent(raw)
        elif section == "fb memory usage" and key in ("total", "used"):
            f[f"vram_{key}"] = v.byte_count(raw, MIB)
        elif key == "product name":
            f["name"] = v.text(raw)
        elif key == "gpu uuid":
            f["uuid"] = v.text(raw)
        elif section == "pcie generation" and key == "current":
            f["pcie_gen"] = v.integer(raw, 1, 16)
        elif section == "link width" and key == "current":
            f["pcie_width"] = v.integer(raw.strip().rstrip("x"), 1, 64)
        elif section == "pci" and key in ("tx throughput", "rx throughput"):
            f["pcie_tx" if key.startswith("tx") else "pcie_rx"] = v.rate(raw, 1024.0)
        elif section == "clocks" and key == "sm":
            f["sm_clock"] = _mhz(raw)
        elif section == "max clocks" and key == "sm":
            f["max_sm_clock"] = _mhz(raw)
        elif section == "temperature" and key == "gpu current temp":
            f["temp"] = v.plain(raw, ("c",), -60.0, 200.0)
        elif section in _POWER_SECTIONS or parent in _POWER_SECTIONS:
            _power(key, raw, f)
        elif key == "performance state":
            f["perf_state"] = v.text(raw)
        elif section in _REASON_SECTIONS or parent in _REASON_SECTIONS:
            reason = _REASONS.get(key)
            if reason is not None:
                gpu.reasons = gpu.reasons if gpu.reasons is not None else set()
                if raw.strip().lower() == "active":
                    gpu.reasons.add(reason)
    except v.CellError as exc:
        raise v.CellError(f"{key}: {exc}") from None


def _mhz(raw: str) -> int | None:
    value = v.plain(raw, ("mhz",), 0.0, 100000.0)
    return None if value is None else round(value)


def _power(key: str, raw: str, f: dict[str, Any]) -> None:
    """Power draw (instantaneous, else the average newer drivers also print) and limit."""
    if key in ("power draw", "instantaneous power draw", "average power draw"):
        watts = v.plain(raw, ("w",), 0.0, 20000.0)
        if watts is not None:
            f["power_average" if key.startswith("average") else "power"] = watts
    elif key in ("power limit", "current power limit", "enforced power limit"):
        limit = v.plain(raw, ("w",), 0.0, 20000.0)
        if limit is not None:
            f["power_limit"] = limit


class QueryReader:
    """``nvidia-smi -q`` lines -> :class:`QueryDump`, one per banner."""

    def __init__(self, on_bad: Any) -> None:
        self.on_bad = on_bad
        self.dump: QueryDump | None = None
        self.sections: list[str] = []
        self.process: dict[str, Any] | None = None

    def feed(self, number: int, line: str) -> QueryDump | None:
        text = line.rstrip()
        if not text.strip():
            return None
        if BANNER in text and text.lstrip().startswith("="):
            done = self.finish()
            self.dump = QueryDump(line=number)
            self.sections = []
            return done
        dump = self.dump
        if dump is None:
            return None
        level = (len(text) - len(text.lstrip(" "))) // 4
        key, sep, raw = text.strip().partition(" : ")
        if not sep and text.rstrip().endswith(":"):
            key, sep, raw = text.strip()[:-1], " : ", ""
        key = key.strip().lower()
        # sections[k] is the title at indent level k ("" under a key line).
        del self.sections[level:]
        self.sections.extend([""] * (level - len(self.sections)))
        if not sep:
            if level == 0 and key.startswith("gpu "):
                dump.gpus.append(_Gpu())
                self.process = None
            elif key == "processes" and dump.gpus:
                dump.gpus[-1].done = True
            self.sections.append(key)
            return None
        if level == 0:
            if key == "timestamp":
                dump.timestamp = dates.parse_date(raw)
            elif key == "driver version":
                dump.driver = raw.strip()
            elif key == "attached gpus":
                dump.attached = int(raw) if raw.strip().isdigit() else None
            return None
        if not dump.gpus:
            return None
        gpu = dump.gpus[-1]
        section = self.sections[-1] if self.sections else ""
        parent = self.sections[-2] if len(self.sections) > 1 else ""
        if key == "processes":
            gpu.done = True  # "Processes : None"
            return None
        if "processes" in self.sections:
            self._process_key(key, raw, gpu)
            return None
        try:
            _value(key, section, parent, raw, gpu)
        except v.CellError as exc:
            self.on_bad(number, str(exc))
        return None

    def _process_key(self, key: str, raw: str, gpu: _Gpu) -> None:
        if key == "process id":
            self.process = {"pid": int(raw) if raw.strip().isdigit() else None}
            gpu.processes.append(self.process)
        elif self.process is not None and key in ("type", "name", "used gpu memory"):
            self.process[key] = raw.strip()

    def finish(self) -> QueryDump | None:
        dump, self.dump = self.dump, None
        if dump is None:
            return None
        # `nvidia-smi -q -d UTILIZATION` (-d MEMORY, POWER, ...) prints only the chosen
        # sections: no "Product Name" heads its GPU blocks and no Processes ends them.
        # Such a block is whole without Processes; a full dump's block without it is not.
        filtered = bool(dump.gpus) and not any("name" in g.fields for g in dump.gpus)
        cut = not dump.gpus or (not filtered and not all(g.done for g in dump.gpus))
        if dump.attached is not None and len(dump.gpus) < dump.attached:
            cut = True
        if cut:
            self.on_bad(dump.line, f"nvidia-smi -q dump cut short ({len(dump.gpus)} GPU block(s))")
            return None
        return dump


def sniff(head: Head, mapping: Mapping[str, str] | None) -> QueryPlan | str:
    if not any(BANNER in line and line.lstrip().startswith("=") for line in head.lines[:20]):
        return "no '====NVSMI LOG====' banner"
    reader = QueryReader(lambda _n, _r: None)
    return QueryPlan(list(drive(reader, enumerate(head.lines, start=1))))


def _snapshot(
    dump: QueryDump, t: float, interval: float, host: HostSample, detail: str
) -> Snapshot:
    gpus = []
    processes = []
    for index, g in enumerate(dump.gpus):
        f = g.fields
        gpus.append(
            GpuSample(
                index=index,
                name=f.get("name"),
                uuid=f.get("uuid"),
                sm_percent=f.get("sm"),
                memory_access_percent=f.get("mem"),
                vram_used_bytes=f.get("vram_used"),
                vram_total_bytes=f.get("vram_total"),
                pcie_rx_bytes_per_s=f.get("pcie_rx"),
                pcie_tx_bytes_per_s=f.get("pcie_tx"),
                pcie_generation=f.get("pcie_gen"),
                pcie_width=f.get("pcie_width"),
                temperature_c=f.get("temp"),
                power_watts=f.get("power", f.get("power_average")),
                power_limit_watts=f.get("power_limit"),
                sm_clock_mhz=f.get("sm_clock"),
                max_sm_clock_mhz=f.get("max_sm_clock"),
                throttle_reasons=None if g.reasons is None else tuple(sorted(g.reasons)),
            )
        )
        for p in g.processes:
            if p.get("pid") is None:
                continue
            try:
                vram = v.byte_count(p.get("used gpu memory", ""), MIB)
            except v.CellError:
                vram = None
            name = p.get("name") or None
            processes.append(
                GpuProcess(
                    pid=p["pid"], gpu_index=index, vram_bytes=vram, name=name, command=name or ""
                )
            )
    return Snapshot(
        timestamp=t,
        interval_s=interval,
        host=host,
        gpus=tuple(gpus),
        processes=tuple(processes),
        source="replay",
        source_detail=detail,
        driver_version=dump.driver,
    )


def open_query(
    path: Path, plan: QueryPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of snapshots of appended ``nvidia-smi -q`` dumps."""
    return open_dumps(path, plan, interval_s, FORMAT, LABEL, QueryReader)


def open_dumps(
    path: Path,
    plan: QueryPlan,
    interval_s: float | None,
    format: str,
    label: str,
    make_reader: Callable[[Callable[[int, str], None]], Incremental[QueryDump]],
) -> ImportedStream:
    """The stream of snapshots of :class:`QueryDump` records, whatever text they are
    read from: ``make_reader(on_bad)`` turns lines into dumps (``nvidia-smi -q``'s
    :class:`QueryReader`, or the ``-q -x`` XML reader of :mod:`.nvsmi_xml`)."""
    notes = [label]
    times = [d.timestamp for d in plan.dumps if d.timestamp is not None]
    interval = choose_interval(median_interval(times), interval_s, notes, bool(times))
    info = StreamInfo(
        path=str(path),
        format=format,
        interval_s=interval,
        gpu_count=max((len(d.gpus) for d in plan.dumps), default=None) or None,
        missing=(METRIC_HOST_CPU, METRIC_SUBSECOND),
        detail="; ".join(notes),
        header={},
    )
    detail = f"{label}: {path.name}"
    host = HostSample(hostname="unknown", cpu_percent_per_core=(), allowed_cores=())
    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        clock = Clock(counters, interval)
        states: dict[str, dict[str, int]] = {}
        counters.found["perf_states"] = states
        dumps = make_reader(counters.note_bad_line)

        def make(dump: QueryDump) -> Snapshot:
            for index, g in enumerate(dump.gpus):
                state = g.fields.get("perf_state")
                if state:
                    counts = states.setdefault(str(index), {})
                    counts[state] = counts.get(state, 0) + 1
            counters.saw_gpus(len(dump.gpus))
            return _snapshot(dump, clock.next(dump.timestamp), interval, host, detail)

        for dump in drive(dumps, source.lines()):
            yield make(dump)

    return ImportedStream(path, info, reader, counters=counters)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_query,
    metrics=frozenset(ALL_METRICS) - {METRIC_HOST_CPU, METRIC_SUBSECOND},
    docs="nvidia-smi -q",
)
