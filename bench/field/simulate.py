"""Reading the timelines the way NVML, nvidia-smi and psutil would.

What each instrument reports, and so what this module produces (NVML API
reference, "Device Queries"; docs/metrics.md):

* ``utilization.gpu`` is the share of the last sample period (here 1 s) during
  which at least one kernel ran -- on one device, kernels of different
  processes time-slice, so their shares add up to at most 100 %.
* ``nvmlDeviceGetSamples`` buffers that share every 1/6 s: the live monitor
  gets the samples taken since its last tick. A log written by
  ``nvidia-smi --query-gpu`` has none, and no host or process data.
* Per-process samples (``nvmlDeviceGetProcessUtilization``) exist only for a
  process that ran kernels in the period; one that ran none has no sample,
  which the model writes as ``sm_percent=None``.
* PCIe throughput is measured over about 20 ms: one instant of the timeline.
* Power is the mean over the last second. Demand above the enforced limit pins
  the draw at the limit with ``sw_power_cap`` set; the clocks fall only with
  the excess beyond a few percent, so a card at its DEFAULT limit under full
  load keeps its maximum clock (the cap is doing its job). Heat follows power
  through a first-order thermal model; above the slowdown temperature the
  driver pulls clocks (``sw_thermal``, then ``hw_thermal``).
* psutil's CPU % is the mean over the tick; a process's state is read at the
  instant of the tick.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from field.hardware import GIB, MIB, GpuModel
from field.timeline import Timeline
from gputop_hints.model import (
    GpuProcess,
    GpuSample,
    HostSample,
    Snapshot,
    UtilizationSample,
    WorkerProcess,
)

UTIL_PERIOD_S = 1.0
"""The period NVML's utilization rates and power average over."""
SUB_SAMPLE_S = 1.0 / 6.0
"""Spacing of NVML's buffered utilization samples."""
THERMAL_TAU_S = 45.0
"""Time constant of a board's temperature (heatsink mass)."""
START_TIME = 1_750_000_000.0
"""Epoch of the first tick (June 2025): the cases do not depend on the date."""


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    """One process holding a context on one GPU."""

    pid: int
    gpu: int
    timeline: Timeline
    command: str
    name: str = "python"
    user: str = "alice"
    workers: int = 0
    worker_name: str = "python"
    rss_bytes: int = 3 * GIB
    worker_rss_bytes: int = 700 * MIB
    core: int = 0
    """Core the main process runs on; its threads and then its workers take the next ones."""
    main_threads: int = 1
    """Cores the main process's CPU spreads over (CPU Adam, OpenMP); its CPU % may exceed 100."""
    start_s: float = 0.0
    end_s: float | None = None
    created_before_s: float = 0.0
    worker_command: str | None = None
    """Its children's command line; None: the main process's (a DataLoader worker is a fork)."""
    frameworks: tuple[str, ...] = ()
    """The frameworks a live monitor finds in its /proc/PID/maps (GpuProcess.frameworks)."""
    """How long before it is first seen the process started (the monitor started later)."""


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One board in one slot, with its enforced power limit and its cooling."""

    index: int
    model: GpuModel
    power_limit_watts: float | None = None
    """Enforced limit when an administrator lowered it (nvidia-smi -pl); None = default."""
    ambient_c: float = 28.0
    thermal_c_per_watt: float = 0.085
    """Steady rise above ambient per watt: the cooling. Healthy boards sit near 0.07-0.1."""

    @property
    def enforced_limit_watts(self) -> float:
        return self.power_limit_watts or self.model.power_limit_watts


@dataclass(frozen=True, slots=True)
class HostSpec:
    """The machine the GPUs sit in."""

    cores: int = 32
    allowed: tuple[int, ...] | None = None
    """Cores the watched job may use (a SLURM cpuset); None = all."""
    background_cpu: float = 2.0
    memory_total_bytes: int = 512 * GIB
    memory_used_bytes: int = 60 * GIB
    hostname: str = "gpu-node-07"


@dataclass(frozen=True, slots=True)
class Scenario:
    """Everything needed to produce a case's snapshots."""

    gpus: tuple[GpuSpec, ...]
    processes: tuple[ProcessSpec, ...]
    duration_s: float
    interval_s: float
    seed: int
    host: HostSpec = field(default_factory=HostSpec)
    log: bool = False
    """True: what an ``nvidia-smi --query-gpu ... -l N`` log holds (no host, no processes,
    no sub-second samples); False: what the live monitor sees."""
    log_power: bool = False
    """A log that also queried temperature, power and clocks."""
    detail: str = ""


@dataclass
class _Board:
    """A GPU's state carried from tick to tick."""

    temperature_c: float
    last_tick: float = 0.0


def simulate(scenario: Scenario) -> list[Snapshot]:
    """The snapshots a monitor (or a log) would have recorded for ``scenario``."""
    rng = random.Random(f"field-sim-{scenario.seed}-{scenario.detail}")
    boards = {
        g.index: _Board(temperature_c=g.ambient_c + g.thermal_c_per_watt * g.model.idle_watts)
        for g in scenario.gpus
    }
    snapshots: list[Snapshot] = []
    n = max(1, int(scenario.duration_s / scenario.interval_s + 1e-9))
    for k in range(1, n + 1):
        t = k * scenario.interval_s
        alive = [
            p for p in scenario.processes if p.start_s <= t and (p.end_s is None or t < p.end_s)
        ]
        gpus = tuple(_gpu(g, boards[g.index], alive, t, scenario, rng) for g in scenario.gpus)
        if scenario.log:
            host = HostSample(hostname="unknown", cpu_percent_per_core=(), allowed_cores=())
            rows: tuple[GpuProcess, ...] = ()
        else:
            host = _host(scenario, alive, t, rng)
            rows = tuple(_process(p, t, scenario, rng) for p in alive)
        snapshots.append(
            Snapshot(
                timestamp=START_TIME + t,
                interval_s=scenario.interval_s,
                host=host,
                gpus=gpus,
                processes=rows,
                source="replay" if scenario.log else "live",
                source_detail=scenario.detail,
                driver_version="550.90.07",
            )
        )
    return snapshots


def _sum_mean(procs: list[ProcessSpec], name: str, a: float, b: float) -> float:
    """Sum over processes of a field's mean over [a, b] (absolute time), each
    counted only from its start: a process that began mid-period ran nothing before."""
    total = 0.0
    for p in procs:
        start = max(a, p.start_s)
        if b <= start:
            continue
        share = (b - start) / (b - a) if b > a else 1.0
        total += share * p.timeline.mean(name, start - p.start_s, b - p.start_s)
    return total


def _gpu(
    spec: GpuSpec,
    board: _Board,
    alive: list[ProcessSpec],
    t: float,
    scenario: Scenario,
    rng: random.Random,
) -> GpuSample:
    model = spec.model
    here = [p for p in alive if p.gpu == spec.index]
    a = max(0.0, t - UTIL_PERIOD_S)
    kernel = min(1.0, _sum_mean(here, "kernel", a, t))
    memory = min(1.0, _sum_mean(here, "memory", a, t))
    floor = model.active_idle_watts if here else model.idle_watts
    demand = floor + (model.power_limit_watts - floor) * _sum_mean(here, "power", a, t)
    limit = spec.enforced_limit_watts
    reasons: list[str] = []
    clock_share = 1.0
    power = demand * rng.uniform(0.99, 1.01)
    if demand > 0.97 * limit:
        reasons.append("sw_power_cap")
        power = min(demand, limit * rng.uniform(0.965, 0.999))
        clock_share = min(1.0, (1.03 * limit / demand) ** 0.6)
    dt = t - board.last_tick
    if board.temperature_c > spec.model.slowdown_c:
        heat = max(0.55, 1.0 - 0.06 * (board.temperature_c - spec.model.slowdown_c))
        reasons.append("sw_thermal")
        if board.temperature_c > spec.model.slowdown_c + spec.model.shutdown_margin_c / 2:
            reasons.append("hw_thermal")
        if heat < clock_share:
            power = floor + (power - floor) * heat**1.5
            clock_share = heat
    target = spec.ambient_c + spec.thermal_c_per_watt * power
    board.temperature_c += (target - board.temperature_c) * (1.0 - math.exp(-dt / THERMAL_TAU_S))
    board.last_tick = t
    if kernel < 0.005:
        clock = model.idle_sm_clock_mhz
        reasons = ["gpu_idle", *[r for r in reasons if r.endswith("thermal")]]
    else:
        clock = int(round(model.max_sm_clock_mhz * clock_share / 15.0) * 15)
        clock = min(clock, model.max_sm_clock_mhz)
    vram = sum(p.timeline.vram_at(t - p.start_s) for p in here)
    vram = min(model.vram_total_bytes, vram + (model.reserved_bytes if here else 2 * MIB))
    samples: tuple[UtilizationSample, ...] = ()
    if not scenario.log:
        first = board_first_sample(t, scenario.interval_s)
        samples = tuple(
            UtilizationSample(
                START_TIME + ts,
                float(round(100 * min(1.0, _sum_mean(here, "kernel", ts - SUB_SAMPLE_S, ts)))),
            )
            for ts in _sample_times(first, t)
        )
    instant = rng.uniform(a, t)
    running = [p for p in here if instant >= p.start_s]
    rx = sum(p.timeline.at(instant - p.start_s).h2d for p in running) + rng.uniform(0.2e6, 3e6)
    tx = sum(p.timeline.at(instant - p.start_s).d2h for p in running) + rng.uniform(0.2e6, 3e6)
    link = model.link_bytes_per_s
    sm = float(round(100 * kernel))
    mem = float(round(100 * memory))
    if scenario.log:
        return GpuSample(
            index=spec.index,
            name=model.name,
            sm_percent=sm,
            memory_access_percent=mem,
            vram_used_bytes=vram,
            vram_total_bytes=model.vram_total_bytes,
            temperature_c=round(board.temperature_c) if scenario.log_power else None,
            power_watts=round(power, 2) if scenario.log_power else None,
            power_limit_watts=limit if scenario.log_power else None,
            sm_clock_mhz=clock if scenario.log_power else None,
            max_sm_clock_mhz=model.max_sm_clock_mhz if scenario.log_power else None,
            throttle_reasons=tuple(reasons) if scenario.log_power else None,
        )
    return GpuSample(
        index=spec.index,
        name=model.name,
        uuid=f"GPU-{scenario.seed:08x}-{spec.index:04x}-field",
        sm_percent=sm,
        memory_access_percent=mem,
        vram_used_bytes=vram,
        vram_total_bytes=model.vram_total_bytes,
        pcie_rx_bytes_per_s=min(rx, link),
        pcie_tx_bytes_per_s=min(tx, link),
        pcie_generation=model.pcie_generation,
        pcie_width=model.pcie_width,
        temperature_c=float(round(board.temperature_c)),
        power_watts=round(power, 2),
        power_limit_watts=limit,
        sm_clock_mhz=clock,
        max_sm_clock_mhz=model.max_sm_clock_mhz,
        throttle_reasons=tuple(reasons),
        sm_samples=samples,
    )


def board_first_sample(t: float, interval_s: float) -> float:
    """The first buffered sample newer than the previous tick."""
    return max(SUB_SAMPLE_S, t - interval_s + SUB_SAMPLE_S)


def _sample_times(first: float, last: float) -> list[float]:
    k = math.ceil(first / SUB_SAMPLE_S - 1e-9)
    out = []
    while k * SUB_SAMPLE_S <= last + 1e-9:
        out.append(k * SUB_SAMPLE_S)
        k += 1
    return out


def _cores_of(p: ProcessSpec, cores: int) -> list[int]:
    return [(p.core + i) % cores for i in range(p.main_threads + p.workers)]


def _host(scenario: Scenario, alive: list[ProcessSpec], t: float, rng: random.Random) -> HostSample:
    spec = scenario.host
    a = max(0.0, t - scenario.interval_s)
    load = [
        min(100.0, max(0.0, spec.background_cpu + rng.gauss(0.0, 1.0))) for _ in range(spec.cores)
    ]
    iowait = max(0.0, rng.gauss(0.3, 0.2))
    for p in alive:
        start = max(a, p.start_s)
        main = p.timeline.mean("main_cpu", start - p.start_s, t - p.start_s)
        worker = p.timeline.mean("worker_cpu", start - p.start_s, t - p.start_s)
        placed = _cores_of(p, spec.cores)
        for core in placed[: p.main_threads]:
            load[core] = min(100.0, load[core] + main / p.main_threads)
        for core in placed[p.main_threads :]:
            load[core] = min(100.0, load[core] + worker)
        iowait += p.timeline.mean("iowait", start - p.start_s, t - p.start_s)
    return HostSample(
        hostname=spec.hostname,
        cpu_percent_per_core=tuple(round(v, 1) for v in load),
        allowed_cores=spec.allowed if spec.allowed is not None else tuple(range(spec.cores)),
        iowait_percent=round(min(100.0, iowait), 1),
        memory_used_bytes=spec.memory_used_bytes,
        memory_total_bytes=spec.memory_total_bytes,
        load_average=None,
    )


def _process(p: ProcessSpec, t: float, scenario: Scenario, rng: random.Random) -> GpuProcess:
    local = t - p.start_s
    a = max(0.0, local - UTIL_PERIOD_S)
    kernel = p.timeline.mean("kernel", a, local)
    memory = p.timeline.mean("memory", a, local)
    cpu_from = max(0.0, local - scenario.interval_s)
    main = p.timeline.mean("main_cpu", cpu_from, local)
    worker = p.timeline.mean("worker_cpu", cpu_from, local)
    now = p.timeline.at(local)
    workers = tuple(
        WorkerProcess(
            pid=p.pid + 1 + i,
            cpu_percent=round(
                min(100.0, max(0.0, worker + rng.gauss(0.0, 0.3 + 0.015 * worker))), 1
            ),
            rss_bytes=p.worker_rss_bytes,
            state=now.worker_state,
            name=p.worker_name,
            command=p.worker_command or p.command,
        )
        for i in range(p.workers)
    )
    return GpuProcess(
        pid=p.pid,
        gpu_index=p.gpu,
        vram_bytes=p.timeline.vram_at(local),
        # NVML keeps a per-process sample only for a process that ran kernels.
        sm_percent=float(max(1, round(100 * kernel))) if kernel > 0.0005 else None,
        memory_access_percent=float(round(100 * memory)) if kernel > 0.0005 else None,
        cpu_percent=round(max(0.0, main + rng.gauss(0.0, 0.3 + 0.01 * main)), 1),
        workers=workers,
        rss_bytes=p.rss_bytes,
        state=now.main_state,
        user=p.user,
        name=p.name,
        command=p.command,
        create_time=START_TIME + p.start_s - 5.0 - p.created_before_s,
        frameworks=p.frameworks,
    )
