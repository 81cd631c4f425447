"""MLflow system metrics: a run's ``metrics/system/gpu_N_*`` files (file store).

With ``mlflow.start_run(log_system_metrics=True)`` (MLflow >= 2.8) a thread samples
NVML every 10 s (``MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL``), averages
``MLFLOW_SYSTEM_METRICS_SAMPLES_BEFORE_LOGGING`` samples (default 1), rounds each
to 0.1 and logs them all under one timestamp (ms) and step as ``system/<name>``.
The file store keeps one file a metric, ``mlruns/<experiment>/<run>/metrics/system/
<name>``, one line a logged value: ``<timestamp ms> <value> <step>``.

Files used (``N`` = GPU index):

* ``gpu_N_utilization_percentage`` -> SM % (NVML utilization.gpu).
* ``gpu_N_memory_usage_megabytes`` -> VRAM used; MLflow divides NVML's bytes by
  1e6, so these are decimal megabytes.
* ``gpu_N_memory_usage_percentage`` (used / total, 0.1 %) -> with the megabytes, the
  VRAM total (derived: used / share, from the sample with the largest share,
  where the rounding costs least).
* ``gpu_N_power_usage_watts`` -> power; ``gpu_N_power_usage_percentage`` (of the
  enforced limit) -> the power limit, derived the same way.
* ``cpu_utilization_percentage`` is one whole-host number: not spread over
  pseudo-cores (as with W&B's ``system.cpu``), summarised in
  ``StreamInfo.header["system_cpu_percent"]``. Memory, disk and network metrics
  are not read.

A snapshot is every value logged at one timestamp, all GPUs. A folder given (the
run's, its ``metrics/`` or ``metrics/system/``, or a ``system/<node_id>/`` folder of
a multi-node run) reads every GPU file in it; one file given reads that metric of
that GPU (the GPU and the metric from the file's name).
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gputop_hints.model import GpuSample, HostSample, Snapshot
from gputop_hints.sources.files._base import ReadingStream
from gputop_hints.sources.files._interval import choose_interval
from gputop_hints.sources.files._table import Clock, median_interval
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.mapping import vram_constant
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import (
    ALL_METRICS,
    METRIC_POWER,
    METRIC_SM,
    METRIC_VRAM,
    ReadCounters,
    StreamInfo,
    UnrecognisedFormat,
    require_regular_file,
)

FORMAT = "mlflow"
LABEL = "MLflow system metrics"

MEGABYTE = 1e6
"""MLflow's ``memory_usage_megabytes`` is NVML's bytes / 1e6 (gpu_monitor.py)."""

_GPU_FILE = re.compile(
    r"^gpu_(\d{1,4})_(utilization_percentage|memory_usage_megabytes|memory_usage_percentage"
    r"|power_usage_watts|power_usage_percentage)$"
)
CPU_FILE = "cpu_utilization_percentage"
_LINE = re.compile(r"^(\d{1,16}) (\S+)(?: (-?\d{1,19}))?$")
"""What the file store appends: ``<timestamp ms> <value> <step>`` (older: no step)."""

_RANGES = {
    "utilization_percentage": (0.0, 100.0),
    "memory_usage_percentage": (0.0, 100.0),
    "power_usage_percentage": (0.0, 1000.0),  # a card can draw past its limit briefly
    "memory_usage_megabytes": (0.0, 2.0**50 / MEGABYTE),
    "power_usage_watts": (0.0, 20000.0),
    CPU_FILE: (0.0, 100.0),
}


@dataclass
class MlflowPlan:
    folder: Path
    files: dict[tuple[int, str], Path]
    """(GPU index, metric name) -> its file."""
    cpu_file: Path | None = None
    times: list[float] = field(default_factory=list)
    """Seconds, from the head of one file (for the interval)."""


def _parse(text: str) -> tuple[int, float] | str:
    """A metric line -> (timestamp ms, value), or what is wrong with it."""
    m = _LINE.match(text.strip())
    if m is None:
        fields = len(text.split())
        if fields not in (2, 3):
            return f"{fields} field(s), expected '<timestamp ms> <value> <step>'"
        return "the timestamp (ms) or step is not a whole number"
    try:
        value = float(m.group(2))
    except ValueError:
        return f"value {m.group(2)[:40]!r} is not a number"
    if not math.isfinite(value):
        return f"value {m.group(2)!r} is not a finite number"
    return int(m.group(1)), value


def _head_times(head: Head) -> list[float] | str:
    """The head's times (s), or why its lines are not a metric file's."""
    lines = head.nonblank[:50]
    if not lines:
        return "empty file"
    parsed = [_parse(line) for line in lines]
    good = [p for p in parsed if not isinstance(p, str)]
    if len(good) * 2 < len(lines):
        bad = next(p for p in parsed if isinstance(p, str))
        return f"lines are not '<timestamp ms> <value> <step>' ({bad})"
    return [t / 1000.0 for t, _ in good]


def sniff(head: Head, mapping: Mapping[str, str] | None) -> MlflowPlan | str:
    """One metric file: its name a GPU metric MLflow logs, its lines the file store's."""
    m = _GPU_FILE.match(head.path.name)
    times = _head_times(head)
    if m is None:
        if isinstance(times, str):
            return "not an MLflow metric file (named gpu_N_utilization_percentage, ...)"
        return (
            f"an MLflow metric file, but {head.path.name!r} is no GPU metric "
            "(gpu_N_utilization_percentage, ...): give the run's folder"
        )
    if isinstance(times, str):
        return times
    plan = MlflowPlan(head.path.parent, {(int(m.group(1)), m.group(2)): head.path})
    plan.times = times
    return plan


def _gpu_files(folder: Path) -> dict[tuple[int, str], Path]:
    found: dict[tuple[int, str], Path] = {}
    for entry in folder.iterdir():
        m = _GPU_FILE.match(entry.name)
        if m is not None and entry.is_file():
            found[(int(m.group(1)), m.group(2))] = entry
    return found


def sniff_folder(path: Path, mapping: Mapping[str, str] | None) -> MlflowPlan | str:
    """An MLflow run folder, its ``metrics/`` or ``metrics/system/`` (or a node's folder
    under it): the folder holding ``gpu_N_*`` files, or why there is none."""
    for folder in (path, path / "system", path / "metrics" / "system"):
        if not folder.is_dir():
            continue
        files = _gpu_files(folder)
        if files:
            break
        nodes = (
            sorted(d.name for d in folder.iterdir() if d.is_dir() and _gpu_files(d))
            if folder.name == "system"
            else []
        )
        if nodes:
            return (
                f"system metrics of {len(nodes)} nodes ({', '.join(nodes[:4])}): give one "
                f"node's folder, e.g. {folder / nodes[0]}"
            )
    else:
        runs = [d for d in sorted(path.iterdir()) if (d / "metrics" / "system").is_dir()]
        if runs:
            return (
                f"an MLflow experiment folder with {len(runs)} run(s): give one run's folder, "
                f"e.g. {runs[0]}"
            )
        return (
            "no MLflow GPU metric files in it (an MLflow run folder, mlruns/<experiment>/"
            "<run>, or its metrics/ or metrics/system/ folder, holding gpu_N_* files)"
        )
    cpu = folder / CPU_FILE
    plan = MlflowPlan(folder, files, cpu if cpu.is_file() else None)
    first = files.get((min(i for i, _ in files), "utilization_percentage")) or next(
        iter(files.values())
    )
    try:
        head = Head(first)
    except (OSError, UnrecognisedFormat) as exc:
        return f"{first.name}: {exc}"
    times = _head_times(head)
    if isinstance(times, str):
        return f"{first.name}: {times}"
    plan.times = times
    return plan


def _values(
    path: Path, key: tuple[int, str], counters: ReadCounters
) -> Generator[tuple[int, tuple[int, str], float]]:
    """(timestamp ms, key, value) of each good line of one metric file; bad lines
    counted, naming the file."""
    low, high = _RANGES[key[1]]

    last = [0]  # a line noted twice (a NUL run, then the text after it) counts once

    def bad(line: int, reason: str) -> None:
        if line != last[0]:
            last[0] = line
            counters.note_bad_line(line, f"{path.name} line {line}: {reason}", distinct=True)

    source = TextSource(path, on_bad_line=bad)
    try:
        for line, text in source.lines():
            if not text.strip():
                continue
            parsed = _parse(text)
            if isinstance(parsed, str):
                bad(line, parsed)
                continue
            stamp, value = parsed
            if not low <= value <= high:
                bad(line, f"{key[1]} {value:g} is out of range ({low:g}-{high:g})")
                continue
            yield stamp, key, value
    finally:
        source.close()


def _derived_totals(plan: MlflowPlan, amount: str, share: str) -> dict[int, float]:
    """Per GPU: amount / share * 100 at the sample with the largest share (MLflow
    rounds both to 0.1, so the largest share gives the closest total)."""
    totals: dict[int, float] = {}
    scratch = ReadCounters()  # bad lines are counted when the snapshots are read
    for index in sorted({i for i, _ in plan.files}):
        a, s = plan.files.get((index, amount)), plan.files.get((index, share))
        if a is None or s is None:
            continue
        amounts = {t: x for t, _, x in _values(a, (index, amount), scratch)}
        best: tuple[float, float] | None = None
        for t, _, pct in _values(s, (index, share), scratch):
            x = amounts.get(t)
            if x is not None and pct > 0 and (best is None or pct > best[0]):
                best = (pct, x)
        if best is not None:
            totals[index] = best[1] / best[0] * 100.0
    return totals


def read(
    plan: MlflowPlan,
    counters: ReadCounters,
    interval: float,
    detail: str,
    vram_totals: dict[int, int],
    power_limits: dict[int, float],
) -> Generator[Snapshot]:
    clock = Clock(counters, interval)
    host = HostSample(hostname="unknown", cpu_percent_per_core=(), allowed_cores=())
    streams = [_values(path, key, counters) for key, path in sorted(plan.files.items())]
    if plan.cpu_file is not None:
        streams.append(_values(plan.cpu_file, (-1, CPU_FILE), counters))
    batch: dict[tuple[int, str], float] = {}
    stamp: int | None = None
    merged = heapq.merge(*streams, key=lambda item: item[0])
    try:
        # A last item of its own time flushes the last batch.
        for t, key, value in itertools.chain(merged, [(-1, (-1, ""), 0.0)]):
            if t != stamp and batch:
                snapshot = _snapshot(batch, vram_totals, power_limits)
                if snapshot:
                    counters.saw_gpus(len(snapshot))
                    yield Snapshot(
                        timestamp=clock.next(stamp / 1000.0 if stamp is not None else None),
                        interval_s=interval,
                        host=host,
                        gpus=snapshot,
                        source="replay",
                        source_detail=detail,
                    )
                batch = {}
            stamp = t
            if key[1] == CPU_FILE:
                # As the W&B reader summarises its one-number system.cpu.
                counters.note_stat("system_cpu_percent", "all", value)
            elif key[1]:
                batch[key] = value
    finally:
        for s in streams:
            s.close()


def _snapshot(
    batch: dict[tuple[int, str], float],
    vram_totals: dict[int, int],
    power_limits: dict[int, float],
) -> tuple[GpuSample, ...]:
    gpus = []
    for index in sorted({i for i, _ in batch}):
        used_mb = batch.get((index, "memory_usage_megabytes"))
        share = batch.get((index, "memory_usage_percentage"))
        total = vram_totals.get(index)
        used: int | None = None
        if used_mb is not None:
            used = round(used_mb * MEGABYTE)
        elif share is not None and total is not None:
            used = round(total * share / 100.0)
        gpus.append(
            GpuSample(
                index=index,
                sm_percent=batch.get((index, "utilization_percentage")),
                vram_used_bytes=used,
                vram_total_bytes=total,
                power_watts=batch.get((index, "power_usage_watts")),
                power_limit_watts=power_limits.get(index),
            )
        )
    return tuple(gpus)


class MlflowStream(ReadingStream):
    """The snapshots of an MLflow run's GPU metric files, joined by timestamp;
    each ``iter()`` reads the files again from the start."""

    def __init__(
        self,
        plan: MlflowPlan,
        info: StreamInfo,
        vram_totals: dict[int, int],
        power_limits: dict[int, float],
    ) -> None:
        super().__init__(info)
        self.plan = plan
        self._totals = vram_totals
        self._limits = power_limits

    def _read(self) -> Generator[Snapshot, None, None]:
        return read(
            self.plan,
            self.counters,
            self.info.interval_s or 10.0,
            f"{LABEL}: {self.plan.folder.name}",
            self._totals,
            self._limits,
        )


def missing(plan: MlflowPlan, vram_known: bool) -> tuple[str, ...]:
    metrics = {m for _, m in plan.files}
    present = set()
    if "utilization_percentage" in metrics:
        present.add(METRIC_SM)
    if "memory_usage_megabytes" in metrics or (vram_known and "memory_usage_percentage" in metrics):
        present.add(METRIC_VRAM)
    if "power_usage_watts" in metrics:
        present.add(METRIC_POWER)
    return tuple(m for m in ALL_METRICS if m not in present)


def open_mlflow(
    path: Path, plan: MlflowPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> MlflowStream:
    """The stream of an MLflow run's system metrics (a folder, or one metric file)."""
    for file in plan.files.values():
        require_regular_file(file)
    gpus = sorted({i for i, _ in plan.files})
    notes = [f"MLflow system metrics, {len(gpus)} GPU(s), {len(plan.files)} metric file(s)"]
    interval = choose_interval(median_interval(plan.times), interval_s, notes, bool(plan.times))
    given = vram_constant(mapping)
    if given is not None:
        vram_totals = dict.fromkeys(gpus, given)
        notes.append(f"VRAM total {given} bytes (given)")
    else:
        vram_totals = {
            i: round(x * MEGABYTE / 2**20) * 2**20
            for i, x in _derived_totals(
                plan, "memory_usage_megabytes", "memory_usage_percentage"
            ).items()
        }
        if vram_totals:
            notes.append("VRAM total derived: megabytes (1e6 bytes) / memory_usage_percentage")
    power_limits = {
        i: round(x)
        for i, x in _derived_totals(plan, "power_usage_watts", "power_usage_percentage").items()
    }
    if power_limits:
        notes.append("power limit derived: watts / power_usage_percentage")
    if plan.cpu_file is not None:
        notes.append(
            "host CPU per core unknown (cpu_utilization_percentage is one number: see "
            "header['system_cpu_percent'])"
        )
    info = StreamInfo(
        path=str(path),
        format=FORMAT,
        interval_s=interval,
        hostname=None,
        gpu_count=len(gpus),
        missing=missing(plan, given is not None),
        detail="; ".join(notes),
        header={"metric_files": sorted(p.name for p in plan.files.values())},
    )
    return MlflowStream(plan, info, vram_totals, {i: float(x) for i, x in power_limits.items()})


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_mlflow,
    metrics=frozenset({METRIC_SM, METRIC_VRAM, METRIC_POWER}),
    docs="MLflow system metrics",
    sniff_folder=sniff_folder,
)
