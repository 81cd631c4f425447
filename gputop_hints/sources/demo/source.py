"""The demo source: simulated GPUs running simulated training jobs, tick by tick.

:class:`DemoSource` builds a scenario's :class:`~.scenarios.Scene`, compiles
each process's loop into a :class:`~.timeline.Timeline` and then, on every
``sample()``, advances simulated time by one interval and reads the timelines
the way NVML and psutil would read the real thing:

* GPU SM % / memory-access %: the share of the tick during which kernels ran /
  DRAM was busy, summed over the GPU's processes (capped at 100: contexts
  time-slice), as integers like NVML's; per-process values likewise, scaled to
  their share when the processes together would exceed the GPU.
* ``sm_samples``: NVML's buffered samples, one per 1/6 s on an absolute grid,
  each the SM % over its own 1/6 s (the most recent 120, ~20 s, as the
  driver's buffer holds).
* PCIe rx/tx: the average over the last 20 ms of the tick, as NVML samples it.
* CPU: the main process's and each worker's busy share of the tick; the
  threads sit on "home" cores of the job's allocation and spill onto free
  cores when a core is over-subscribed; iowait is idle time with D-state tasks
  waiting; the load average is Linux's exponentially damped run+D count.

Same (scenario, seed, sizes, interval, start_time) -> the same snapshots, except
``sample_duration_s``, which is the simulator's own real cost.
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from gputop_hints.model import (
    PROFILING_FIELDS,
    GpuProcess,
    GpuSample,
    HostSample,
    JobInfo,
    Launcher,
    Snapshot,
    UtilizationSample,
    WorkerProcess,
    pcie_link_bytes_per_s,
)
from gputop_hints.sources.demo.loop import (
    LoopSpec,
    compile_ddp_peer,
    compile_loop,
    steps_per_second,
)
from gputop_hints.sources.demo.scenarios import (
    CONTEXT_BYTES,
    DEFAULT_SCENARIO,
    GIB,
    RESERVED_BYTES,
    SCENARIOS,
    GpuSetup,
    ProcessSetup,
    ScenarioInfo,
    Scene,
    build_scene,
    describe,
)
from gputop_hints.sources.demo.timeline import (
    CHECKPOINT,
    KERNEL,
    MAIN_CPU,
    MAIN_IO,
    MEM,
    NCCL,
    RX,
    TX,
    WORKERS_CPU,
    WORKERS_IO,
    WORKERS_RUNQ,
    Timeline,
)

DRIVER_VERSION = "550.54.15 (simulated)"
CUDA_DRIVER_VERSION = "12.4"
SAMPLES_PER_S = 6
"""NVML's buffered utilization samples: one per 1/6 s on recent data-centre GPUs."""
MAX_BUFFERED_SAMPLES = 120
PCIE_WINDOW_S = 0.02
IDLE_SM_CLOCK_MHZ = 345
AMBIENT_C = 30.0
THERMAL_TIME_CONSTANT_S = 45.0
_GOLDEN = 0.6180339887498949
_PLASTIC = 0.7548776662466927
_NOISE_TABLE_SIZE = 4096
NCCL_OCCUPANCY = 20 / 64
"""An NCCL channel's block (640 threads: 20 warps) as a share of an SM's 64 warps."""


@dataclass
class _Proc:
    """One simulated process: its fixed setup, its timeline and what the last tick left."""

    setup: ProcessSetup
    timeline: Timeline
    worker_pids: tuple[int, ...]
    worker_spread: tuple[float, ...]
    """Per-worker share multipliers (mean 1): workers are never perfectly equal."""
    main_home: int
    worker_homes: tuple[int, ...]
    last: list[float]
    grid_j: int
    grid_cum: float
    has_pcie: bool


class DemoSource:
    """A seeded, deterministic simulator of training jobs on GPUs (a :class:`Source`).

    ``scenario`` is one of :func:`list_scenarios`; ``gpus`` (1-8) and
    ``processes`` (GPU processes in all) default to the scenario's own sizes;
    ``cores`` to a 32-core node (64 for more than 4 GPUs). The first snapshot
    is stamped ``start_time + interval_s`` and covers
    ``[start_time, start_time + interval_s)``; each ``sample()`` advances one
    interval (0.25-60 s all integrate exactly).
    """

    kind = "demo"
    simulated = True

    def __init__(
        self,
        scenario: str = DEFAULT_SCENARIO,
        *,
        gpus: int | None = None,
        processes: int | None = None,
        seed: int = 0,
        interval_s: float = 1.0,
        start_time: float = 1_700_000_000.0,
        cores: int | None = None,
        job: JobInfo | None = None,
    ) -> None:
        if not interval_s > 0 or not math.isfinite(interval_s):
            raise ValueError(f"interval must be a positive number of seconds, got {interval_s}")
        self.scenario = scenario
        self.job = job
        """A real job the demo runs inside (``srun --pty gputop-hints --demo``): shown in
        the header so the attachment can be checked without a GPU; the GPUs stay simulated."""
        self.seed = seed
        self.interval_s = float(interval_s)
        self.start_time = float(start_time)
        self.scene: Scene = build_scene(scenario, gpus, processes, cores)
        self._tick = 0
        self._closed = False
        self._last_j = 0
        noise_rng = random.Random(seed * 7919 + 17)
        self._noise = [noise_rng.gauss(0.0, 1.0) for _ in range(_NOISE_TABLE_SIZE)]
        self._noise_i = 0
        self._procs = self._compile(seed)
        self._launchers: dict[int, Launcher] = {
            p.setup.launcher.pid: p.setup.launcher
            for p in self._procs
            if p.setup.launcher is not None
        }
        self._by_gpu: list[list[_Proc]] = [[] for _ in self.scene.gpus]
        for p in self._procs:
            self._by_gpu[p.setup.gpu_index].append(p)
        self._allocs: dict[tuple[int, ...], list[_Proc]] = {}
        for p in self._procs:
            self._allocs.setdefault(p.setup.cores, []).append(p)
        allocated = {c for p in self._procs for c in p.setup.cores}
        pattern = (0.01, 0.03, 0.02, 0.55, 0.01, 1.0, 0.04, 0.02)
        self._background = [
            0.0 if c in allocated else pattern[(c * 5 + 3) % len(pattern)]
            for c in range(self.scene.node_cores)
        ]
        self._temperature = [AMBIENT_C + 4.0 for _ in self.scene.gpus]
        self._load_average: list[float] | None = None
        self._uuids = tuple(_uuid(scenario, g.index) for g in self.scene.gpus)
        self.loops: Mapping[int, LoopSpec] = MappingProxyType(
            {p.setup.pid: p.setup.loop for p in self._procs}
        )
        """Each simulated process's loop parameters, by pid (for tests and evaluation)."""
        self.timelines: Mapping[int, Timeline] = MappingProxyType(
            {p.setup.pid: p.timeline for p in self._procs}
        )
        self.label_onsets: Mapping[str, float] = MappingProxyType(self._onsets())
        """Each ground-truth label -> the epoch time its condition first holds."""

    # --- construction -------------------------------------------------------

    def _compile(self, seed: int) -> list[_Proc]:
        scene = self.scene
        procs: list[_Proc] = []
        timelines: dict[int, Timeline] = {}
        rates: dict[int, float] = {}
        ordered = sorted(
            scene.processes,
            key=lambda s: 0 if s.ddp_leader_pid in (None, s.pid) else 1,
        )
        links = {g.index: _link(g) for g in scene.gpus}
        for setup in ordered:
            rng = random.Random(seed * 1_000_003 + setup.pid)
            link = links[setup.gpu_index]
            leader = setup.ddp_leader_pid
            if leader is not None and leader != setup.pid and leader in timelines:
                timeline = compile_ddp_peer(
                    setup.loop, timelines[leader], job_steps_per_s=rates[leader]
                )
            else:
                timeline = compile_loop(
                    setup.loop,
                    cores_available=setup.cores_available,
                    link_bytes_per_s=link,
                    rng=rng,
                )
                rates[setup.pid] = steps_per_second(setup.loop, setup.cores_available, link)
            timelines[setup.pid] = timeline
        for index, setup in enumerate(scene.processes):
            rng = random.Random(seed * 1_000_003 + setup.pid + 1)
            n = setup.loop.num_workers
            raw = [max(0.5, 1.0 + 0.12 * rng.gauss(0.0, 1.0)) for _ in range(n)]
            mean = sum(raw) / n if n else 1.0
            alloc = setup.cores
            home = (index * 3) % len(alloc)
            timeline = timelines[setup.pid]
            start_local = -setup.start_s
            procs.append(
                _Proc(
                    setup=setup,
                    timeline=timeline,
                    worker_pids=tuple(setup.pid + 3 + w for w in range(n)),
                    worker_spread=tuple(r / mean for r in raw),
                    main_home=alloc[home],
                    worker_homes=tuple(alloc[(home + 1 + w) % len(alloc)] for w in range(n)),
                    last=timeline.cumulative_all(start_local),
                    grid_j=0,
                    grid_cum=timeline.cumulative(start_local, KERNEL),
                    has_pcie=_has_pcie(setup.loop),
                )
            )
        return procs

    def _onsets(self) -> dict[str, float]:
        onsets: dict[str, float] = {}

        def first(label: str, t: float) -> None:
            if label not in onsets or t < onsets[label]:
                onsets[label] = t

        for label in self.scene.gpu_labels:
            first(label, self.start_time)  # held before the monitor started
        for p in self._procs:
            s = p.setup
            begin = self.start_time + s.start_s
            onset = begin + p.timeline.onset_s
            if onset > self.start_time:
                first(f"warming-up@pid:{s.pid}", max(begin, self.start_time))
            for label in s.labels:
                first(label, onset)
            every = s.loop.checkpoint_every_s
            if every is not None:
                save = min(s.loop.checkpoint_s, 0.5 * every)
                first(f"checkpointing@pid:{s.pid}", onset + every - save)
        return onsets

    # --- the Source protocol --------------------------------------------------

    def close(self) -> None:
        """Nothing to release; later samples still work (the clock just runs on)."""
        self._closed = True

    def sample(self) -> Snapshot:
        """Advance simulated time by one interval and read every GPU, process and core."""
        started = time.perf_counter()
        self._tick += 1
        dt = self.interval_s
        b = self._tick * dt
        inv_dt = 1.0 / dt
        j_hi = math.floor(b * SAMPLES_PER_S + 1e-9)
        j_lo = max(self._last_j + 1, j_hi - MAX_BUFFERED_SAMPLES + 1)
        self._last_j = j_hi
        grid_n = max(0, j_hi - j_lo + 1)
        grid_bounds = [j / SAMPLES_PER_S for j in range(j_lo - 1, j_hi + 1)]

        scene = self.scene
        n_gpus = len(scene.gpus)
        kernel_sum = [0.0] * n_gpus
        mem_sum = [0.0] * n_gpus
        rx_sum = [0.0] * n_gpus
        tx_sum = [0.0] * n_gpus
        grids = [[0.0] * grid_n for _ in range(n_gpus)]
        means: list[list[float]] = []
        pcie: list[tuple[float, float]] = []
        labels: list[str] = list(scene.gpu_labels)

        for p in self._procs:
            tl = p.timeline
            start = p.setup.start_s
            local_b = b - start
            now = tl.cumulative_all(local_b)
            before = p.last
            p.last = now
            m = [(y - x) * inv_dt for x, y in zip(before, now, strict=True)]
            means.append(m)
            g = p.setup.gpu_index
            kernel_sum[g] += m[KERNEL]
            mem_sum[g] += m[MEM]
            if p.has_pcie:
                rx = (now[RX] - tl.cumulative(local_b - PCIE_WINDOW_S, RX)) / PCIE_WINDOW_S
                tx = (now[TX] - tl.cumulative(local_b - PCIE_WINDOW_S, TX)) / PCIE_WINDOW_S
            else:
                rx = tx = 0.0
            pcie.append((rx, tx))
            rx_sum[g] += rx
            tx_sum[g] += tx
            if grid_n and (p.grid_j != j_lo - 1 or now[KERNEL] > p.grid_cum):
                # NVML's buffered samples (skipped when no kernel ran since the last one)
                steps, p.grid_cum = tl.increments(KERNEL, grid_bounds, start)
                grid = grids[g]
                for i, v in enumerate(steps):
                    grid[i] += v * SAMPLES_PER_S
            p.grid_j = j_hi
            self._labels_of(p, local_b, m, labels)

        timestamp = self.start_time + b
        gpus: list[GpuSample] = []
        kernel_scale = [1.0 / k if k > 1.0 else 1.0 for k in kernel_sum]
        mem_scale = [1.0 / v if v > 1.0 else 1.0 for v in mem_sum]
        vram_used = [RESERVED_BYTES + g.unlisted_vram_bytes for g in scene.gpus]
        vram_of: list[int] = []
        for p in self._procs:
            v = self._vram(p, b - p.setup.start_s)
            vram_of.append(v)
            vram_used[p.setup.gpu_index] += v
        profiles = self._profiles(means, kernel_scale, mem_scale) if scene.profiling else None
        for g, setup in enumerate(scene.gpus):
            gpus.append(
                self._gpu(
                    setup,
                    min(1.0, kernel_sum[g]),
                    min(1.0, mem_sum[g]),
                    rx_sum[g],
                    tx_sum[g],
                    vram_used[g],
                    grids[g],
                    j_lo,
                    timestamp,
                    None if profiles is None else profiles[g],
                )
            )

        processes, host = self._host_and_processes(
            means, pcie, vram_of, kernel_scale, mem_scale, timestamp
        )
        return Snapshot(
            timestamp=timestamp,
            interval_s=dt,
            host=host,
            gpus=tuple(gpus),
            processes=processes,
            source="demo",
            source_detail=f"{self.scenario} (seed {self.seed})",
            driver_version=DRIVER_VERSION,
            cuda_driver_version=CUDA_DRIVER_VERSION,
            sample_duration_s=time.perf_counter() - started,
            labels=tuple(dict.fromkeys(labels)),
            job=self.job,
            launchers=self._launchers_of(processes),
        )

    # --- pieces of a tick -------------------------------------------------------

    def _launchers_of(self, processes: Sequence[GpuProcess]) -> tuple[Launcher, ...]:
        """The torchruns of the processes running this tick."""
        running = {proc.launcher_pid for proc in processes}
        return tuple(
            launcher for pid, launcher in sorted(self._launchers.items()) if pid in running
        )

    def _n(self) -> float:
        """The next value of the seeded noise table (standard normal)."""
        i = self._noise_i
        self._noise_i = (i + 1) % _NOISE_TABLE_SIZE
        return self._noise[i]

    @staticmethod
    def _labels_of(p: _Proc, local_b: float, m: list[float], out: list[str]) -> None:
        s = p.setup
        if local_b <= 0:
            return
        if local_b < p.timeline.onset_s:
            # model loading -- or, for a notebook, the cells someone ran before leaving
            out.append(f"warming-up@pid:{s.pid}")
            return
        out.extend(s.labels)
        if m[CHECKPOINT] > 0:
            out.append(f"checkpointing@pid:{s.pid}")

    def _profiles(
        self, means: list[list[float]], kernel_scale: list[float], mem_scale: list[float]
    ) -> list[tuple[float, float, float, float]]:
        """Per GPU, GPM's (SM active, SM occupancy, tensor active, DRAM active) as shares
        of the tick: each process's time in compute kernels, in NCCL kernels and accessing
        memory, weighted by what its loop keeps resident and busy (``LoopSpec.sm_fill``
        ...). A collective kernel holds one block per NCCL channel and no tensor pipe."""
        n = len(self.scene.gpus)
        active = [0.0] * n
        occupancy = [0.0] * n
        tensor = [0.0] * n
        dram = [0.0] * n
        for p, m in zip(self._procs, means, strict=True):
            g = p.setup.gpu_index
            loop = p.setup.loop
            nccl = m[NCCL] * kernel_scale[g]
            compute = max(0.0, m[KERNEL] * kernel_scale[g] - nccl)
            nccl_fill = min(1.0, loop.nccl_channels / self.scene.gpus[g].model.sm_count)
            active[g] += compute * loop.sm_fill + nccl * nccl_fill
            occupancy[g] += (
                compute * loop.sm_fill * loop.occupancy + nccl * nccl_fill * NCCL_OCCUPANCY
            )
            tensor[g] += compute * loop.sm_fill * loop.tensor_share
            dram[g] += m[MEM] * mem_scale[g] * loop.dram_bw
        return [
            (min(1.0, a), min(1.0, o), min(1.0, t), min(1.0, d))
            for a, o, t, d in zip(active, occupancy, tensor, dram, strict=True)
        ]

    def _percent(self, share: float) -> float:
        """A profiling share as GPM reports it: a percentage with a little noise."""
        value = share * 100.0
        if value > 0.5:
            value = min(100.0, max(0.0, value + 0.7 * self._n()))
        return float(round(value))

    @staticmethod
    def _vram(p: _Proc, local_t: float) -> int:
        if local_t <= 0:
            return 0
        full = p.setup.vram_bytes
        onset = p.timeline.onset_s
        if local_t >= onset or onset <= 0:
            return full
        return int(CONTEXT_BYTES + (full - CONTEXT_BYTES) * (local_t / onset))

    def _gpu(
        self,
        setup: GpuSetup,
        busy: float,
        mem: float,
        rx: float,
        tx: float,
        vram_used: int,
        grid: list[float],
        j_lo: int,
        timestamp: float,
        profile: tuple[float, float, float, float] | None = None,
    ) -> GpuSample:
        model = setup.model
        link = _link(setup)
        sm = busy * 100.0
        if sm > 0.5:
            sm = min(100.0, max(0.0, sm + 0.7 * self._n()))
        mem_pct = mem * 100.0
        if mem_pct > 0.5:
            mem_pct = min(100.0, max(0.0, mem_pct + 0.7 * self._n()))
        scale = min(1.0, 0.97 * link / rx) if rx > 0 else 1.0
        rx = rx * scale * (1.0 + 0.02 * self._n()) if rx > 0 else 0.0
        scale = min(1.0, 0.97 * link / tx) if tx > 0 else 1.0
        tx = tx * scale * (1.0 + 0.02 * self._n()) if tx > 0 else 0.0

        dynamic = model.power_limit_watts - model.idle_power_watts
        work, traffic = busy, mem
        if profile is not None:
            # with profiling the power follows the SMs that hold work and the DRAM
            # bandwidth used, not the time a kernel (a spinning one too) is resident
            work, traffic = profile[0], profile[3]
        demand = model.idle_power_watts + 0.95 * dynamic * min(1.0, 0.7 * work + 0.35 * traffic)
        limit = setup.power_cap_watts or model.power_limit_watts
        reasons: tuple[str, ...]
        if busy < 0.005:
            clock = IDLE_SM_CLOCK_MHZ
            reasons = ("gpu_idle",)
            power = demand
        elif demand > limit:
            clock = int(model.max_sm_clock_mhz * (limit / demand) ** 0.8)
            reasons = ("sw_power_cap",)
            power = limit - abs(1.5 * self._n())
        else:
            clock = model.max_sm_clock_mhz
            reasons = ()
            power = demand
        power = min(limit, max(model.idle_power_watts * 0.9, power + 2.0 * self._n()))
        target = AMBIENT_C + 4.0 + 0.075 * power
        k = 1.0 - math.exp(-self.interval_s / THERMAL_TIME_CONSTANT_S)
        temp = self._temperature[setup.index] + (target - self._temperature[setup.index]) * k
        self._temperature[setup.index] = temp

        base = self.start_time
        samples = tuple(
            UtilizationSample(base + (j_lo + i) / SAMPLES_PER_S, float(round(min(100.0, v * 100))))
            for i, v in enumerate(grid)
        )
        gpm: list[float | None] = [None] * len(PROFILING_FIELDS)
        if profile is not None:
            gpm = [self._percent(share) for share in profile]
        return GpuSample(
            index=setup.index,
            name=model.name,
            uuid=self._uuids[setup.index],
            sm_percent=float(round(sm)),
            memory_access_percent=float(round(mem_pct)),
            vram_used_bytes=min(vram_used, model.vram_total_bytes),
            vram_total_bytes=model.vram_total_bytes,
            pcie_rx_bytes_per_s=rx,
            pcie_tx_bytes_per_s=tx,
            pcie_generation=model.pcie_generation,
            pcie_width=model.pcie_width,
            temperature_c=float(round(temp)),
            power_watts=round(power, 1),
            power_limit_watts=limit,
            sm_clock_mhz=clock,
            max_sm_clock_mhz=model.max_sm_clock_mhz,
            throttle_reasons=reasons,
            sm_samples=samples,
            sm_active_percent=gpm[0],
            sm_occupancy_percent=gpm[1],
            tensor_active_percent=gpm[2],
            dram_active_percent=gpm[3],
        )

    def _host_and_processes(
        self,
        means: list[list[float]],
        pcie: list[tuple[float, float]],
        vram_of: list[int],
        kernel_scale: list[float],
        mem_scale: list[float],
        timestamp: float,
    ) -> tuple[tuple[GpuProcess, ...], HostSample]:
        scene = self.scene
        n = self._n
        tick = self._tick
        load = list(self._background)
        d_tasks = 0.0
        runnable = 0.0
        processes: list[GpuProcess] = []
        per_process_util = [g.model.per_process_utilization for g in scene.gpus]
        memory_used = 24 * GIB + int(0.04 * scene.memory_total_bytes)
        for index, p in enumerate(self._procs):
            s = p.setup
            m = means[index]
            local_b = timestamp - self.start_time - s.start_s
            if local_b <= 0:
                continue
            if s.zombie_of is not None:
                processes.append(self._zombie(s, vram_of[index]))
                continue
            main_cpu = min(1.0, m[MAIN_CPU])
            load[p.main_home] += main_cpu
            d_tasks += m[MAIN_IO]
            runnable += main_cpu
            workers: list[WorkerProcess] = []
            nw = len(p.worker_pids)
            if nw:
                cpu_each = m[WORKERS_CPU] / nw
                io_each = m[WORKERS_IO] / nw
                runq_each = m[WORKERS_RUNQ] / nw
                d_tasks += m[WORKERS_IO]
                runnable += m[WORKERS_CPU] + m[WORKERS_RUNQ]
                for w in range(nw):
                    spread = p.worker_spread[w]
                    cpu = min(1.0, cpu_each * spread)
                    load[p.worker_homes[w]] += min(1.0, cpu + runq_each * spread)
                    u = (p.worker_pids[w] * _GOLDEN + tick * _PLASTIC) % 1.0
                    if u < io_each:
                        state = "D"
                    elif u < io_each + min(1.0, cpu + runq_each):
                        state = "R"
                    else:
                        state = "S"
                    cpu_pct = 100.0 * cpu
                    if cpu_pct > 0.05:
                        cpu_pct = min(100.0, max(0.0, cpu_pct * (1.0 + 0.03 * n())))
                    workers.append(
                        WorkerProcess(
                            pid=p.worker_pids[w],
                            cpu_percent=round(cpu_pct, 1),
                            rss_bytes=s.worker_rss_bytes,
                            state=state,
                            name="python",
                        )
                    )
                    memory_used += s.worker_rss_bytes
            u = (s.pid * _GOLDEN + tick * _PLASTIC) % 1.0
            main_state = "D" if u < m[MAIN_IO] else ("R" if u < m[MAIN_IO] + main_cpu else "S")
            main_pct = 100.0 * main_cpu
            if main_pct > 0.05:
                main_pct = min(100.0, max(0.0, main_pct * (1.0 + 0.01 * n())))
            g = s.gpu_index
            if per_process_util[g]:
                sm: float | None = float(round(100.0 * m[KERNEL] * kernel_scale[g]))
                mem: float | None = float(round(100.0 * m[MEM] * mem_scale[g]))
            else:
                sm = mem = None
            memory_used += s.rss_bytes
            processes.append(
                GpuProcess(
                    pid=s.pid,
                    gpu_index=g,
                    vram_bytes=vram_of[index],
                    sm_percent=sm,
                    memory_access_percent=mem,
                    cpu_percent=round(main_pct, 1),
                    workers=tuple(workers),
                    rss_bytes=s.rss_bytes,
                    state=main_state,
                    user=s.user,
                    name="python",
                    command=s.command,
                    create_time=self.start_time + s.start_s,
                    launcher_pid=None if s.launcher is None else s.launcher.pid,
                )
            )

        for cores in self._allocs:
            _spread(load, cores)
        per_core: list[float | None] = []
        busy_total = 0.0
        for value in load:
            v = min(1.0, value)
            busy_total += v
            pct = 100.0 * v
            if pct >= 99.5:
                pct = 100.0 - abs(0.4 * n())
            elif pct > 0.2:
                pct = min(100.0, max(0.0, pct + 1.2 * n()))
            else:
                pct = abs(0.3 * n())
            per_core.append(round(pct, 1))
        node = scene.node_cores
        iowait = 100.0 * min(d_tasks, max(0.0, node - busy_total)) / node
        background = sum(self._background)
        running_now = runnable + background + d_tasks
        la = self._load_average
        if la is None:
            la = [running_now] * 3
        else:
            for i, window in enumerate((60.0, 300.0, 900.0)):
                e = math.exp(-self.interval_s / window)
                la[i] = la[i] * e + running_now * (1.0 - e)
        self._load_average = la
        host = HostSample(
            hostname=scene.hostname,
            cpu_percent_per_core=tuple(per_core),
            allowed_cores=scene.allowed_cores,
            iowait_percent=round(max(0.0, iowait + 0.3 * n()), 1) if iowait > 0.1 else 0.0,
            memory_used_bytes=min(memory_used, scene.memory_total_bytes),
            memory_total_bytes=scene.memory_total_bytes,
            load_average=(round(la[0], 2), round(la[1], 2), round(la[2], 2)),
        )
        return tuple(processes), host

    def _zombie(self, s: ProcessSetup, vram: int) -> GpuProcess:
        """An exited, unreaped process as the live source reads one: state Z, no CPU time
        and no resident memory (its /proc stat and statm still read), no command line
        (psutil raises ZombieProcess for it: ""), its parent named; NVML still lists it with
        its memory and no utilization."""
        assert s.zombie_of is not None
        parent_pid, parent_name = s.zombie_of
        return GpuProcess(
            pid=s.pid,
            gpu_index=s.gpu_index,
            vram_bytes=vram,
            sm_percent=0.0 if self.scene.gpus[s.gpu_index].model.per_process_utilization else None,
            memory_access_percent=(
                0.0 if self.scene.gpus[s.gpu_index].model.per_process_utilization else None
            ),
            cpu_percent=0.0,
            rss_bytes=0,
            state="Z",
            user=s.user,
            name="python",
            command="",
            create_time=self.start_time + s.start_s,
            parent_pid=parent_pid,
            parent_name=parent_name,
            parent_state="S",
        )


def _spread(load: list[float], cores: tuple[int, ...]) -> None:
    """Over-subscribed cores shed work onto idle cores of the same allocation (the scheduler)."""
    excess = 0.0
    headroom = 0.0
    for c in cores:
        v = load[c]
        if v > 1.0:
            excess += v - 1.0
        else:
            headroom += 1.0 - v
    if excess <= 0.0:
        return
    fill = 1.0 if headroom <= excess else excess / headroom
    for c in cores:
        v = load[c]
        load[c] = 1.0 if v >= 1.0 else v + (1.0 - v) * fill


def _link(setup: GpuSetup) -> float:
    value = pcie_link_bytes_per_s(setup.model.pcie_generation, setup.model.pcie_width)
    assert value is not None
    return value


def _has_pcie(loop: LoopSpec) -> bool:
    return loop.h2d_bytes_per_step > 0 or loop.d2h_bytes_per_step > 0 or loop.checkpoint_bytes > 0


def _uuid(scenario: str, index: int) -> str:
    h = hashlib.sha1(f"gputop-hints-demo:{scenario}:{index}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def list_scenarios() -> list[ScenarioInfo]:
    """Every scenario with a one-line description, its ground-truth labels and their onset."""
    out: list[ScenarioInfo] = []
    for name in SCENARIOS:
        description, default_gpus = describe(name)
        source = DemoSource(name)
        labels = tuple(source.label_onsets)
        condition_onsets = [
            t - source.start_time
            for label, t in source.label_onsets.items()
            if not label.startswith(("warming-up@", "checkpointing@"))
        ]
        out.append(
            ScenarioInfo(
                name=name,
                description=description,
                labels=labels,
                onset_s=max(0.0, *condition_onsets) if condition_onsets else 0.0,
                default_gpus=default_gpus,
            )
        )
    return out
