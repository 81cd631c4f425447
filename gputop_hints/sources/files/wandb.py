"""Weights & Biases system metrics: ``wandb-events.jsonl`` (one JSON object a line).

Keys used (``system.`` prefix, ``N`` = GPU index):

* ``gpu.N.gpu`` -> SM %; ``gpu.N.memory`` -> memory-access %;
  ``gpu.N.temp``; ``gpu.N.powerWatts``; ``gpu.N.enforcedPowerLimitWatts``;
  ``gpu.N.smClock``; ``gpu.N.memoryAllocatedBytes`` -> VRAM used.
* ``gpu.N.memoryAllocated`` is a *percentage* of VRAM. Bytes follow only when
  the total is known -- from ``memoryAllocatedBytes`` (total = bytes / share) or
  from ``--map vram_total=24GiB``. Otherwise VRAM bytes stay None (the VRAM
  rules cannot run) and the share is summarised per GPU in
  ``StreamInfo.header["vram_allocated_percent"]``.
* ``cpu.N.cpu_percent`` (newer SDKs) -> per-core host CPU. The bare
  ``system.cpu`` is one number -- whole-host CPU % in old SDKs, this process's
  share of all cores in newer ones -- so it is *not* spread over pseudo-cores
  (which would make "all cores busy" rules lie); it is summarised in
  ``StreamInfo.header["system_cpu_percent"]`` and host per-core CPU stays unknown.
* ``gpu.process.N.*`` (the same GPU seen from the run's process) is ignored.
* ``_timestamp`` (epoch seconds) is the time; failing that ``_runtime``
  (seconds since the run started).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop_hints.model import GpuSample, HostSample, Snapshot
from gputop_hints.recording import fastjson
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._table import Clock, median_interval
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files._values import epoch_number
from gputop_hints.sources.files.mapping import vram_constant
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import (
    ALL_METRICS,
    METRIC_HOST_CPU,
    METRIC_MEMORY_ACCESS,
    METRIC_POWER,
    METRIC_SM,
    METRIC_TEMPERATURE,
    METRIC_VRAM,
    ReadCounters,
    StreamInfo,
)

FORMAT = "wandb"
LABEL = "W&B system metrics"

_GPU_KEY = re.compile(r"^system\.gpu\.(\d{1,4})\.([A-Za-z_]+)$")
_CPU_KEY = re.compile(r"^system\.cpu\.(\d{1,4})\.cpu_percent$")

_PERCENT = {"gpu": "sm", "memory": "mem", "memoryAllocated": "vram_pct"}
_PLAIN = {
    "temp": ("temp", -60.0, 200.0),
    "powerWatts": ("power", 0.0, 20000.0),
    "enforcedPowerLimitWatts": ("power_limit", 0.0, 20000.0),
    "smClock": ("sm_clock", 0.0, 100000.0),
    "memoryAllocatedBytes": ("vram_bytes", 0.0, 2.0**50),
}


@dataclass
class WandbPlan:
    gpu_count: int
    times: list[float] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    per_core: bool = False


def _json_object(line: str) -> dict[str, Any] | None:
    try:
        obj = fastjson.loads(line)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def _time(obj: Mapping[str, Any]) -> float | None:
    for key in ("_timestamp", "_runtime", "timestamp"):
        t = _number(obj.get(key))
        if t is not None and t >= 0:
            return epoch_number(t)[0]
    return None


def sniff(head: Head, mapping: Mapping[str, str] | None) -> WandbPlan | str:
    lines = head.nonblank
    if not lines:
        return "empty file"
    objects = []
    for line in lines[:50]:
        obj = _json_object(line)
        if obj is not None:
            objects.append(obj)
    if not objects:
        return "not JSON lines"
    if any(o.get("format") == "gputop-hints-recording" for o in objects[:1]):
        return "a gputop-hints recording, not W&B"
    with_system = [o for o in objects if any(str(k).startswith("system.") for k in o)]
    if not with_system:
        return "JSON lines without W&B 'system.*' keys"
    plan = WandbPlan(0)
    for o in with_system:
        plan_add(plan, o)
    return plan


def plan_add(plan: WandbPlan, obj: Mapping[str, object]) -> None:
    """Learn from one sample (``system.*`` keys, ``_timestamp``) what the file holds."""
    for k in obj:
        m = _GPU_KEY.match(str(k))
        if m is not None:
            plan.gpu_count = max(plan.gpu_count, int(m.group(1)) + 1)
            plan.keys.add(m.group(2))
        if _CPU_KEY.match(str(k)):
            plan.per_core = True
    t = _time(obj)
    if t is not None:
        plan.times.append(t)


def missing(plan: WandbPlan, vram_known: bool) -> tuple[str, ...]:
    present = set()
    if "gpu" in plan.keys:
        present.add(METRIC_SM)
    if "memory" in plan.keys:
        present.add(METRIC_MEMORY_ACCESS)
    if "memoryAllocatedBytes" in plan.keys or vram_known:
        present.add(METRIC_VRAM)
    if "temp" in plan.keys:
        present.add(METRIC_TEMPERATURE)
    if "powerWatts" in plan.keys:
        present.add(METRIC_POWER)
    if plan.per_core:
        present.add(METRIC_HOST_CPU)
    return tuple(m for m in ALL_METRICS if m not in present)


def plan_interval(plan: WandbPlan) -> float | None:
    return median_interval(plan.times)


class SystemRows:
    """Turns W&B samples (``system.*`` keys, ``_timestamp``) into snapshots: the one
    mapping of W&B's metric names, shared by ``wandb-events.jsonl`` and the binary
    run file. Keeps the summaries of what is not per GPU in ``counters.found``."""

    def __init__(
        self, counters: ReadCounters, interval: float, detail: str, vram_total: int | None
    ) -> None:
        self.counters = counters
        self.interval = interval
        self.detail = detail
        self.vram_total = vram_total
        self.clock = Clock(counters, interval)
        self.empty_host = HostSample(hostname="unknown", cpu_percent_per_core=(), allowed_cores=())

    def snapshot(self, obj: Mapping[str, Any]) -> Snapshot | None:
        """The snapshot of one sample; None when it holds no system metrics."""
        per_gpu: dict[int, dict[str, float]] = {}
        cores: dict[int, float] = {}
        for key, value in obj.items():
            m = _GPU_KEY.match(str(key))
            if m is not None:
                x = _number(value)
                if x is None:
                    continue
                metric = m.group(2)
                slot = per_gpu.setdefault(int(m.group(1)), {})
                if metric in _PERCENT:
                    if 0.0 <= x <= 100.0:
                        slot[_PERCENT[metric]] = x
                elif metric in _PLAIN:
                    name, low, high = _PLAIN[metric]
                    if low <= x <= high:
                        slot[name] = x
                continue
            c = _CPU_KEY.match(str(key))
            if c is not None:
                x = _number(value)
                if x is not None and 0.0 <= x <= 100.0:
                    cores[int(c.group(1))] = x
        if not per_gpu and not cores and not any(str(k).startswith("system.") for k in obj):
            return None
        cpu = _number(obj.get("system.cpu"))
        if cpu is not None and 0.0 <= cpu <= 100.0:
            self.counters.note_stat("system_cpu_percent", "all", cpu)
        gpus = []
        for index in sorted(per_gpu):
            s = per_gpu[index]
            pct = s.get("vram_pct")
            used_bytes = s.get("vram_bytes")
            total: int | None = self.vram_total
            used: int | None = None
            if pct is not None:
                self.counters.note_stat("vram_allocated_percent", str(index), pct)
            if used_bytes is not None:
                used = round(used_bytes)
                if total is None and pct is not None and pct > 0:
                    total = round(used_bytes / (pct / 100.0) / 2**20) * 2**20
            elif pct is not None and total is not None:
                used = round(total * pct / 100.0)
            clock_mhz = s.get("sm_clock")
            gpus.append(
                GpuSample(
                    index=index,
                    sm_percent=s.get("sm"),
                    memory_access_percent=s.get("mem"),
                    vram_used_bytes=used,
                    vram_total_bytes=total,
                    temperature_c=s.get("temp"),
                    power_watts=s.get("power"),
                    power_limit_watts=s.get("power_limit"),
                    sm_clock_mhz=None if clock_mhz is None else round(clock_mhz),
                )
            )
        host = self.empty_host
        if cores:
            n = max(cores) + 1
            host = HostSample(
                hostname="unknown",
                cpu_percent_per_core=tuple(cores.get(i) for i in range(n)),
                allowed_cores=tuple(range(n)),
            )
        self.counters.saw_gpus(len(gpus))
        return Snapshot(
            timestamp=self.clock.next(_time(obj)),
            interval_s=self.interval,
            host=host,
            gpus=tuple(gpus),
            source="replay",
            source_detail=self.detail,
        )


def read(
    source: TextSource,
    counters: ReadCounters,
    interval: float,
    detail: str,
    vram_total: int | None,
) -> Iterator[Snapshot]:
    rows = SystemRows(counters, interval, detail, vram_total)
    for line, text in source.lines():
        if not text.strip():
            continue
        obj = _json_object(text)
        if obj is None:
            counters.note_bad_line(line, "not a JSON object")
            continue
        snapshot = rows.snapshot(obj)
        if snapshot is None:
            counters.note_bad_line(line, "no system metrics in this line")
            continue
        yield snapshot


def describe(plan: WandbPlan, vram_total: int | None, notes: list[str]) -> None:
    """The notes on what W&B's metrics leave unknown: VRAM as a share, one CPU number."""
    if "memoryAllocated" in plan.keys and "memoryAllocatedBytes" not in plan.keys:
        if vram_total is None:
            notes.append(
                "VRAM only as a share (memoryAllocated %): bytes unknown, see "
                "header['vram_allocated_percent']; give --map vram_total=SIZE for bytes"
            )
        else:
            notes.append(f"VRAM bytes from memoryAllocated % of {vram_total} bytes (given)")
    if not plan.per_core:
        notes.append(
            "host CPU per core unknown (system.cpu is one number: see header['system_cpu_percent'])"
        )


def open_wandb(
    path: Path, plan: WandbPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of a ``wandb-events.jsonl``: one snapshot per line."""
    notes = [f"W&B system metrics, {plan.gpu_count} GPU(s)"]
    vram_total = vram_constant(mapping)
    interval = choose_interval(plan_interval(plan), interval_s, notes, bool(plan.times))
    describe(plan, vram_total, notes)
    info = StreamInfo(
        path=str(path),
        format=FORMAT,
        interval_s=interval,
        hostname=None,
        gpu_count=plan.gpu_count,
        missing=missing(plan, vram_total is not None),
        detail="; ".join(notes),
        header={},
    )
    detail = f"{LABEL}: {path.name}"
    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        return read(source, counters, interval, detail, vram_total)

    return ImportedStream(path, info, reader, counters=counters)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_wandb,
    metrics=frozenset(
        {
            METRIC_SM,
            METRIC_MEMORY_ACCESS,
            METRIC_VRAM,
            METRIC_TEMPERATURE,
            METRIC_POWER,
            METRIC_HOST_CPU,
        }
    ),
    docs="Weights & Biases",
)
