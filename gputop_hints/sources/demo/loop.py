"""A small model of a training (or serving) loop, compiled into a :class:`Timeline`.

The demo does not draw curves. Each simulated process runs a loop described by
a :class:`LoopSpec` -- CPU seconds to build a batch, bytes to read from storage
and to copy over PCIe, GPU seconds of kernels per step, how many DataLoader
workers, how many cores the job may use -- and every number a snapshot shows
follows from it:

* **num_workers = 0**: the main process reads (D state), decodes and augments
  (100 % of one core), copies the batch, launches the step and waits for it
  (``loss.item()`` each step synchronises). The GPU is busy for ``compute_s``
  out of every ``read + cpu + copy + compute`` seconds: bursts, then gaps.
* **num_workers = W**: the workers build batches while the GPU computes
  (prefetching). Workers that start together stay in step, so when the loader
  is the bottleneck they all read (D state) and then all decode (R state,
  sharing the allowed cores; runnable-but-waiting when W exceeds them) and
  hand over W batches at once: the GPU runs W steps back to back and then
  waits -- a sawtooth whose period is the loader's cycle. When the loader
  keeps up, the GPU runs step after step and the workers idle part of the time.
* A step on the GPU is: a pageable host->device copy (serial, the main process
  busy staging it; pinned copies overlap the previous step's kernels), the
  kernels (``max(compute_s, launch_cpu_s)`` long: when Python cannot enqueue
  kernels as fast as they run, the GPU is launch-bound), device-side copies
  (DRAM busy, no kernel), a device->host copy, NCCL all-reduce kernels for
  DDP, and a host-side gap (logging, optimizer bookkeeping).
* SM % is the share of time a kernel runs; memory-access % is the kernel
  time times the kernel mix's DRAM intensity, plus device copies; the main
  process's CPU % is its launching, staging and (CUDA's default spin-wait)
  synchronising.

Steps repeat with a few percent of seeded jitter on their length (normalised
so that long-run means are exact), so sub-second samples look natural and a
tick grid does not alias with a perfectly periodic loop.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from gputop_hints.sources.demo.timeline import (
    KERNEL,
    LANE_COUNT,
    MAIN_CPU,
    MEM,
    RX,
    TX,
    WORKERS_CPU,
    WORKERS_IO,
    Segment,
    Timeline,
    average,
    overlay,
    segment,
    total_duration,
    with_levels,
)

PINNED_EFFICIENCY = 0.85
"""Share of the PCIe link a pinned-memory copy achieves."""
PAGEABLE_EFFICIENCY = 0.55
"""Share a pageable copy achieves (the driver stages it through a pinned buffer)."""
COPY_MEMORY_SHARE = 0.05
"""DRAM busy share while a PCIe copy lands in device memory (HBM is ~50x faster than PCIe)."""
FINE_STRUCTURE_S = 0.04
"""Loops whose cycle is shorter than this are collapsed to their average: NVML's
finest utilization sample is 1/6 s, so nothing could resolve them."""
MIN_SUPER_PERIOD_S = 8.0
"""Repeat at least this long a stretch of jittered cycles before the timeline loops."""
MAX_SEGMENTS = 6000
JITTER = 0.03
"""Relative standard deviation of a cycle's length."""
QUEUE_WAIT_CPU = 0.005
"""Main process blocked on the DataLoader's queue: almost no CPU."""


@dataclass(frozen=True, slots=True)
class LoopSpec:
    """One process's loop. Times are seconds per step (or per batch), at full clocks."""

    kind: str = "train"
    """"train" (a training loop), "serve" (request-driven inference) or "idle"
    (a process that holds a context and does nothing, e.g. a forgotten notebook)."""
    batch_size: int = 256
    num_workers: int = 8
    compute_s: float = 0.3
    """GPU time per step during which at least one kernel runs."""
    launch_cpu_s: float = 0.02
    """Main-process CPU to enqueue one step's kernels (Python, autograd, launches)."""
    cpu_s_per_batch: float = 0.5
    """One core's time to decode, augment and collate one batch."""
    read_bytes_per_batch: float = 20e6
    read_latency_s: float = 0.002
    storage_bytes_per_s: float = 4e9
    """Bandwidth of the storage feeding this job (shared by its concurrent readers)."""
    h2d_bytes_per_step: float = 0.0
    d2h_bytes_per_step: float = 0.0
    pinned: bool = True
    """pin_memory=True with non_blocking copies; False means pageable, synchronous copies."""
    mem_intensity: float = 0.45
    """Share of kernel time the kernel mix reads or writes DRAM."""
    device_copy_s: float = 0.0
    """Per step: device-to-device copies and memsets -- DRAM busy, no kernel running."""
    allreduce_s: float = 0.0
    """Per step: NCCL all-reduce kernels (DDP)."""
    host_gap_s: float = 0.01
    """Per step: host-side work while the GPU idles (loss.item(), logging, bookkeeping)."""
    sync_spin: float = 1.0
    """Share of its waits on the GPU that the main process spins (CUDA's default
    schedule spins when there are fewer contexts than cores)."""
    request_wait_s: float = 0.0
    """Serving: time per request cycle spent waiting for traffic."""
    warmup_s: float = 8.0
    """Model loading and the first (autotuning) steps before the steady loop."""
    checkpoint_every_s: float | None = None
    checkpoint_s: float = 4.0
    checkpoint_bytes: float = 0.0
    """Bytes copied device->host (pageable) at the start of each checkpoint save."""
    hang_after_s: float | None = None
    """A DDP rank whose peer (on another node) stops arriving this long after the
    warm-up: from then on its NCCL kernel spins in the collective for good."""

    # What GPM profiling sees (read only by scenes that profile, see Scene.profiling)
    sm_fill: float = 0.8
    """Share of the SMs with a warp resident while a compute kernel runs (a small
    batch's kernels launch few blocks and fill few SMs)."""
    occupancy: float = 0.45
    """Resident warps as a share of the maximum, on the SMs that hold any."""
    tensor_share: float = 0.4
    """Share of cycles the tensor pipes are busy on the SMs a compute kernel occupies
    (bf16 matmuls ~0.4-0.6; FP32 without TF32 runs on the CUDA cores: 0)."""
    dram_bw: float = 0.55
    """Share of DRAM bandwidth used while device memory is accessed."""
    nccl_channels: int = 8
    """NCCL's channels: one resident block each while a collective kernel runs."""

    @property
    def read_s(self) -> float:
        """One batch's storage read when its reader has the storage to itself."""
        if self.read_bytes_per_batch <= 0:
            return self.read_latency_s
        return self.read_latency_s + self.read_bytes_per_batch / self.storage_bytes_per_s


def copy_bandwidth(link_bytes_per_s: float, pinned: bool) -> float:
    return link_bytes_per_s * (PINNED_EFFICIENCY if pinned else PAGEABLE_EFFICIENCY)


def step_segments(spec: LoopSpec, link_bytes_per_s: float, *, prefetched: bool) -> list[Segment]:
    """The GPU side of one step; ``prefetched`` when a worker handed the batch over."""
    segs: list[Segment] = []
    kernel_span = max(spec.compute_s, spec.launch_cpu_s)
    kernel_level = spec.compute_s / kernel_span if kernel_span > 0 else 0.0
    rx_during_kernels = 0.0
    if spec.h2d_bytes_per_step > 0:
        bw = copy_bandwidth(link_bytes_per_s, spec.pinned)
        copy_s = spec.h2d_bytes_per_step / bw
        if spec.pinned and prefetched and kernel_span > 0 and copy_s <= kernel_span:
            # non_blocking copy of the next batch overlaps this step's kernels
            rx_during_kernels = spec.h2d_bytes_per_step / kernel_span
        else:
            staging = 1.0 if not spec.pinned else spec.sync_spin
            segs.append(segment(copy_s, rx=bw, mem=COPY_MEMORY_SHARE, main_cpu=staging))
    if kernel_span > 0:
        waiting = kernel_span - spec.launch_cpu_s
        main = (spec.launch_cpu_s + spec.sync_spin * max(0.0, waiting)) / kernel_span
        segs.append(
            segment(
                kernel_span,
                kernel=kernel_level,
                mem=spec.mem_intensity * kernel_level,
                rx=rx_during_kernels,
                main_cpu=min(1.0, main),
            )
        )
    if spec.device_copy_s > 0:
        segs.append(segment(spec.device_copy_s, mem=1.0, main_cpu=spec.sync_spin))
    if spec.allreduce_s > 0:
        segs.append(
            segment(spec.allreduce_s, kernel=1.0, nccl=1.0, mem=0.3, main_cpu=spec.sync_spin)
        )
    if spec.d2h_bytes_per_step > 0:
        bw = copy_bandwidth(link_bytes_per_s, spec.pinned)
        staging = 1.0 if not spec.pinned else spec.sync_spin
        segs.append(
            segment(spec.d2h_bytes_per_step / bw, tx=bw, mem=COPY_MEMORY_SHARE, main_cpu=staging)
        )
    if spec.host_gap_s > 0:
        segs.append(segment(spec.host_gap_s, main_cpu=1.0))
    return segs


@dataclass(frozen=True, slots=True)
class LoaderPlan:
    """How a loop with workers settles: who waits for whom, and for how long."""

    gpu_step_s: float
    loader_cycle_s: float
    """Synchronised workers: time to read and decode W batches together."""
    read_phase_s: float
    cpu_phase_s: float
    cores_for_workers: float
    loader_bound: bool


def plan_loader(spec: LoopSpec, cores_available: float, link_bytes_per_s: float) -> LoaderPlan:
    """Settle a loop with workers: loader-bound (GPU waits) or GPU-bound (workers wait).

    ``cores_available`` is this process's share of its job's allowed cores; the
    main process takes what it needs first, the workers share the rest.
    """
    workers = spec.num_workers
    gpu_step = total_duration(step_segments(spec, link_bytes_per_s, prefetched=True))
    main_share = 1.0
    plan = LoaderPlan(gpu_step, 0.0, 0.0, 0.0, 0.0, False)
    for _ in range(2):  # the main process's share depends on whether it waits
        cores = max(0.5, cores_available - main_share)
        stretch = max(1.0, workers / cores)
        cpu_phase = spec.cpu_s_per_batch * stretch
        # all W workers read at once, sharing the storage's bandwidth
        read_phase = spec.read_latency_s + workers * spec.read_bytes_per_batch / max(
            1.0, spec.storage_bytes_per_s
        )
        cycle = read_phase + cpu_phase
        loader_bound = cycle > workers * gpu_step
        plan = LoaderPlan(
            gpu_step, cycle, read_phase, cpu_phase, min(float(workers), cores), loader_bound
        )
        main_share = workers * gpu_step / cycle if loader_bound else 1.0
    return plan


def _steady_unit(spec: LoopSpec, cores_available: float, link_bytes_per_s: float) -> list[Segment]:
    """One cycle of the steady loop (before jitter and repetition)."""
    if spec.kind == "idle":
        return [segment(10.0, main_cpu=0.003)]
    if spec.kind == "serve" or spec.num_workers == 0:
        unit: list[Segment] = []
        if spec.request_wait_s > 0:
            unit.append(segment(spec.request_wait_s, main_cpu=0.002))
        if spec.read_s > 0 and spec.kind == "train":
            unit.append(segment(spec.read_s, main_io=1.0))
        if spec.cpu_s_per_batch > 0:
            unit.append(segment(spec.cpu_s_per_batch, main_cpu=1.0))
        unit.extend(step_segments(spec, link_bytes_per_s, prefetched=False))
        return unit
    plan = plan_loader(spec, cores_available, link_bytes_per_s)
    step = step_segments(spec, link_bytes_per_s, prefetched=True)
    if plan.gpu_step_s < FINE_STRUCTURE_S:
        step = [average(step)]
    if not plan.loader_bound:
        rate = 1.0 / plan.gpu_step_s
        return with_levels(
            step,
            workers_cpu=rate * spec.cpu_s_per_batch,
            workers_io=rate * spec.read_s,
        )
    workers = spec.num_workers
    burst = step * workers
    if workers * plan.gpu_step_s < FINE_STRUCTURE_S:
        burst = [average(burst)]
    gap = plan.loader_cycle_s - workers * plan.gpu_step_s
    gpu = [*burst, segment(gap, main_cpu=QUEUE_WAIT_CPU)]
    running = plan.cores_for_workers
    loader = [
        segment(plan.read_phase_s, workers_io=workers),
        segment(plan.cpu_phase_s, workers_cpu=running, workers_runq=workers - running),
    ]
    return overlay(gpu, loader)


def _warmup(spec: LoopSpec, cores_available: float) -> list[Segment]:
    """Loading the model (reading weights: CPU and D state), then autotuning first steps."""
    w = spec.warmup_s
    if w <= 0:
        return []
    if spec.kind == "idle":
        # a notebook: a few cells run, then nothing
        parts = [
            (0.15, {"main_cpu": 1.0, "main_io": 0.2}),
            (0.2, {"kernel": 0.7, "mem": 0.35, "main_cpu": 1.0}),
            (0.3, {"main_cpu": 0.01}),
            (0.15, {"kernel": 0.85, "mem": 0.5, "main_cpu": 1.0}),
            (0.2, {"main_cpu": 0.01}),
        ]
        return [segment(w * share, **levels) for share, levels in parts]
    workers = min(float(spec.num_workers), max(0.0, cores_available - 1.0))
    return [
        segment(0.6 * w, main_cpu=1.0, main_io=0.25),
        segment(0.4 * w, kernel=0.15, mem=0.08, main_cpu=1.0, workers_cpu=0.5 * workers),
    ]


def _repeat(
    unit: Sequence[Segment], rng: random.Random, *, at_least_s: float, exact_s: float | None = None
) -> list[Segment]:
    """Jittered copies of ``unit``: at least ``at_least_s`` long, or cut to ``exact_s``."""
    unit_s = total_duration(unit)
    target = exact_s if exact_s is not None else at_least_s
    cap = max(1, MAX_SEGMENTS // max(1, len(unit)))
    count = max(1, min(cap, math.ceil(target / unit_s)))
    if exact_s is not None and count == cap and count * unit_s < exact_s:
        unit = [average(unit)]
        unit_s = total_duration(unit)
        count = max(1, math.ceil(target / unit_s))
    factors = [1.0 + JITTER * max(-2.0, min(2.0, rng.gauss(0.0, 1.0))) for _ in range(count)]
    norm = count / math.fsum(factors)
    out = [Segment(s.duration * f * norm, s.levels) for f in factors for s in unit]
    if exact_s is None:
        return out
    cut: list[Segment] = []
    left = exact_s
    for s in out:
        if left <= 1e-9:
            break
        cut.append(Segment(min(s.duration, left), s.levels))
        left -= s.duration
    if left > 1e-9:  # rounding: pad with the average behaviour
        cut.append(Segment(left, average(unit).levels))
    return cut


def compile_loop(
    spec: LoopSpec,
    *,
    cores_available: float,
    link_bytes_per_s: float,
    rng: random.Random,
) -> Timeline:
    """The process's whole life as a :class:`Timeline`: warm-up, then the steady loop."""
    prefix = _warmup(spec, cores_available)
    unit = _steady_unit(spec, cores_available, link_bytes_per_s)
    if total_duration(unit) < FINE_STRUCTURE_S:
        unit = [average(unit)]
    if spec.hang_after_s is not None:
        trained = (
            _repeat(unit, rng, at_least_s=0.0, exact_s=spec.hang_after_s)
            if spec.hang_after_s > 0
            else []
        )
        # the collective no peer joins: NCCL's kernel polls a flag (no DRAM traffic to
        # speak of), the main process spins in the next synchronisation, and the
        # workers stop once the prefetch queue is full
        spin = segment(10.0, kernel=1.0, nccl=1.0, mem=0.01, main_cpu=spec.sync_spin)
        return Timeline([*prefix, *trained], [spin])
    if spec.checkpoint_every_s is None:
        period = _repeat(unit, rng, at_least_s=MIN_SUPER_PERIOD_S)
        return Timeline(prefix, period)
    save_s = min(spec.checkpoint_s, 0.5 * spec.checkpoint_every_s)
    train = _repeat(unit, rng, at_least_s=0.0, exact_s=spec.checkpoint_every_s - save_s)
    copy_s = 0.0
    save: list[Segment] = []
    if spec.checkpoint_bytes > 0:
        bw = copy_bandwidth(link_bytes_per_s, pinned=False)
        copy_s = min(0.5 * save_s, spec.checkpoint_bytes / bw)
        save.append(
            segment(
                copy_s,
                tx=spec.checkpoint_bytes / copy_s,
                mem=COPY_MEMORY_SHARE,
                main_cpu=1.0,
                checkpoint=1.0,
            )
        )
    # torch.save: pickling (CPU) and writing (D state) while the GPU idles
    save.append(segment(save_s - copy_s, main_cpu=0.65, main_io=0.35, checkpoint=1.0))
    return Timeline(prefix, [*train, *save])


def steps_per_second(spec: LoopSpec, cores_available: float, link_bytes_per_s: float) -> float:
    """The steady loop's step rate (ignoring checkpoints)."""
    if spec.kind == "idle":
        return 0.0
    if spec.kind == "serve" or spec.num_workers == 0:
        return 1.0 / total_duration(_steady_unit(spec, cores_available, link_bytes_per_s))
    plan = plan_loader(spec, cores_available, link_bytes_per_s)
    if plan.loader_bound:
        return spec.num_workers / plan.loader_cycle_s
    return 1.0 / plan.gpu_step_s


def compile_ddp_peer(spec: LoopSpec, leader: Timeline, *, job_steps_per_s: float) -> Timeline:
    """A DDP rank whose peer (``leader``, the straggler) sets the pace.

    Every step ends in an all-reduce, so a rank that is ready early waits inside
    NCCL -- whose kernels spin on the GPU: its SM % reads high while it waits.
    Its main process spins in the synchronisation too; its workers only need to
    keep up with the job's (slow) step rate.
    """
    workers_cpu = min(float(spec.num_workers), job_steps_per_s * spec.cpu_s_per_batch)
    workers_io = min(float(spec.num_workers), job_steps_per_s * spec.read_s)
    steady: list[Segment] = []
    for s in leader.period_segments:
        levels = [0.0] * LANE_COUNT
        levels[KERNEL] = 0.97
        levels[MEM] = s.levels[MEM] + 0.02
        levels[RX] = s.levels[RX]
        levels[TX] = s.levels[TX]
        levels[MAIN_CPU] = 1.0
        levels[WORKERS_CPU] = workers_cpu
        levels[WORKERS_IO] = workers_io
        steady.append(Segment(s.duration, tuple(levels)))
    return Timeline(leader.prefix_segments, steady)
