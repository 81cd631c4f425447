"""What the monitor knows at each tick, as Prometheus metrics: :class:`SnapshotCollector`.

``gputop-hints export`` (:mod:`gputop_hints.cli.export`) samples a source, puts each
tick through a :class:`~gputop_hints.hints.diagnoser.Diagnoser` and hands the
snapshot and the visible findings to :meth:`SnapshotCollector.update`. A scrape
calls :meth:`SnapshotCollector.collect`, which builds every metric family from the
latest tick alone. So:

* no stale series: a process that left, a finding that cleared, a GPU that is
  lost are simply not in the latest tick, and their series are gone from the next
  scrape (no long-lived labelled gauges to forget to remove);
* an unknown value (None in the model: no NVML sample, no GPM, a GPU that does not
  answer) is no sample at all, never 0;
* a scrape never sees half a tick: :meth:`~SnapshotCollector.update` swaps one
  immutable :class:`Tick` under a lock and :meth:`~SnapshotCollector.collect` takes
  that one object.

Cardinality is bounded: per-GPU series by the GPUs of the node, host series by its
cores, finding series by the rules times the GPUs and processes, and per-process
series by :data:`MAX_PROCESS_SERIES` processes (the heaviest VRAM users first; the
rest are counted in ``gputop_hints_process_series_dropped``). docs/cluster.md lists
every metric.

No Textual here; ``prometheus_client`` is an optional dependency
(``gputop-hints[export]``): only the exporter imports this module.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gputop_hints.hints.costs import CostMeter
from gputop_hints.hints.findings import Finding
from gputop_hints.model import GpuProcess, GpuSample, Snapshot

PREFIX = "gputop_hints_"
MAX_PROCESS_SERIES = 512
"""Processes exported per tick at most (each has a handful of series); beyond it the
lightest VRAM users are left out and counted in ``gputop_hints_process_series_dropped``."""
BUSY_WORKER_PERCENT = 20.0
"""A worker counts as busy above this share of one core (as the hints count them)."""

JOB_LABEL = "slurm_job"
"""The label that carries the SLURM job. Not ``job``: Prometheus gives every scraped
series its scrape job's own ``job`` label, which would move ours to ``exported_job``
(dcgm-exporter's is ``hpc_job`` for the same reason)."""
GPU_LABELS = ("gpu", "uuid", "host", JOB_LABEL)
PROCESS_LABELS = ("gpu", "pid", "user", "command", "host", JOB_LABEL, "container")
FINDING_LABELS = ("rule", "subtype", "severity", "gpu", "pid", JOB_LABEL, "host", "container")
"""``container``: the container, pod or batch job of the process (``docker 8a6e3c1f5b2d``,
``pod ml-team/trainer-0``, ``slurm job 1234``; model.GpuProcess.container), "" when it
runs in none or the finding is about a whole GPU. Fixed for a process's life, so it
adds no series."""


@dataclass(frozen=True, slots=True)
class Tick:
    """One tick as a scrape sees it: the snapshot and the findings visible after it."""

    snapshot: Snapshot
    findings: tuple[Finding, ...]
    lost: tuple[tuple[str, int, float, float | None], ...] = ()
    """(rule, GPU, GPU-seconds lost, joules or None) since the exporter started
    (hints.costs): the counters' values at this tick."""


_GpuValue = Callable[[GpuSample], float | int | None]
GPU_METRICS: tuple[tuple[str, str, _GpuValue], ...] = (
    (
        "gpu_utilization_percent",
        "Share of time one or more kernels ran (NVML utilization.gpu), 0-100",
        lambda g: g.sm_percent,
    ),
    (
        "gpu_memory_access_percent",
        "Share of time device memory was read or written (NVML utilization.memory), 0-100",
        lambda g: g.memory_access_percent,
    ),
    ("gpu_vram_used_bytes", "Device memory in use", lambda g: g.vram_used_bytes),
    ("gpu_vram_total_bytes", "Device memory in all", lambda g: g.vram_total_bytes),
    (
        "gpu_pcie_rx_bytes_per_second",
        "PCIe traffic host to device",
        lambda g: g.pcie_rx_bytes_per_s,
    ),
    (
        "gpu_pcie_tx_bytes_per_second",
        "PCIe traffic device to host",
        lambda g: g.pcie_tx_bytes_per_s,
    ),
    ("gpu_power_watts", "Power draw", lambda g: g.power_watts),
    ("gpu_power_limit_watts", "Enforced power limit", lambda g: g.power_limit_watts),
    ("gpu_sm_clock_hertz", "SM clock", lambda g: _mhz_to_hz(g.sm_clock_mhz)),
    (
        "gpu_pcie_link_generation",
        "PCIe link generation it runs at now (a link trains down under faults)",
        lambda g: g.pcie_generation,
    ),
    ("gpu_pcie_link_width", "PCIe lanes it runs at now", lambda g: g.pcie_width),
    ("gpu_temperature_celsius", "GPU temperature", lambda g: g.temperature_c),
    (
        "gpu_sm_active_percent",
        "GPM/DCGM SM activity: time a warp was resident, averaged over the SMs, 0-100",
        lambda g: g.sm_active_percent,
    ),
    (
        "gpu_sm_occupancy_percent",
        "GPM/DCGM SM occupancy: resident warps over the SMs' maximum, 0-100",
        lambda g: g.sm_occupancy_percent,
    ),
    (
        "gpu_tensor_active_percent",
        "GPM/DCGM share of cycles the tensor pipes were active, 0-100",
        lambda g: g.tensor_active_percent,
    ),
    (
        "gpu_dram_active_percent",
        "GPM/DCGM share of cycles device memory was sending or receiving, 0-100",
        lambda g: g.dram_active_percent,
    ),
)
"""Per-GPU gauges: name (after :data:`PREFIX`), help, and the value (None: no sample)."""

_ProcessValue = Callable[[GpuProcess], float | int | None]
PROCESS_METRICS: tuple[tuple[str, str, _ProcessValue], ...] = (
    ("process_vram_bytes", "Device memory the process holds on the GPU", lambda p: p.vram_bytes),
    (
        "process_sm_percent",
        "The process's own SM utilization on the GPU (NVML process samples), 0-100",
        lambda p: p.sm_percent,
    ),
    (
        "process_cpu_percent",
        "Host CPU of the main process, % of one core",
        lambda p: p.cpu_percent,
    ),
    (
        "process_busy_workers",
        f"Child processes (DataLoader workers) above {BUSY_WORKER_PERCENT:g} % of a core",
        lambda p: p.busy_workers(BUSY_WORKER_PERCENT) if p.workers else 0,
    ),
    ("process_rss_bytes", "Resident memory of the main process", lambda p: p.rss_bytes),
)
"""Per-process gauges, as :data:`GPU_METRICS`."""


def _mhz_to_hz(mhz: int | None) -> float | None:
    return None if mhz is None else mhz * 1e6


def command_name(process: GpuProcess) -> str:
    """The short name a process is labelled by: its name, else its program's file name
    (never the whole command line: arguments may hold paths and secrets)."""
    if process.name:
        return process.name
    words = process.command.split()
    return os.path.basename(words[0]) if words else ""


def _job_of(process: GpuProcess, snapshot: Snapshot) -> str:
    """The SLURM job a process runs in, when known ("" otherwise)."""
    if snapshot.job is not None and process.in_job:
        return snapshot.job.job_id
    container = process.container or ""
    if container.startswith("slurm job "):
        return container.removeprefix("slurm job ")
    return ""


def _job_of_gpu(index: int, snapshot: Snapshot) -> str:
    job = snapshot.job
    if job is None or (job.gpu_indices is not None and index not in job.gpu_indices):
        return ""
    return job.job_id


def exported_processes(
    processes: Sequence[GpuProcess], limit: int = MAX_PROCESS_SERIES
) -> tuple[GpuProcess, ...]:
    """The processes given series: at most ``limit``, the heaviest VRAM users first
    (then by GPU and pid, so the choice is stable from tick to tick)."""
    ranked = sorted(processes, key=lambda p: (-(p.vram_bytes or 0), p.gpu_index, p.pid))
    return tuple(ranked[:limit])


class SnapshotCollector(Collector):
    """A Prometheus collector serving the latest tick given to :meth:`update`."""

    def __init__(self, *, max_processes: int = MAX_PROCESS_SERIES) -> None:
        if max_processes < 0:
            raise ValueError("max_processes must not be negative")
        self.max_processes = max_processes
        self._lock = threading.Lock()
        self._tick: Tick | None = None

    def update(
        self, snapshot: Snapshot, findings: Iterable[Finding], costs: CostMeter | None = None
    ) -> None:
        """Make ``snapshot`` and ``findings`` (and the GPU-time lost so far, ``costs``)
        what the next scrape sees, all at once."""
        lost: tuple[tuple[str, int, float, float | None], ...] = ()
        if costs is not None:
            lost = tuple(
                (rule, gpu, seconds, costs.energy_j.get((rule, gpu)))
                for (rule, gpu), seconds in sorted(costs.lost_s.items())
            )
        tick = Tick(snapshot, tuple(findings), lost)
        with self._lock:
            self._tick = tick

    @property
    def tick(self) -> Tick | None:
        with self._lock:
            return self._tick

    def collect(self) -> Iterator[Metric]:
        tick = self.tick
        if tick is None:
            return iter(())
        return iter(build_families(tick, self.max_processes))


def build_families(tick: Tick, max_processes: int = MAX_PROCESS_SERIES) -> list[Metric]:
    """Every metric family of one tick (what one scrape returns)."""
    snap = tick.snapshot
    host = snap.host.hostname
    out: list[Metric] = []

    info = GaugeMetricFamily(
        PREFIX + "info",
        "The exporter's source; 1 while it serves",
        labels=("host", "source", "detail", "driver"),
    )
    info.add_metric((host, snap.source, snap.source_detail, snap.driver_version or ""), 1)
    out.append(info)
    out.append(
        GaugeMetricFamily(
            PREFIX + "snapshot_timestamp_seconds",
            "When the served tick was taken (seconds since the epoch; the wall clock for the "
            "demo too)",
            value=snap.timestamp,
        )
    )
    if snap.job is not None:
        job = GaugeMetricFamily(
            PREFIX + "job_info",
            "The SLURM job the exporter is attached to; 1 while attached",
            labels=(JOB_LABEL, "step", "name", "user", "host"),
        )
        j = snap.job
        job.add_metric((j.job_id, j.step_id or "", j.name or "", j.user or "", host), 1)
        out.append(job)

    gpu_labels = {
        g.index: (str(g.index), g.uuid or "", host, _job_of_gpu(g.index, snap)) for g in snap.gpus
    }
    for name, help_text, value in GPU_METRICS:
        family = GaugeMetricFamily(PREFIX + name, help_text, labels=GPU_LABELS)
        for gpu in snap.gpus:
            v = value(gpu)
            if v is not None:
                family.add_metric(gpu_labels[gpu.index], float(v))
        out.append(family)

    shown = exported_processes(snap.processes, max_processes)
    for name, help_text, pvalue in PROCESS_METRICS:
        family = GaugeMetricFamily(PREFIX + name, help_text, labels=PROCESS_LABELS)
        for proc in shown:
            v = pvalue(proc)
            if v is not None:
                labels = (
                    str(proc.gpu_index),
                    str(proc.pid),
                    proc.user or "",
                    command_name(proc),
                    host,
                    _job_of(proc, snap),
                    proc.container or "",
                )
                family.add_metric(labels, float(v))
        out.append(family)
    out.append(
        GaugeMetricFamily(
            PREFIX + "process_series_dropped",
            f"GPU processes left out this tick: only the {max_processes} heaviest VRAM users "
            "get series",
            value=len(snap.processes) - len(shown),
        )
    )

    out.extend(_host_families(snap))
    out.extend(_finding_families(tick))
    out.extend(_cost_families(tick))
    return out


def _cost_families(tick: Tick) -> list[Metric]:
    """The GPU-time and energy lost under each rule on each GPU since the exporter
    started (hints.costs; docs/hints.md#what-a-finding-costs): counters, so that
    ``increase()`` over a job's time range is what the job lost."""
    snap = tick.snapshot
    host = snap.host.hostname
    labels = ("rule", "gpu", "host", JOB_LABEL)
    seconds = CounterMetricFamily(
        PREFIX + "lost_gpu_seconds",
        "GPU-seconds lost under a warning's cause (the GPU's idle share while it was shown; "
        "a shared GPU's process claims its own part)",
        labels=labels,
    )
    energy = CounterMetricFamily(
        PREFIX + "lost_energy_joules",
        "Energy the GPU drew over that lost time, where its power was known",
        labels=labels,
    )
    for rule, gpu, lost_s, joules in tick.lost:
        values = (rule, str(gpu), host, _job_of_gpu(gpu, snap))
        seconds.add_metric(values, lost_s)
        if joules is not None:
            energy.add_metric(values, joules)
    return [seconds, energy]


def _host_families(snap: Snapshot) -> list[Metric]:
    host = snap.host
    cores = GaugeMetricFamily(
        PREFIX + "host_cpu_percent",
        "Busy share of each logical core over the last tick, 0-100",
        labels=("core", "host"),
    )
    for core, value in enumerate(host.cpu_percent_per_core):
        if value is not None:
            cores.add_metric((str(core), host.hostname), value)
    out: list[Metric] = [cores]
    for name, help_text, v in (
        ("host_iowait_percent", "Share of all CPU time waiting on I/O, 0-100", host.iowait_percent),
        ("host_memory_used_bytes", "Host memory in use", host.memory_used_bytes),
        ("host_memory_total_bytes", "Host memory in all", host.memory_total_bytes),
    ):
        family = GaugeMetricFamily(PREFIX + name, help_text, labels=("host",))
        if v is not None:
            family.add_metric((host.hostname,), float(v))
        out.append(family)
    return out


def _finding_families(tick: Tick) -> list[Metric]:
    snap = tick.snapshot
    host = snap.host.hostname
    active = GaugeMetricFamily(
        PREFIX + "finding",
        "A hint's finding, 1 while it is active (the series goes when it clears)",
        labels=FINDING_LABELS,
    )
    start = GaugeMetricFamily(
        PREFIX + "finding_start_time_seconds",
        "When the active finding's condition began (seconds since the epoch)",
        labels=FINDING_LABELS,
    )
    processes = {p.key: p for p in snap.processes}
    seen: set[tuple[str, ...]] = set()
    for finding in tick.findings:
        subject = finding.subject
        container = ""
        if subject.pid is not None:
            proc = processes.get((subject.pid, subject.gpu_index))
            job = _job_of(proc, snap) if proc is not None else ""
            container = (proc.container or "") if proc is not None else ""
        else:
            job = _job_of_gpu(subject.gpu_index, snap)
        labels = (
            finding.rule,
            finding.subtype or "",
            finding.severity.label,
            str(subject.gpu_index),
            "" if subject.pid is None else str(subject.pid),
            job,
            host,
            container,
        )
        if labels in seen:  # one series per labels, whatever the engine gives
            continue
        seen.add(labels)
        active.add_metric(labels, 1)
        if finding.started_at is not None:
            start.add_metric(labels, finding.started_at)
    return [active, start]
