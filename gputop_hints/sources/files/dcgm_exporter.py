"""Saved ``/metrics`` scrapes of NVIDIA's dcgm-exporter (Prometheus text exposition).

::

    Fri Dec  4 10:00:00 UTC 2026
    # HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
    # TYPE DCGM_FI_DEV_GPU_UTIL gauge
    DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-...",device="nvidia0",Hostname="node-a"} 35
    DCGM_FI_DEV_FB_USED{gpu="0",...,namespace="ml",pod="train-0",container="trainer"} 20110

What people keep: ``curl -s localhost:9400/metrics > dcgm.txt``, or a loop appending a
scrape (often after ``date``) every few seconds. Each scrape is one snapshot. A scrape
ends where a series (metric name and labels) comes again, where a ``# HELP`` line of a
metric already seen in it comes again, or at a date line. Its time is the first
per-sample timestamp (Prometheus' optional milliseconds after the value), else the
date line before it, else none (``--interval``, or 1 s, spaces the scrapes).

Names, units and ratios are dcgm-exporter's (:mod:`gputop_hints.sources.dcgm_fields`,
shared with the Prometheus job source). A whole GPU is a series with a ``gpu`` label
and no ``GPU_I_ID``; a MIG instance's (``GPU_I_ID``, ``GPU_I_PROFILE``) framebuffer and
SM activity become the parent GPU's :class:`~gputop_hints.model.MigInstance`, never
its own numbers; its other series, and entities that are not GPUs (NVSwitches, CPUs),
are counted and skipped. ``pod``/``namespace``/``container`` labels (dcgm-exporter's
Kubernetes mapping) say who used each GPU: kept in the stream's header and
``counters.found["pods"]``; no process rows are made of them. DCGM's blank values
(a field not supported: ``9223372036854775794``) are unknown, not numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop_hints.model import GpuSample, HostSample, MigInstance, Snapshot
from gputop_hints.sources.dcgm_fields import (
    DCGM_FIELDS,
    RATIO_FIELDS,
    VRAM_FREE,
    is_blank,
    with_totals,
)
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._datelines import date_line
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._table import Clock, median_interval
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.spec import GPU_COLUMNS, FormatSpec
from gputop_hints.streams import (
    METRIC_HOST_CPU,
    METRIC_MEMORY_ACCESS,
    METRIC_PCIE,
    METRIC_POWER,
    METRIC_PROCESSES,
    METRIC_SUBSECOND,
    METRIC_THROTTLE,
    ReadCounters,
    StreamInfo,
)

FORMAT = "dcgm-exporter"
LABEL = "dcgm-exporter /metrics"

BY_METRIC: dict[str, tuple[str, float]] = {
    metric: (name, scale) for name, (metric, scale) in DCGM_FIELDS.items()
}
"""dcgm-exporter metric -> (GpuSample field or VRAM_FREE, scale to its unit)."""
PERCENT_FIELDS = frozenset({"sm_percent", "memory_access_percent"})
INT_FIELDS = frozenset(
    {"vram_used_bytes", "vram_total_bytes", "sm_clock_mhz", "pcie_generation", "pcie_width"}
)
MIG_FIELDS = frozenset({"vram_used_bytes", VRAM_FREE, "sm_active_percent"})
"""What a MIG instance's series give its :class:`MigInstance`."""
POD_LABELS = ("namespace", "pod", "container")
MAX_PODS_PER_GPU = 16
"""Pods remembered per GPU (more are counted, not named): memory stays constant."""
_LABEL_MEMO = 4096
"""Label sets remembered by their text (cleared when full)."""
_PROBE_SCRAPES = 12
_PROBE_BYTES = 4 << 20
"""How far ``open`` reads for the scrapes' spacing when the head holds too few."""

EARLIEST_S, LATEST_S = 946_684_800.0, 4_102_444_800.0
"""Sample timestamps outside 2000-2100 are not times (a counter, a typo): ignored."""

_SAMPLE = re.compile(
    r"([A-Za-z_:][A-Za-z0-9_:]*)[ \t]*(\{.*\})?[ \t]*([^ \t{}]+)(?:[ \t]+(-?[0-9]+))?[ \t]*"
)
_LABEL = re.compile(r'[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*(,|$)')
_ESCAPE = re.compile(r"\\(.)")


class SampleError(ValueError):
    """A line that is not a sample we can read; the message is the reason."""


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return _ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def parse_labels(text: str) -> dict[str, str]:
    """``{a="1",b="x\\"y"}`` -> {"a": "1", "b": 'x"y'}; SampleError when malformed."""
    body_end = len(text) - 1
    labels: dict[str, str] = {}
    pos = 1
    while pos < body_end:
        m = _LABEL.match(text, pos, body_end)
        if m is None:
            if not text[pos:body_end].strip():
                break
            raise SampleError(f"malformed labels at {text[pos : pos + 30]!r}")
        labels[m.group(1)] = _unescape(m.group(2))
        pos = m.end()
    return labels


def parse_value(text: str) -> float:
    """A sample's value; SampleError for one that is not a finite number."""
    try:
        if "_" in text:
            raise ValueError
        value = float(text)
    except ValueError:
        raise SampleError(f"value {text[:30]!r} is not a number") from None
    if value != value:
        raise SampleError("value NaN (not a number)")
    if value in (float("inf"), float("-inf")):
        raise SampleError(f"value {text} (infinite)")
    return value


@dataclass(frozen=True)
class _Series:
    """What a series' labels say, read once per label set."""

    key: tuple[str, str] | None
    """(host, gpu) of the GPU it belongs to; None: not a GPU (a switch, a CPU)."""
    uuid: str | None
    model: str | None
    driver: str | None
    pod: str | None
    mig: tuple[int, str | None] | None
    """(GPU instance id, profile) of a MIG instance's series."""


def _series(labels: Mapping[str, str]) -> _Series:
    gpu = labels.get("gpu")
    key = None if gpu is None else (labels.get("Hostname", ""), gpu)
    mig: tuple[int, str | None] | None = None
    instance = labels.get("GPU_I_ID", "")
    if instance:
        mig = (int(instance) if instance.isdigit() else -1, labels.get("GPU_I_PROFILE") or None)
    pod = None
    if labels.get("pod"):
        pod = f"{labels.get('namespace') or '?'}/{labels['pod']}"
        if labels.get("container"):
            pod += f" ({labels['container']})"
    return _Series(
        key,
        labels.get("UUID") or labels.get("uuid") or None,
        labels.get("modelName") or None,
        labels.get("DCGM_FI_DRIVER_VERSION") or None,
        pod,
        mig,
    )


@dataclass
class _Gpu:
    series: _Series
    values: dict[str, float] = field(default_factory=dict)
    migs: dict[int, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Scrape:
    """One scrape's GPUs as read (before the clock): its raw time and first line."""

    time: float | None
    line: int
    gpus: dict[tuple[str, str], _Gpu]


def _bump(counters: ReadCounters, name: str) -> None:
    counters.found[name] = int(counters.found.get(name, 0)) + 1  # type: ignore[call-overload]


class ScrapeReader:
    """Lines -> :class:`Scrape` objects; bad lines and what was skipped go to ``counters``."""

    def __init__(self, counters: ReadCounters) -> None:
        self.counters = counters
        self._memo: dict[str, _Series] = {}
        self.pods: dict[str, list[str]] = {}
        """GPU ("host GPU n" or "GPU n") -> pods seen on it, at most MAX_PODS_PER_GPU."""
        self.hosts: list[str] = []
        self.samples = 0
        """DCGM sample lines read (for sniffing)."""

    def _gpu_name(self, key: tuple[str, str]) -> str:
        return f"GPU {key[1]}" if len(self.hosts) <= 1 else f"{key[0]} GPU {key[1]}"

    def scrapes(self, lines: Iterable[tuple[int, str]]) -> Iterator[Scrape]:
        counters = self.counters
        gpus: dict[tuple[str, str], _Gpu] = {}
        seen: set[tuple[str, str]] = set()
        helps: set[str] = set()
        time: float | None = None
        date: float | None = None
        first = 0

        def cut() -> Scrape | None:
            nonlocal gpus, time, first, date
            out = Scrape(time if time is not None else date, first, gpus) if gpus else None
            if gpus:
                date = None  # a date line times the one scrape after it
            gpus, time, first = {}, None, 0
            seen.clear()
            helps.clear()
            return out

        for line, raw in lines:
            text = raw.strip()
            if not text:
                continue
            if text[0] == "#":
                if text.startswith("# HELP "):
                    parts = text.split(None, 3)
                    name = parts[2] if len(parts) > 2 else ""
                    if name in helps:
                        done = cut()
                        if done is not None:
                            yield done
                    helps.add(name)
                continue
            if "{" not in text and not text.startswith("DCGM_"):
                stamp = date_line(text)
                if stamp is not None:
                    done = cut()
                    if done is not None:
                        yield done
                    date = stamp
                    continue
            m = _SAMPLE.fullmatch(text)
            if m is None:
                counters.note_bad_line(
                    line, "not a Prometheus sample (name{labels} value [timestamp_ms])"
                )
                continue
            name, label_text, value_text, stamp_ms = m.groups()
            series_key = (name, label_text or "")
            if series_key in seen:
                done = cut()
                if done is not None:
                    yield done
            seen.add(series_key)
            try:
                series = self._memo.get(series_key[1])
                if series is None:
                    series = _series(parse_labels(label_text) if label_text else {})
                    if len(self._memo) >= _LABEL_MEMO:
                        self._memo.clear()
                    self._memo[series_key[1]] = series
                value = parse_value(value_text)
            except SampleError as exc:
                counters.note_bad_line(line, f"{name}: {exc}")
                continue
            if not first:
                first = line
            if stamp_ms is not None and time is None:
                stamp = int(stamp_ms) / 1000.0
                if EARLIEST_S <= stamp <= LATEST_S:
                    time = stamp
                else:
                    counters.note_bad_line(
                        line, f"{name}: timestamp {stamp_ms[:24]} ms is no time (ignored)"
                    )
            if name.startswith("DCGM_"):
                self.samples += 1
            read = BY_METRIC.get(name)
            if read is None:
                continue
            if series.key is None:
                _bump(counters, "other_entity_series")
                continue
            if is_blank(value):
                _bump(counters, "dcgm_blank_values")
                continue
            target, scale = read
            number = value * scale
            if target in RATIO_FIELDS and not 0.0 <= value <= 1.0:
                self._bad_cell(line, name, f"ratio {value_text} outside 0-1 (unknown)")
                continue
            if target in PERCENT_FIELDS and not 0.0 <= value <= 100.0:
                self._bad_cell(line, name, f"{value_text} % outside 0-100 (unknown)")
                continue
            gpu = gpus.get(series.key)
            if gpu is None:
                gpu = gpus[series.key] = _Gpu(series)
                if series.key[0] not in self.hosts and len(self.hosts) < 64:
                    self.hosts.append(series.key[0])
            if series.pod is not None:
                self._note_pod(series)
            if series.mig is not None:
                if target not in MIG_FIELDS:
                    _bump(counters, "mig_series_skipped")
                    continue
                gpu.migs.setdefault(series.mig[0], {"profile": series.mig[1]}).setdefault(
                    target, number
                )
                continue
            gpu.values.setdefault(target, number)
            if gpu.series.mig is not None:  # first seen as a MIG series: the GPU's own labels
                gpu.series = series
        done = cut()
        if done is not None:
            yield done

    def _note_pod(self, series: _Series) -> None:
        assert series.key is not None and series.pod is not None
        where = self._gpu_name(series.key)
        if series.mig is not None:
            where += f" MIG {series.mig[1] or series.mig[0]}"
        pods = self.pods.setdefault(where, [])
        if series.pod not in pods:
            if len(pods) < MAX_PODS_PER_GPU:
                pods.append(series.pod)
            else:
                _bump(self.counters, "pods_not_named")
        self.counters.found["pods"] = self.pods

    def _bad_cell(self, line: int, name: str, why: str) -> None:
        per_metric = self.counters.found.setdefault("bad_cells", {})
        assert isinstance(per_metric, dict)
        count, first = per_metric.get(name, (0, line))
        per_metric[name] = [count + 1, first]
        self.counters.note_bad_line(line, f"{name}: {why} (the rest of the scrape is kept)")


class _Indices:
    """GPU indices: a file of one host numbers its GPUs by their ``gpu`` label; GPUs of
    several hosts (or of a host that shows up later) are numbered in order of appearance."""

    def __init__(self, hosts: list[str]) -> None:
        self.first = hosts[0] if len(hosts) == 1 else None
        self.order: dict[tuple[str, str], int] = {}
        self.top = -1

    def of(self, key: tuple[str, str]) -> tuple[int, str | None]:
        """(index, node: None for the one host's GPUs)."""
        node = None if key[0] == self.first else key[0]
        index = self.order.get(key)
        if index is None:
            own = int(key[1]) if node is None and key[1].isdigit() else -1
            index = own if own >= 0 and own not in self.order.values() else self.top + 1
            self.order[key] = index
            self.top = max(self.top, index)
        return index, node


def gpu_sample(index: int, gpu: _Gpu, name: str, node: str | None) -> GpuSample:
    """One GPU of a scrape: its own series' values, its MIG instances beside them."""
    values = with_totals(dict(gpu.values))
    fields = {k: round(v) if k in INT_FIELDS else v for k, v in values.items()}
    migs = []
    for instance_id, found in sorted(gpu.migs.items()):
        used, free = found.get("vram_used_bytes"), found.get(VRAM_FREE)
        migs.append(
            MigInstance(
                gpu_instance_id=instance_id,
                compute_instance_id=0,
                profile=found.get("profile"),
                vram_used_bytes=None if used is None else round(used),
                vram_total_bytes=None if used is None or free is None else round(used + free),
                sm_active_percent=found.get("sm_active_percent"),
            )
        )
    model = gpu.series.model
    return GpuSample(
        index=index,
        name=name if node is not None else model,
        uuid=gpu.series.uuid,
        node=node,
        mig_mode=bool(migs),
        mig_instances=tuple(migs),
        **fields,  # type: ignore[arg-type]
    )


@dataclass
class ExporterPlan:
    scrapes: list[Scrape]
    hosts: list[str]
    pods: dict[str, list[str]]
    metrics: set[str]


def _probe(lines: Iterable[tuple[int, str]]) -> tuple[ScrapeReader, list[Scrape], ReadCounters]:
    counters = ReadCounters()
    reader = ScrapeReader(counters)
    return reader, list(reader.scrapes(lines)), counters


def sniff(head: Head, mapping: Mapping[str, str] | None) -> ExporterPlan | str:
    lines = head.nonblank
    if not lines:
        return "no lines"
    first = next((t.strip() for t in lines if date_line(t) is None), "")
    if not (first.startswith("# HELP ") or first.startswith("# TYPE ") or _SAMPLE.fullmatch(first)):
        return "first line is not Prometheus text exposition ('# HELP', '# TYPE' or a sample)"
    if not any(t.lstrip().startswith("DCGM_FI_") for t in lines[:400]):
        return "no DCGM_FI_ sample in the head (not dcgm-exporter's /metrics)"
    reader, scrapes, counters = _probe(enumerate(head.lines, start=1))
    if reader.samples == 0:
        return "no DCGM_FI_ sample that reads"
    if counters.bad_lines > reader.samples:  # more broken lines than samples read
        return f"{counters.bad_lines} lines of the head are not Prometheus samples"
    metrics = {m for m in BY_METRIC if any(m in t for t in lines[:2000])}
    return ExporterPlan(scrapes, reader.hosts, reader.pods, metrics)


def _interval(path: Path, plan: ExporterPlan) -> tuple[float | None, bool]:
    """The scrapes' median spacing and whether they carry times; reads on past the head
    (at most :data:`_PROBE_BYTES`) when it holds too few scrapes to tell."""
    scrapes = plan.scrapes
    if len(scrapes) < 3:
        source = TextSource(path)
        try:

            def bounded() -> Iterator[tuple[int, str]]:
                size = 0
                for number, text in source.lines():
                    size += len(text) + 1
                    if size > _PROBE_BYTES:
                        return
                    yield number, text

            reader = ScrapeReader(ReadCounters())
            scrapes = []
            for scrape in reader.scrapes(bounded()):
                scrapes.append(scrape)
                if len(scrapes) >= _PROBE_SCRAPES:
                    break
        finally:
            source.close()
    times = [s.time for s in scrapes if s.time is not None]
    return median_interval(times), bool(times)


def open_exporter(
    path: Path, plan: ExporterPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    notes = [f"{LABEL} scrapes (Prometheus text)"]
    found, timed = _interval(path, plan)
    how = "median spacing of the scrapes' times"
    interval = choose_interval(found, interval_s, notes, timed, how)
    hostname = plan.hosts[0] if len(plan.hosts) == 1 and plan.hosts[0] else None
    if len(plan.hosts) > 1:
        notes.append(f"hosts {', '.join(plan.hosts)}: GPUs named '<host> GPU <n>'")
    if plan.pods:
        notes.append(
            "pods: " + "; ".join(f"{gpu}: {', '.join(p)}" for gpu, p in plan.pods.items())
        )
    read = {BY_METRIC[m][0] for m in plan.metrics}
    missing = [METRIC_PROCESSES, METRIC_HOST_CPU, METRIC_SUBSECOND, METRIC_THROTTLE]
    if not read & {"pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s"}:
        missing.append(METRIC_PCIE)
    if "power_watts" not in read:
        missing.append(METRIC_POWER)
    if "memory_access_percent" not in read:
        missing.append(METRIC_MEMORY_ACCESS)
    gpu_keys = {k for s in plan.scrapes for k in s.gpus}
    info = StreamInfo(
        path=str(path),
        format=FORMAT,
        interval_s=interval,
        hostname=hostname,
        gpu_count=len(gpu_keys) or None,
        missing=tuple(missing),
        detail="; ".join(notes),
        header={
            "metrics": sorted(plan.metrics),
            "hosts": list(plan.hosts),
            "pods": {gpu: list(p) for gpu, p in plan.pods.items()},
        },
    )
    detail = f"{LABEL}: {path.name}"
    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        scrapes = ScrapeReader(counters)
        clock = Clock(counters, interval)
        indices = _Indices(plan.hosts or [""])
        most = 0
        for scrape in scrapes.scrapes(source.lines()):
            gpus = []
            driver = None
            for key, gpu in scrape.gpus.items():
                index, node = indices.of(key)
                gpus.append(gpu_sample(index, gpu, f"{key[0]} GPU {key[1]}", node))
                driver = driver or gpu.series.driver
            gpus.sort(key=lambda g: g.index)
            if len(gpus) > most:
                most = len(gpus)
                counters.saw_gpus(most)
            host = HostSample(
                hostname=indices.first or "unknown",
                cpu_percent_per_core=(),
                allowed_cores=(),
            )
            yield Snapshot(
                clock.next(scrape.time),
                interval,
                host,
                tuple(gpus),
                (),
                "replay",
                detail,
                driver,
            )

    return ImportedStream(path, info, reader, counters=counters)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_exporter,
    metrics=GPU_COLUMNS,
    docs="dcgm-exporter /metrics scrapes",
)
