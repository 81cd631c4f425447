"""gpustat logs: ``gpustat --json`` documents and gpustat's text lines.

JSON (one document per call, pretty-printed or one per line)::

    {"hostname": "node1", "driver_version": "535.104.05",
     "query_time": "2025-01-15T10:00:00.123456",
     "gpus": [{"index": 0, "uuid": "GPU-...", "name": "NVIDIA A100-SXM4-80GB",
               "temperature.gpu": 45, "utilization.gpu": 95, "power.draw": 250,
               "enforced.power.limit": 400, "memory.used": 20000, "memory.total": 81920,
               "processes": [{"pid": 1234, "username": "ana", "command": "python",
                              "gpu_memory_usage": 19000, "cpu_percent": 98.5}]}]}

Text (``gpustat -cpu --show-power >> gpu.log``)::

    node1           Wed Jan 15 10:00:00 2025  535.104.05
    [0] NVIDIA A100 | 45°C,  95 %,  250 /  400 W | 20000 / 81920 MB | ana:python/1234(19000M)

Memory is in MiB (gpustat prints NVML's MiB as "MB"); per process pid, user,
command, VRAM and (JSON) CPU %. The header line's date is each sample's time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop_hints.model import GpuProcess, GpuSample, HostSample, Snapshot
from gputop_hints.recording import fastjson
from gputop_hints.recording.fastjson import MISSING
from gputop_hints.sources.files import _datelines as dates
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._incremental import drive
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._table import _BY_INDEX, Clock, median_interval
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
    note_bad_line,
)
from gputop_hints.units import MIB

FORMAT = "gpustat"
LABEL = "gpustat"
MAX_DOCUMENT = 4 * 1024 * 1024
"""A JSON document longer than this is dropped as malformed (bounded memory)."""

_GPU_LINE = re.compile(
    r"^\[(\d+)\]\s+(.*?)\s*\|\s*(-?\d+|\?\?)'?°?C,\s*(?:\S+\s*%,\s*)?(\d+|\?\?)\s*%"
    r"(?:,\s*(\d+|\?\?)\s*/\s*(\d+|\?\?)\s*W)?\s*\|\s*(\d+)\s*/\s*(\d+)\s*MB\s*\|(.*)$"
)
_PROCESS = re.compile(r"(\S+?)(?::(\S+?))?(?:/(\d+))?\((\d+)M\)")


@dataclass
class Sample:
    timestamp: float | None
    gpus: list[GpuSample] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    hostname: str | None = None
    driver: str | None = None


@dataclass
class GpustatPlan:
    json: bool
    samples: list[Sample] = field(default_factory=list)


def _num(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (true/false, a string, null).
    By exact type: the values come from ``json`` (no subclass of int but bool)."""
    kind = type(value)
    return float(value) if kind is int or kind is float else None


_GPUSTAT_KEYS = ("utilization.gpu", "memory.used", "temperature.gpu", "power.draw")
"""Keys of a gpustat --json GPU object (gpustat 1.x); a hand-made ``gpus`` list
without any of them is read by the JSON-lines reader."""


def _gpustat_keys(doc: dict[str, Any]) -> bool:
    """Whether ``doc``'s ``gpus`` list holds a GPU object with gpustat's keys."""
    gpus = doc.get("gpus")
    return any(isinstance(g, dict) and any(k in g for k in _GPUSTAT_KEYS) for g in gpus or ())


def from_json(doc: dict[str, Any]) -> Sample:
    raw_time = doc.get("query_time")
    sample = Sample(
        timestamp=dates.parse_date(raw_time) if isinstance(raw_time, str) else None,
        hostname=doc.get("hostname") if isinstance(doc.get("hostname"), str) else None,
        driver=doc.get("driver_version") if isinstance(doc.get("driver_version"), str) else None,
    )
    for g in doc.get("gpus") or ():
        if not isinstance(g, dict) or not isinstance(g.get("index"), int):
            continue
        index = g["index"]
        used, total = _num(g.get("memory.used")), _num(g.get("memory.total"))
        util = _num(g.get("utilization.gpu"))
        sample.gpus.append(
            GpuSample(
                index=index,
                name=g.get("name") if isinstance(g.get("name"), str) else None,
                uuid=g.get("uuid") if isinstance(g.get("uuid"), str) else None,
                sm_percent=util if util is not None and 0 <= util <= 100 else None,
                vram_used_bytes=None if used is None else round(used * MIB),
                vram_total_bytes=None if total is None else round(total * MIB),
                temperature_c=_num(g.get("temperature.gpu")),
                power_watts=_num(g.get("power.draw")),
                power_limit_watts=_num(g.get("enforced.power.limit")),
            )
        )
        for p in g.get("processes") or ():
            if not isinstance(p, dict) or not isinstance(p.get("pid"), int):
                continue
            vram = _num(p.get("gpu_memory_usage"))
            command = p.get("command") if isinstance(p.get("command"), str) else None
            sample.processes.append(
                GpuProcess(
                    pid=p["pid"],
                    gpu_index=index,
                    vram_bytes=None if vram is None else round(vram * MIB),
                    cpu_percent=_num(p.get("cpu_percent")),
                    user=p.get("username") if isinstance(p.get("username"), str) else None,
                    name=command,
                    command=command or "",
                )
            )
    return sample


def json_documents(
    text_pieces: Iterator[tuple[int, str]], on_bad: Any
) -> Iterator[tuple[int, dict[str, Any]]]:
    """JSON objects from lines, whether one per line or pretty-printed over many.

    A line that opens an object at its first column (``{``, where a pretty-printed
    document's inner lines are indented) while an earlier document is still open ends
    that one as cut short: one damaged line costs itself, not the objects after it."""
    decoder = json.JSONDecoder()
    buffer = ""
    start = 0
    for number, line in text_pieces:
        if buffer and line.startswith("{"):
            on_bad(start, "JSON document cut short")
            buffer = ""
        if not buffer:
            stripped = line.lstrip()
            if not stripped:
                continue
            if stripped[0] != "{":
                on_bad(number, "not a JSON object")
                continue
            start = number
            # One object a line, the common case: no buffer to build. What orjson reads
            # whole, raw_decode reads the same (it would also read past trailing text).
            doc = fastjson.try_loads(stripped)
            if doc is MISSING:
                try:
                    doc, _end = decoder.raw_decode(stripped)
                except (ValueError, RecursionError):  # too deep: a bad line, no traceback
                    doc = MISSING  # cut short (pretty-printed), or malformed: see below
            if doc is not MISSING:
                if isinstance(doc, dict):
                    yield start, doc
                else:
                    on_bad(start, "not a gpustat JSON object")
                continue
        buffer += line + "\n"
        try:
            doc, _end = decoder.raw_decode(buffer.lstrip())
        except (ValueError, RecursionError):
            if len(buffer) > MAX_DOCUMENT:
                on_bad(start, "JSON document too long or malformed")
                buffer = ""
            continue
        buffer = ""
        if isinstance(doc, dict):
            yield start, doc
        else:
            on_bad(start, "not a gpustat JSON object")
    if buffer.strip():
        on_bad(start, "JSON document cut short at the end")


class TextReader:
    """gpustat's text: a header line (hostname, date, driver), then one line per GPU."""

    def __init__(self, on_bad: Any) -> None:
        self.on_bad = on_bad
        self.sample: Sample | None = None

    def feed(self, number: int, line: str) -> Sample | None:
        text = line.strip()
        if not text:
            return None
        if text.startswith("["):
            m = _GPU_LINE.match(text)
            if m is None:
                self.on_bad(number, "not a gpustat GPU line")
                return None
            if self.sample is None:
                self.sample = Sample(None)
            self._gpu(m)
            return None
        stamp = dates.parse_date(text)
        if stamp is None:
            return None
        done, self.sample = self.sample, Sample(stamp, hostname=text.split()[0])
        driver = text.split()[-1]
        self.sample.driver = driver if driver[:1].isdigit() else None
        return done if done is not None and done.gpus else None

    def finish(self) -> Sample | None:
        done, self.sample = self.sample, None
        return done if done is not None and done.gpus else None

    def _gpu(self, m: re.Match[str]) -> None:
        assert self.sample is not None
        index, name, temp, util, power, limit, used, total, procs = m.groups()

        def number(text: str | None) -> float | None:
            return None if text is None or text == "??" else float(text)

        self.sample.gpus.append(
            GpuSample(
                index=int(index),
                name=name or None,
                sm_percent=number(util),
                vram_used_bytes=int(used) * MIB,
                vram_total_bytes=int(total) * MIB,
                temperature_c=number(temp),
                power_watts=number(power),
                power_limit_watts=number(limit),
            )
        )
        for pm in _PROCESS.finditer(procs):
            user, command, pid, mem = pm.groups()
            if pid is None:
                continue  # without -p gpustat names no pid: nothing to key the row on
            self.sample.processes.append(
                GpuProcess(
                    pid=int(pid),
                    gpu_index=int(index),
                    vram_bytes=int(mem) * MIB,
                    user=user,
                    name=command,
                    command=command or "",
                )
            )


def sniff(head: Head, mapping: Mapping[str, str] | None) -> GpustatPlan | str:
    lines = head.nonblank
    if not lines:
        return "empty file"
    if lines[0].lstrip().startswith("{"):
        found = [doc for _n, doc in json_documents(enumerate(head.lines, 1), lambda *_: None)]
        if not found or not all(isinstance(d.get("gpus"), list) for d in found):
            return "JSON, but not gpustat's (no 'gpus' list)"
        if not any(_gpustat_keys(d) for d in found):
            return "JSON with a 'gpus' list, but not gpustat's keys (utilization.gpu, memory.used)"
        return GpustatPlan(True, [from_json(d) for d in found])
    if not any(_GPU_LINE.match(line.strip()) for line in lines[:8]):
        return "no '[0] NAME | 45°C, 95 % | 20000 / 81920 MB |' gpustat line"
    reader = TextReader(lambda *_: None)
    return GpustatPlan(False, list(drive(reader, enumerate(head.lines, start=1), finish=False)))


def open_gpustat(
    path: Path, plan: GpustatPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    notes = [f"{LABEL} {'JSON' if plan.json else 'text'}"]
    times = [s.timestamp for s in plan.samples if s.timestamp is not None]
    interval = choose_interval(median_interval(times), interval_s, notes, bool(times))
    has_processes = any(s.processes for s in plan.samples) or plan.json
    missing = [METRIC_MEMORY_ACCESS, METRIC_PCIE, METRIC_HOST_CPU, METRIC_SUBSECOND]
    missing += [METRIC_THROTTLE] + ([] if has_processes else ["processes"])
    hostnames = {s.hostname for s in plan.samples if s.hostname}
    info = StreamInfo(
        path=str(path),
        format=FORMAT,
        interval_s=interval,
        hostname=next(iter(hostnames)) if len(hostnames) == 1 else None,
        gpu_count=max((len(s.gpus) for s in plan.samples), default=None) or None,
        missing=tuple(missing),
        detail="; ".join(notes),
    )
    detail = f"{LABEL}: {path.name}"

    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        clock = Clock(counters, interval)
        host = HostSample(
            hostname=info.hostname or "unknown", cpu_percent_per_core=(), allowed_cores=()
        )

        def make(sample: Sample) -> Snapshot:
            gpus = sample.gpus
            # By position, as the Assembler passes them (see _table._SNAPSHOT_HEAD).
            return Snapshot(
                clock.next(sample.timestamp), interval, host,
                tuple(gpus) if len(gpus) < 2 else tuple(sorted(gpus, key=_BY_INDEX)),
                tuple(sample.processes), "replay", detail, sample.driver,
            )  # fmt: skip

        def bad(number: int, reason: str) -> None:
            note_bad_line(counters, number, reason)

        if plan.json:
            for _number, doc in json_documents(source.lines(), bad):
                yield make(from_json(doc))
            return
        for sample in drive(TextReader(bad), source.lines()):
            yield make(sample)

    return ImportedStream(path, info, reader, counters=counters)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_gpustat,
    metrics=frozenset({METRIC_SM, METRIC_VRAM, METRIC_TEMPERATURE, METRIC_POWER, METRIC_PROCESSES}),
    docs="gpustat",
)
