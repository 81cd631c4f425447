"""The demo's scenarios: which jobs run on which simulated GPUs, and their ground truth.

A scenario builds a :class:`Scene`: the node (cores, GPUs) and the processes
on it, each with the :class:`~gputop_hints.sources.demo.loop.LoopSpec` it runs
and the labels that say what holds it back.

Ground-truth labels
-------------------
Format: ``<condition>[/<subtype>]@<subject>`` where subject is ``gpu:N`` (a
condition of the device: ``compute-bound@gpu:0``) or ``pid:N`` (of one
process: ``input-starved/num-workers-0@pid:4000``). Conditions and subtypes
use the hint rules' ids (``Finding.rule_label``), so an evaluation can match
findings to labels by string:

=============================  =====================================================
``compute-bound@gpu``          SM ~95 %, workers keep up: healthy
``input-starved/num-workers-0``  main process loads data itself (num_workers=0)
``input-starved/cpu-bound``    workers saturate every allowed core
``input-starved/storage-bound``  workers wait on storage (D state, iowait)
``input-starved/more-workers`` loader too slow, cores and storage not saturated
``small-batch@pid``            launch-bound: steady moderate SM, little VRAM
``pcie-thrash@pid``            big host<->device copies every step
``memory-bound@gpu``           memory-access % high and above SM %
``idle-holding-vram@pid``      holds VRAM, runs nothing
``vram-near-limit@gpu``        VRAM used >= ~98 %
``throttled/power@gpu``        clocks held down by a power cap
``straggler@gpu``              one DDP rank well below its peers
``tensor-cores-idle@pid``      GPM: SMs busy, tensor pipes idle (FP32 matmuls)
``utilization-overstated@gpu``  GPM: utilization high, few SMs hold warps
``collective-hang@pid``        GPM: ~100 % busy, SM active ~3 %: spinning in NCCL
``ghost-memory/unlisted@gpu``  memory in use that no listed process holds
``ghost-memory/defunct@pid``   a zombie (state Z) still listed with memory
=============================  =====================================================

Benign annotations (no hint should fire for them): ``warming-up@pid`` (model
loading, before the condition sets in), ``checkpointing@pid`` (during a
checkpoint save), ``serving@pid`` (a request-driven inference process: its
utilization follows its traffic).

A snapshot's ``labels`` hold what is true *at that tick*: a condition's label
appears from its onset (the end of the job's warm-up), so time-to-detect is
the first finding's time minus the label's first appearance;
``DemoSource.label_onsets`` gives each label's onset directly.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from gputop_hints.model import Launcher
from gputop_hints.sources.demo.loop import LoopSpec

MIB = 2**20
GIB = 2**30
CONTEXT_BYTES = int(0.5 * GIB)
"""A CUDA context alone (what a process holds before it allocates anything)."""
RESERVED_BYTES = int(0.53 * GIB)
"""What NVML reports as used on a GPU with no processes (driver reservations)."""
MAX_GPUS = 8
MAX_PROCESSES = 1024


@dataclass(frozen=True, slots=True)
class GpuModel:
    """A GPU product, as NVML describes it."""

    name: str
    vram_total_bytes: int
    pcie_generation: int
    pcie_width: int
    power_limit_watts: float
    idle_power_watts: float
    max_sm_clock_mhz: int
    per_process_utilization: bool = True
    """False where NVML has no per-process utilization samples for this GPU
    (some vGPU and older configurations): processes then show SM % as unknown."""
    sm_count: int = 132
    """Streaming multiprocessors (what GPM's SM activity averages over)."""


H100 = GpuModel("NVIDIA H100 80GB HBM3", 81559 * MIB, 5, 16, 700.0, 72.0, 1980)
A100_PCIE = GpuModel("NVIDIA A100 80GB PCIe", 81920 * MIB, 4, 16, 300.0, 46.0, 1410, sm_count=108)
A10G_NO_PROCESS_UTIL = GpuModel(
    "NVIDIA A10G", 23028 * MIB, 4, 16, 300.0, 26.0, 1710, per_process_utilization=False, sm_count=80
)


@dataclass(frozen=True, slots=True)
class GpuSetup:
    index: int
    model: GpuModel
    power_cap_watts: float | None = None
    """An administrator's power limit (``nvidia-smi -pl``) below the board's."""
    unlisted_vram_bytes: int = 0
    """Memory in use on it that no listed process holds (NVML counts it in ``used``,
    lists no process for it): the ghost-memory scenario's leaked inference worker."""


@dataclass(frozen=True, slots=True)
class ProcessSetup:
    """One simulated GPU process: who runs what, where, since when, and its truth."""

    pid: int
    gpu_index: int
    user: str
    command: str
    loop: LoopSpec
    vram_bytes: int
    rss_bytes: int
    worker_rss_bytes: int
    start_s: float
    """When it started, relative to the source's start_time (negative: already running)."""
    cores: tuple[int, ...]
    """The job's allowed cores (its SLURM allocation)."""
    cores_available: float
    """This process's share of ``cores`` when several processes share an allocation."""
    labels: tuple[str, ...] = ()
    """Conditions that hold once the warm-up is over."""
    ddp_leader_pid: int | None = None
    """For a DDP rank: the pid of the rank that sets the job's pace (the straggler)."""
    launcher: Launcher | None = None
    """The torchrun that started it (DDP ranks, and the mixed scene's healthy job)."""
    zombie_of: tuple[int, str] | None = None
    """``(parent pid, parent name)`` of a process that has exited and that this parent
    has not reaped (state Z): NVML still lists it with its memory."""


@dataclass(frozen=True, slots=True)
class Scene:
    """A whole simulated node."""

    name: str
    gpus: tuple[GpuSetup, ...]
    processes: tuple[ProcessSetup, ...]
    node_cores: int
    allowed_cores: tuple[int, ...]
    """The cores the monitor (and so, usually, the job it watches) may use."""
    hostname: str = "demo-node"
    memory_total_bytes: int = 0
    profiling: bool = False
    """Its GPUs give GPM profiling (SM active, occupancy, tensor, DRAM: Hopper and newer
    with a driver that exposes it). False: the profiling fields stay None, as on a
    source that does not profile."""
    gpu_labels: tuple[str, ...] = ()
    """Labels of conditions no process carries (memory held by nothing listed): they
    hold from the first tick."""


@dataclass(frozen=True, slots=True)
class ScenarioInfo:
    """What ``--list-scenarios`` shows, and what an evaluation needs to know."""

    name: str
    description: str
    """One line."""
    labels: tuple[str, ...]
    """The ground-truth labels it models (at its default sizes), benign ones included."""
    onset_s: float
    """Seconds after ``start_time`` by which every modelled condition has set in
    (default sizes); labels appear from then on."""
    default_gpus: int = 1


class UnknownScenario(ValueError):
    """Raised for a scenario name the demo does not know; the message lists the valid ones."""

    def __init__(self, name: str, valid: Sequence[str]) -> None:
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        super().__init__(
            f"unknown demo scenario {name!r}{hint}; valid scenarios: {', '.join(valid)}"
        )
        self.name = name
        self.valid = tuple(valid)


# --- job kinds ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobKind:
    """A reusable job: its loop, footprint, command line and the labels it carries."""

    loop: LoopSpec
    vram_gib: float
    rss_gib: float
    worker_rss_gib: float
    command: str
    labels: tuple[str, ...] = ()
    """Templates with ``{pid}`` and ``{gpu}``."""
    model: GpuModel = H100
    power_cap_watts: float | None = None
    cpu_weight: float = 1.0
    """How much of a shared allocation it needs relative to a training job."""


_HEALTHY_LOOP = LoopSpec(
    num_workers=6,
    compute_s=0.30,
    launch_cpu_s=0.03,
    cpu_s_per_batch=0.9,
    read_bytes_per_batch=38e6,
    storage_bytes_per_s=4e9,
    h2d_bytes_per_step=38.5e6,
    mem_intensity=0.45,
    host_gap_s=0.015,
)
_STARVED_LOOP = LoopSpec(
    batch_size=128,
    num_workers=0,
    compute_s=0.35,
    launch_cpu_s=0.03,
    cpu_s_per_batch=1.1,
    read_bytes_per_batch=20e6,
    read_latency_s=0.002,
    storage_bytes_per_s=2e9,
    h2d_bytes_per_step=19e6,
    pinned=False,
    host_gap_s=0.01,
)
_SERVE_REPLICA_LOOP = LoopSpec(
    kind="serve",
    batch_size=1,
    num_workers=0,
    request_wait_s=0.5,
    cpu_s_per_batch=0.01,
    compute_s=0.012,
    launch_cpu_s=0.004,
    host_gap_s=0.001,
    h2d_bytes_per_step=0.2e6,
    d2h_bytes_per_step=0.05e6,
    mem_intensity=0.5,
    warmup_s=6.0,
)

KINDS: dict[str, JobKind] = {
    "healthy": JobKind(
        _HEALTHY_LOOP,
        62.0,
        7.5,
        1.6,
        "python train.py --model resnet152 --batch-size 256 --num-workers 6 --amp --pin-memory",
        ("compute-bound@gpu:{gpu}",),
    ),
    "starved-loader": JobKind(
        _STARVED_LOOP,
        31.0,
        9.0,
        0.0,
        "python train.py --model resnet50 --batch-size 128 --num-workers 0",
        ("input-starved/num-workers-0@pid:{pid}",),
    ),
    "cpu-bound-loader": JobKind(
        LoopSpec(
            num_workers=12,
            compute_s=0.045,
            launch_cpu_s=0.02,
            cpu_s_per_batch=0.8,
            read_bytes_per_batch=30e6,
            storage_bytes_per_s=8e9,
            h2d_bytes_per_step=38.5e6,
            host_gap_s=0.005,
        ),
        38.0,
        6.0,
        1.9,
        "python train_imagenet.py --arch resnet18 --batch-size 256 --num-workers 12 --randaugment",
        ("input-starved/cpu-bound@pid:{pid}",),
    ),
    "storage-bound": JobKind(
        LoopSpec(
            num_workers=8,
            compute_s=0.12,
            launch_cpu_s=0.02,
            cpu_s_per_batch=0.35,
            read_bytes_per_batch=160e6,
            read_latency_s=0.05,
            storage_bytes_per_s=350e6,
            h2d_bytes_per_step=38.5e6,
            host_gap_s=0.005,
        ),
        45.0,
        6.5,
        1.2,
        "python train.py --data /nfs/datasets/imagenet-raw --batch-size 256 --num-workers 8",
        ("input-starved/storage-bound@pid:{pid}",),
    ),
    "small-batch": JobKind(
        LoopSpec(
            batch_size=8,
            num_workers=4,
            compute_s=0.0045,
            launch_cpu_s=0.011,
            cpu_s_per_batch=0.002,
            read_bytes_per_batch=0.6e6,
            h2d_bytes_per_step=1.2e6,
            mem_intensity=0.3,
            host_gap_s=0.0005,
        ),
        5.5,
        4.5,
        0.9,
        "python finetune.py --model bert-base-uncased --batch-size 8 --num-workers 4",
        ("small-batch@pid:{pid}",),
    ),
    "pcie-thrash": JobKind(
        LoopSpec(
            batch_size=64,
            num_workers=4,
            compute_s=0.07,
            launch_cpu_s=0.02,
            cpu_s_per_batch=0.3,
            h2d_bytes_per_step=5e9,
            d2h_bytes_per_step=4e9,
            pinned=False,
            mem_intensity=0.5,
            host_gap_s=0.01,
        ),
        30.0,
        38.0,
        1.1,
        "python train_offload.py --offload-activations cpu --batch-size 64 --num-workers 4",
        ("pcie-thrash@pid:{pid}",),
        model=A100_PCIE,
    ),
    "memory-bound": JobKind(
        LoopSpec(
            batch_size=16,
            num_workers=6,
            compute_s=0.28,
            launch_cpu_s=0.03,
            cpu_s_per_batch=0.4,
            h2d_bytes_per_step=20e6,
            mem_intensity=0.92,
            device_copy_s=0.06,
            host_gap_s=0.01,
        ),
        52.0,
        8.0,
        1.3,
        "python train_lm.py --precision fp32 --batch-size 16 --seq-len 4096 --num-workers 6",
        ("memory-bound@gpu:{gpu}",),
    ),
    "idle-vram": JobKind(
        LoopSpec(kind="idle", num_workers=0, warmup_s=20.0),
        40.0,
        9.0,
        0.0,
        "python -m ipykernel_launcher -f /home/{user}/.local/share/jupyter/runtime/"
        "kernel-3f2c9a1e.json",
        ("idle-holding-vram@pid:{pid}",),
    ),
    "serving": JobKind(
        LoopSpec(
            kind="serve",
            batch_size=16,
            num_workers=0,
            request_wait_s=0.16,
            cpu_s_per_batch=0.02,
            compute_s=0.05,
            launch_cpu_s=0.008,
            host_gap_s=0.002,
            h2d_bytes_per_step=2e6,
            d2h_bytes_per_step=0.5e6,
            mem_intensity=0.6,
            warmup_s=10.0,
        ),
        14.0,
        6.0,
        0.0,
        "python serve.py --model llama-3.1-8b-instruct --port 8000 --max-batch 16",
        ("serving@pid:{pid}",),
        cpu_weight=0.2,
    ),
    "serving-replica": JobKind(
        _SERVE_REPLICA_LOOP,
        1.1,
        2.2,
        0.0,
        "python serve.py --model distilbert-base-uncased --port {port}",
        ("serving@pid:{pid}",),
        cpu_weight=0.05,
    ),
    "healthy-checkpointing": JobKind(
        replace(
            _HEALTHY_LOOP,
            checkpoint_every_s=60.0,
            checkpoint_s=5.0,
            checkpoint_bytes=3.6e9,
        ),
        62.0,
        7.5,
        1.6,
        "python train.py --model vit-l16 --batch-size 256 --num-workers 6 --amp --save-every-min 1",
        ("compute-bound@gpu:{gpu}",),
    ),
    "starved-no-process-util": JobKind(
        replace(_STARVED_LOOP, batch_size=64, compute_s=0.5),
        12.0,
        8.0,
        0.0,
        "python train.py --model resnet50 --batch-size 64 --num-workers 0",
        ("input-starved/num-workers-0@pid:{pid}",),
        model=A10G_NO_PROCESS_UTIL,
    ),
    "short-sawtooth": JobKind(
        replace(
            _STARVED_LOOP,
            batch_size=32,
            compute_s=0.42,
            cpu_s_per_batch=0.545,
            read_bytes_per_batch=4e6,
            read_latency_s=0.003,
            h2d_bytes_per_step=8e6,
            pinned=True,
            host_gap_s=0.03,
        ),
        22.0,
        7.0,
        0.0,
        "python finetune.py --model vit-b16 --batch-size 32 --num-workers 0",
        ("input-starved/num-workers-0@pid:{pid}",),
    ),
    "throttled": JobKind(
        # the healthy loop at the clocks a 350 W cap leaves (about 0.66x): kernels take longer
        replace(_HEALTHY_LOOP, compute_s=0.30 / 0.66),
        62.0,
        7.5,
        1.6,
        "python train.py --model resnet152 --batch-size 256 --num-workers 6 --amp --pin-memory",
        ("throttled/power@gpu:{gpu}", "compute-bound@gpu:{gpu}"),
        power_cap_watts=350.0,
    ),
    "rl-env": JobKind(
        # DQN on an emulator: each step is ~0.2 s of environment stepping on the CPU in
        # the main process and a few ms of tiny kernels (cf. the W&B trace in shared/).
        LoopSpec(
            batch_size=32,
            num_workers=0,
            compute_s=0.008,
            launch_cpu_s=0.004,
            cpu_s_per_batch=0.0,
            read_bytes_per_batch=0.0,
            read_latency_s=0.0,
            h2d_bytes_per_step=0.4e6,
            mem_intensity=0.3,
            host_gap_s=0.2,
        ),
        1.6,
        2.0,
        0.0,
        "python dqn_atari.py --env SpaceInvadersNoFrameskip-v4 --replay-size 100000",
        ("low-utilization@gpu:{gpu}",),
    ),
    "vram-near-limit": JobKind(
        _HEALTHY_LOOP,
        77.9,
        7.5,
        1.6,
        "python train.py --model vit-h14 --batch-size 96 --num-workers 6 --amp",
        ("vram-near-limit@gpu:{gpu}", "compute-bound@gpu:{gpu}"),
    ),
}

# gpm: four jobs on H100s whose GPM profiling tells apart what utilization does not
_GPM_BF16_LOOP = replace(_HEALTHY_LOOP, sm_fill=0.85, occupancy=0.5, tensor_share=0.5, dram_bw=0.6)
_GPM_FP32_LOOP = replace(
    _HEALTHY_LOOP,
    compute_s=0.9,  # the same step on the CUDA cores: ~3x the bf16 step
    mem_intensity=0.4,
    sm_fill=0.9,
    occupancy=0.35,
    tensor_share=0.0,
    dram_bw=0.45,
)
_GPM_TINY_KERNELS_LOOP = LoopSpec(
    batch_size=4,
    num_workers=4,
    compute_s=0.0095,
    launch_cpu_s=0.0105,
    cpu_s_per_batch=0.002,
    read_bytes_per_batch=0.3e6,
    h2d_bytes_per_step=0.6e6,
    mem_intensity=0.3,
    host_gap_s=0.0005,
    sm_fill=0.13,  # a batch of 4: each kernel launches a few blocks on 132 SMs
    occupancy=0.3,
    tensor_share=0.3,
    dram_bw=0.2,
)

_STRAGGLER_PEER_LOOP = LoopSpec(
    batch_size=128,
    num_workers=6,
    compute_s=0.10,
    allreduce_s=0.012,
    launch_cpu_s=0.02,
    cpu_s_per_batch=0.45,
    read_bytes_per_batch=38e6,
    h2d_bytes_per_step=19e6,
    host_gap_s=0.005,
)
_STRAGGLER_LEADER_LOOP = replace(_STRAGGLER_PEER_LOOP, cpu_s_per_batch=1.5)
"""The slow rank's shard holds the big images: 3x the decode time per batch."""
_STRAGGLER_RANK = 1

USERS = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi")
FIRST_PID = 4000
PID_STRIDE = 200
"""Room for a process's DataLoader workers between consecutive job pids."""

# mixed: one job kind per GPU, cycling; and how long each had been running
MIXED_LAYOUT: tuple[tuple[str, float], ...] = (
    ("healthy", -10800.0),
    ("starved-loader", 0.0),
    ("small-batch", -900.0),
    ("idle-vram", -5400.0),
    ("memory-bound", -2400.0),
    ("serving", -86400.0),
    ("storage-bound", -1200.0),
    ("pcie-thrash", -300.0),
)
_NO_COTENANTS = frozenset({"idle-vram", "memory-bound"})
"""Kinds whose device-level truth a co-tenant would spoil (device SM ~0, mem >= SM)."""
_REPLICAS_PER_SERVING_GPU = 8


def default_cores(gpus: int) -> int:
    return 32 if gpus <= 4 else 64


def allocations(node_cores: int, gpus: int) -> list[tuple[int, ...]]:
    """One block of cores per GPU's job, like a SLURM allocation (--cpus-per-task)."""
    per = max(1, min(8, node_cores // max(1, gpus)))
    base = per if (gpus + 1) * per <= node_cores else 0
    return [tuple((base + g * per + c) % node_cores for c in range(per)) for g in range(gpus)]


@dataclass
class _Placement:
    """Jobs placed so far, before their shares of cores and VRAM are settled."""

    gpus: int
    node_cores: int
    kinds: list[tuple[int, str, float, str, tuple[str, ...], int | None, int]] = field(
        default_factory=list
    )
    """(gpu, kind, start_s, user, extra labels, ddp leader ordinal, port)."""
    unlisted: dict[int, int] = field(default_factory=dict)
    """GPU -> bytes in use there that no listed process holds."""


def _settle(
    name: str, placement: _Placement, allowed_all: bool, *, profiling: bool = False
) -> Scene:
    """Turn placed jobs into processes: pids, core shares, VRAM that fits."""
    allocs = allocations(placement.node_cores, placement.gpus)
    weights: dict[int, float] = {}
    vram_per_gpu: dict[int, float] = {}
    for gpu, name_of_kind, *_ in placement.kinds:
        weights[gpu] = weights.get(gpu, 0.0) + KINDS[name_of_kind].cpu_weight
        vram_per_gpu[gpu] = vram_per_gpu.get(gpu, 0.0) + KINDS[name_of_kind].vram_gib * GIB
    models: dict[int, GpuModel] = {}
    caps: dict[int, float | None] = {}
    for gpu, name_of_kind, *_ in placement.kinds:
        if gpu not in models:
            models[gpu] = KINDS[name_of_kind].model
            caps[gpu] = KINDS[name_of_kind].power_cap_watts
    if name == "mixed":
        models = dict.fromkeys(models, H100)
    procs: list[ProcessSetup] = []
    ranks = sum(1 for *_, leader, _port in placement.kinds if leader is not None)
    for ordinal, (gpu, kind_name, start_s, user, extra, leader, port) in enumerate(placement.kinds):
        kind = KINDS[kind_name]
        pid = FIRST_PID + PID_STRIDE * ordinal
        model = models[gpu]
        budget = 0.985 * model.vram_total_bytes - RESERVED_BYTES - placement.unlisted.get(gpu, 0)
        scale = min(1.0, budget / vram_per_gpu[gpu]) if vram_per_gpu[gpu] > 0 else 1.0
        alloc = allocs[gpu]
        share = len(alloc) * kind.cpu_weight / weights[gpu]
        labels = tuple(t.format(pid=pid, gpu=gpu) for t in (*kind.labels, *extra))
        leader_pid = None if leader is None else FIRST_PID + PID_STRIDE * leader
        loop = kind.loop
        if leader is not None and leader == ordinal:
            loop = _STRAGGLER_LEADER_LOOP
        elif leader is not None:
            loop = _STRAGGLER_PEER_LOOP
        command = kind.command.format(user=user, port=port)
        launcher = None
        zombie_of = None
        if kind_name == "zombie":
            zombie_of = (pid - LAUNCHER_PID_OFFSET, ZOMBIE_PARENT_NAME)
        if leader is not None:
            launcher = _torchrun(FIRST_PID - LAUNCHER_PID_OFFSET, user, ranks, command)
        elif kind_name in _TORCHRUN_KINDS:
            launcher = _torchrun(pid - LAUNCHER_PID_OFFSET, user, 1, command)
        procs.append(
            ProcessSetup(
                pid=pid,
                gpu_index=gpu,
                user=user,
                command=command,
                loop=loop,
                vram_bytes=int(kind.vram_gib * GIB * scale),
                rss_bytes=int(kind.rss_gib * GIB),
                worker_rss_bytes=int(kind.worker_rss_gib * GIB),
                start_s=start_s,
                cores=alloc,
                cores_available=share,
                labels=labels,
                ddp_leader_pid=leader_pid,
                launcher=launcher,
                zombie_of=zombie_of,
            )
        )
    gpus = tuple(
        GpuSetup(
            g,
            models.get(g, H100 if name == "mixed" else _first_model(placement)),
            caps.get(g),
            placement.unlisted.get(g, 0),
        )
        for g in range(placement.gpus)
    )
    used = sorted({c for p in procs for c in p.cores})
    allowed = tuple(range(placement.node_cores)) if allowed_all or not used else tuple(used)
    return Scene(
        name=name,
        gpus=gpus,
        processes=tuple(procs),
        node_cores=placement.node_cores,
        allowed_cores=allowed,
        memory_total_bytes=placement.node_cores * 16 * GIB,
        profiling=profiling,
        gpu_labels=tuple(f"ghost-memory/unlisted@gpu:{g}" for g in sorted(placement.unlisted)),
    )


LAUNCHER_PID_OFFSET = 100
"""A torchrun's pid: this far below its first rank's (between two jobs' worker pids)."""


def _torchrun(pid: int, user: str, ranks: int, command: str) -> Launcher:
    """The ``torchrun`` process that started ``ranks`` copies of ``command``."""
    script = command.removeprefix("python ")
    return Launcher(
        pid=pid,
        kind="torchrun",
        user=user,
        name="torchrun",
        command=f"torchrun --nproc-per-node={ranks} {script}",
        cpu_percent=0.3,
    )


def _first_model(placement: _Placement) -> GpuModel:
    return KINDS[placement.kinds[0][1]].model if placement.kinds else H100


def _extras_round_robin(count: int, gpus: Sequence[int]) -> list[int]:
    return [gpus[i % len(gpus)] for i in range(count)] if gpus else []


def _uniform(kind: str) -> Callable[[int, int, int], _Placement]:
    """A scenario that runs one kind of job: one per GPU, extras as more runs of it."""

    def build(gpus: int, processes: int, cores: int) -> _Placement:
        placement = _Placement(gpus, cores)
        for i in range(processes):
            gpu = i % gpus
            # runs beyond one per GPU are a sweep that started a little earlier
            start = -17.0 * (i // gpus)
            placement.kinds.append((gpu, kind, start, USERS[0], (), None, 0))
        return placement

    return build


def _add_replicas(placement: _Placement, targets: Sequence[int]) -> None:
    """Light inference replicas (``serving-replica``) on the given GPUs, one per entry."""
    for n, gpu in enumerate(targets):
        placement.kinds.append(
            (gpu, "serving-replica", -3600.0 - 97.0 * n, "svc-infer", (), None, 8001 + n)
        )


def _mixed(gpus: int, processes: int, cores: int) -> _Placement:
    """A different job per GPU; processes beyond one per GPU are inference replicas."""
    placement = _Placement(gpus, cores)
    kinds = [MIXED_LAYOUT[g % len(MIXED_LAYOUT)] for g in range(gpus)]
    for g, (kind, start) in enumerate(kinds[:processes]):
        placement.kinds.append((g, kind, start, USERS[g % len(USERS)], (), None, 0))
    extras = max(0, processes - gpus)
    serving = [g for g, (k, _) in enumerate(kinds) if k == "serving"]
    on_serving: list[int] = []
    for g in serving:
        on_serving += [g] * (_REPLICAS_PER_SERVING_GPU - 1)
    first = on_serving[:extras]
    rest = extras - len(first)
    others = [g for g, (k, _) in enumerate(kinds) if k not in _NO_COTENANTS and k != "serving"]
    if rest and not others:
        others = list(range(gpus))
    _add_replicas(placement, first + _extras_round_robin(rest, others))
    return placement


def _straggler(gpus: int, processes: int, cores: int) -> _Placement:
    """A DDP job, one rank per GPU; rank 1's data is slow and everyone waits for it."""
    placement = _Placement(gpus, cores)
    ranks = min(gpus, processes)
    leader = _STRAGGLER_RANK if ranks > 1 else 0
    for r in range(ranks):
        extra: tuple[str, ...] = ()
        if r == leader:
            extra = ("straggler@gpu:{gpu}", "input-starved/more-workers@pid:{pid}")
        placement.kinds.append((r, "ddp-rank", 0.0, USERS[4], extra, leader, 0))
    _add_replicas(placement, _extras_round_robin(max(0, processes - ranks), range(gpus)))
    return placement


KINDS["gpm-bf16"] = JobKind(
    _GPM_BF16_LOOP,
    62.0,
    7.5,
    1.6,
    "python train.py --model resnet152 --batch-size 256 --num-workers 6 --amp --pin-memory",
    ("compute-bound@gpu:{gpu}",),
)
KINDS["gpm-fp32"] = JobKind(
    _GPM_FP32_LOOP,
    70.0,
    7.5,
    1.6,
    "python train_fp32.py --model resnet152 --batch-size 256 --num-workers 6 --precision fp32",
    ("tensor-cores-idle@pid:{pid}", "compute-bound@gpu:{gpu}"),
)
KINDS["gpm-tiny-kernels"] = JobKind(
    _GPM_TINY_KERNELS_LOOP,
    5.0,
    4.0,
    0.8,
    "python finetune.py --model bert-base-uncased --batch-size 4 --num-workers 4",
    ("small-batch@pid:{pid}", "utilization-overstated@gpu:{gpu}"),
)
KINDS["gpm-hung-rank"] = JobKind(
    # rank 0 of a two-node job, alone on this node: the other node's rank never joins
    # the first all-reduce
    replace(_STRAGGLER_PEER_LOOP, hang_after_s=0.0, nccl_channels=4),
    48.0,
    8.5,
    1.5,
    "python train_ddp.py --config configs/vit_b16.yaml --nnodes 2 --batch-size 128",
    ("collective-hang@pid:{pid}",),
)
GPM_LAYOUT: tuple[tuple[str, float], ...] = (
    ("gpm-bf16", -7200.0),
    ("gpm-fp32", -1800.0),
    ("gpm-tiny-kernels", -600.0),
    ("gpm-hung-rank", 0.0),
)
_TORCHRUN_KINDS = frozenset({"healthy", "gpm-bf16", "gpm-hung-rank"})


def _gpm(gpus: int, processes: int, cores: int) -> _Placement:
    """One GPM-profiled job per GPU (cycling through :data:`GPM_LAYOUT`); processes beyond
    one per GPU are inference replicas beside the bf16 jobs."""
    placement = _Placement(gpus, cores)
    kinds = [GPM_LAYOUT[g % len(GPM_LAYOUT)] for g in range(gpus)]
    for g, (kind, start) in enumerate(kinds[:processes]):
        placement.kinds.append((g, kind, start, USERS[g % len(USERS)], (), None, 0))
    hosts = [g for g, (k, _) in enumerate(kinds) if k == "gpm-bf16"]
    _add_replicas(placement, _extras_round_robin(max(0, processes - gpus), hosts))
    return placement


KINDS["ddp-rank"] = JobKind(
    _STRAGGLER_PEER_LOOP,
    48.0,
    8.5,
    1.5,
    "python train_ddp.py --config configs/vit_b16.yaml --batch-size 128 --num-workers 6",
)


KINDS["zombie"] = JobKind(
    # exited (state Z): runs nothing, NVML still lists it with its memory
    LoopSpec(kind="idle", num_workers=0, warmup_s=0.0),
    22.0,
    0.0,
    0.0,
    "python train.py --config configs/sweep/trial_17.yaml",
    # it holds memory and will never run again: ghost-memory names the parent to signal
    # (idle-holding-vram leaves a zombie to it: its advice is for a live process)
    ("ghost-memory/defunct@pid:{pid}",),
)
KINDS["sweep-trial"] = JobKind(
    _HEALTHY_LOOP,
    40.0,
    7.5,
    1.6,
    "python train.py --config configs/sweep/trial_18.yaml --num-workers 6 --amp",
    ("compute-bound@gpu:{gpu}",),
)
ZOMBIE_PARENT_NAME = "python"
"""The zombie's parent: a sweep driver that starts trials and never wait()s for them."""
GHOST_UNLISTED_GIB = 30.0
"""What the leaked inference worker holds on GPU 0 with no process listed for it."""


def _ghost(gpus: int, processes: int, cores: int) -> _Placement:
    """GPU 0: 30 GiB held by no listed process (an inference worker that exited while a
    child kept its device files open). GPU 1: a sweep's zombie trial still listed with
    its memory, beside the next trial, which trains. Healthy training on the GPUs beyond.
    ``processes`` counts the listed ones (zombie, next trial, healthy jobs); more are
    inference replicas beside the healthy jobs."""
    placement = _Placement(gpus, cores)
    placement.unlisted[0] = int(GHOST_UNLISTED_GIB * GIB)
    slots = [(1, "zombie", -5400.0), (1, "sweep-trial", -5300.0)]
    slots += [(g, "healthy", -7200.0) for g in range(2, gpus)]
    for gpu, kind, start in slots[:processes]:
        placement.kinds.append((gpu, kind, start, USERS[gpu % len(USERS)], (), None, 0))
    hosts = list(range(1, gpus))
    _add_replicas(placement, _extras_round_robin(max(0, processes - len(slots)), hosts))
    return placement


@dataclass(frozen=True, slots=True)
class _Scenario:
    description: str
    build: Callable[[int, int, int], _Placement]
    default_gpus: int = 1
    min_gpus: int = 1
    profiling: bool = False


SCENARIOS: dict[str, _Scenario] = {
    "mixed": _Scenario(
        "a different job on each GPU (healthy, starved, small batch, idle notebook, ...)",
        _mixed,
        default_gpus=4,
    ),
    "healthy": _Scenario(
        "compute-bound training: SM ~95 %, workers keep up, spare cores", _uniform("healthy")
    ),
    "starved-loader": _Scenario(
        "num_workers=0: the main process loads every batch, SM bursts then gaps",
        _uniform("starved-loader"),
    ),
    "cpu-bound-loader": _Scenario(
        "12 workers with heavy augmentation saturate all 8 allowed cores; SM ~40 % with gaps",
        _uniform("cpu-bound-loader"),
    ),
    "storage-bound": _Scenario(
        "workers wait on NFS reads (D state, iowait high), cores idle, SM ~25 % with gaps",
        _uniform("storage-bound"),
    ),
    "small-batch": _Scenario(
        "batch size 8: launch-bound, steady SM ~40 %, 7 % of VRAM, main process pegged",
        _uniform("small-batch"),
    ),
    "pcie-thrash": _Scenario(
        "GBs of pageable host<->device copies every step: PCIe busy, SM ~12 %",
        _uniform("pcie-thrash"),
    ),
    "memory-bound": _Scenario(
        "fp32 elementwise-heavy model: memory-access ~90 % above SM ~80 %",
        _uniform("memory-bound"),
    ),
    "idle-vram": _Scenario(
        "a forgotten notebook holds 40 GiB and runs nothing", _uniform("idle-vram")
    ),
    "straggler": _Scenario(
        "4-rank DDP job: rank 1's slow data loading holds every step; peers spin in NCCL",
        _straggler,
        default_gpus=4,
        min_gpus=2,
    ),
    "healthy-checkpointing": _Scenario(
        "compute-bound, but utilization drops for 5 s every minute while saving a checkpoint",
        _uniform("healthy-checkpointing"),
    ),
    "starved-no-process-util": _Scenario(
        "num_workers=0 on a GPU without per-process utilization (process SM % unknown)",
        _uniform("starved-no-process-util"),
    ),
    "short-sawtooth": _Scenario(
        "num_workers=0 with a 1 s load/compute cycle: flat at 1 Hz, a sawtooth in sub-second "
        "samples",
        _uniform("short-sawtooth"),
    ),
    "throttled": _Scenario(
        "compute-bound under a 350 W power cap: clocks ~1300 MHz, sw_power_cap",
        _uniform("throttled"),
    ),
    "rl-env": _Scenario(
        "reinforcement learning: the main process steps an emulator; GPU busy ~4 %, 2 % of VRAM",
        _uniform("rl-env"),
    ),
    "vram-near-limit": _Scenario(
        "compute-bound with 98 % of VRAM in use: one spike from an out-of-memory error",
        _uniform("vram-near-limit"),
    ),
    "gpm": _Scenario(
        "H100s with GPM profiling: bf16 training (SM active ~80 %, tensor ~40 %), FP32 with "
        "idle tensor cores, tiny kernels (busy ~86 %, SM active ~11 %), a rank hung in NCCL "
        "(busy 100 %, SM active ~3 %)",
        _gpm,
        default_gpus=4,
        profiling=True,
    ),
    "ghost-memory": _Scenario(
        "memory nothing shows: 30 GiB in use on GPU 0 with no process listed (a leaked "
        "inference worker); on GPU 1 a sweep's zombie trial still holds its memory beside "
        "the next trial (its parent never reaps it)",
        _ghost,
        default_gpus=2,
        min_gpus=2,
    ),
}
DEFAULT_SCENARIO = "mixed"


def build_scene(
    name: str, gpus: int | None = None, processes: int | None = None, cores: int | None = None
) -> Scene:
    """The node a scenario simulates, at the requested sizes."""
    scenario = SCENARIOS.get(name)
    if scenario is None:
        raise UnknownScenario(name, list(SCENARIOS))
    n_gpus = scenario.default_gpus if gpus is None else gpus
    if not scenario.min_gpus <= n_gpus <= MAX_GPUS:
        raise ValueError(
            f"scenario {name!r} needs between {scenario.min_gpus} and {MAX_GPUS} GPUs, got {n_gpus}"
        )
    n_procs = n_gpus if processes is None else processes
    if not 0 <= n_procs <= MAX_PROCESSES:
        raise ValueError(f"processes must be between 0 and {MAX_PROCESSES}, got {n_procs}")
    n_cores = default_cores(n_gpus) if cores is None else cores
    if not 1 <= n_cores <= 1024:
        raise ValueError(f"cores must be between 1 and 1024, got {n_cores}")
    placement = scenario.build(n_gpus, n_procs, n_cores)
    return _settle(name, placement, allowed_all=(name == "mixed"), profiling=scenario.profiling)


def describe(name: str) -> tuple[str, int]:
    scenario = SCENARIOS[name]
    return scenario.description, scenario.default_gpus
