"""One tick of what the monitor knows, as immutable records (:func:`record`).

Every source (live NVML + psutil, the demo simulator, later replay and the
log importers) produces :class:`Snapshot` objects; history, hints and views
only ever read them. Conventions, kept everywhere:

* Unknown is ``None`` -- never 0, never nvitop's ``NA`` string. A GPU that
  reports "not supported" for PCIe throughput has ``pcie_rx_bytes_per_s=None``;
  a process with no NVML utilization sample has ``sm_percent=None``.
* Units are SI and bytes: percentages 0-100, bytes, bytes per second, watts,
  degrees Celsius, MHz, seconds since the epoch. Formatting for people happens
  only in views (see :mod:`gputop_hints.units`).
* A process using two GPUs appears as two :class:`GpuProcess` rows, one per
  GPU, keyed by ``(pid, gpu_index)``.

This module must not import Textual (``tests/test_layering.py`` checks).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_kwargs: Any) -> Callable[[Any], Any]:
        return lambda function: function


_T = TypeVar("_T")


@dataclass_transform(frozen_default=True)
def record(cls: type[_T]) -> type[_T]:
    """A model record: a slotted dataclass, compared and hashed by value, and immutable
    -- checked statically, not at run time. To mypy (CI runs it strict) a record is a
    frozen dataclass, and assigning to a field is an error; at run time it is a plain
    slotted dataclass, because a frozen one's ``__init__`` stores every field through
    ``object.__setattr__``, three times the cost of a plain one for the 33 fields of a
    :class:`GpuSample` -- and readers build one per GPU reading, millions a file
    (``bench/report_speed.py --formats``, its "build us" column; docs/import.md).
    Change a record with :func:`dataclasses.replace`, never by assignment."""
    return dataclass(slots=True, unsafe_hash=True)(cls)


SCHEMA_VERSION = 1
"""Version of the dictionary/JSON form produced by :func:`snapshot_to_dict`."""

# Bytes per second per lane, per direction, after line encoding, by PCIe
# generation: 2.5 GT/s 8b/10b, 5 GT/s 8b/10b, then 128b/130b from gen 3 on.
PCIE_LANE_BYTES_PER_S: Mapping[int, float] = {
    1: 250e6,
    2: 500e6,
    3: 8e9 * 128 / 130 / 8,
    4: 16e9 * 128 / 130 / 8,
    5: 32e9 * 128 / 130 / 8,
    6: 64e9 * 242 / 256 / 8,
}


# Clock event reasons ("throttle reasons" before driver 535), bit -> name, as in
# nvml.h's nvmlClocksEventReason* constants. The live source decodes NVML's mask
# with it, the importers nvidia-smi's hex column: one naming everywhere.
CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x0001, "gpu_idle"),
    (0x0002, "applications_clocks_setting"),
    (0x0004, "sw_power_cap"),
    (0x0008, "hw_slowdown"),
    (0x0010, "sync_boost"),
    (0x0020, "sw_thermal"),
    (0x0040, "hw_thermal"),
    (0x0080, "hw_power_brake"),
    (0x0100, "display_clocks_setting"),
    (0x0200, "board_limit"),
    (0x0400, "reliability"),
)

HOLDING_CLOCK_REASONS: dict[str, str] = {
    "sw_power_cap": "power",
    "hw_power_brake": "power",
    "sw_thermal": "thermal",
    "hw_thermal": "thermal",
    "hw_slowdown": "thermal",
}
"""Clock event reasons that hold a busy GPU's clocks down, and the cause each
names (power or heat). The rest (gpu_idle, application or display clock
settings, sync boost) are harmless bookkeeping."""


# The metrics a source may lack, by name: a file reader lists the ones its file
# lacks (StreamInfo.missing), each hint rule names the ones it needs, and the
# report says which rules could not be evaluated.
METRIC_SM = "sm_percent"
METRIC_MEMORY_ACCESS = "memory_access_percent"
METRIC_VRAM = "vram"
METRIC_PCIE = "pcie"
METRIC_PROCESSES = "processes"
"""Per-process rows (pid, VRAM, CPU of main process and workers)."""
METRIC_HOST_CPU = "host_cpu"
"""Per-core CPU load of the host."""
METRIC_SUBSECOND = "sm_samples"
"""NVML buffered sub-second utilization samples."""
METRIC_THROTTLE = "throttle_reasons"
METRIC_POWER = "power"
METRIC_TEMPERATURE = "temperature"
ALL_METRICS = (
    METRIC_SM,
    METRIC_MEMORY_ACCESS,
    METRIC_VRAM,
    METRIC_PCIE,
    METRIC_PROCESSES,
    METRIC_HOST_CPU,
    METRIC_SUBSECOND,
    METRIC_THROTTLE,
    METRIC_POWER,
    METRIC_TEMPERATURE,
)


def pcie_link_bytes_per_s(generation: int | None, width: int | None) -> float | None:
    """Theoretical one-direction bandwidth of a PCIe link, or None if unknown."""
    if generation is None or width is None or width <= 0:
        return None
    per_lane = PCIE_LANE_BYTES_PER_S.get(generation)
    if per_lane is None:
        return None
    return per_lane * width


@record
class HostSample:
    """The machine the monitor runs on, at one tick."""

    hostname: str
    cpu_percent_per_core: tuple[float | None, ...]
    """Busy % of each logical core (index = core id) over the last tick."""
    allowed_cores: tuple[int, ...]
    """Cores this process (and so, usually, the job it watches) may run on."""
    iowait_percent: float | None = None
    """Share of all CPU time spent waiting on I/O, 0-100 (Linux only)."""
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    load_average: tuple[float, float, float] | None = None

    @property
    def core_count(self) -> int:
        return len(self.cpu_percent_per_core)

    def allowed_cores_busy_percent(self) -> float | None:
        """Mean busy % over the allowed cores (None when none is known)."""
        allowed = set(self.allowed_cores)
        values = [
            v for i, v in enumerate(self.cpu_percent_per_core) if v is not None and i in allowed
        ]
        return sum(values) / len(values) if values else None


@record
class UtilizationSample:
    """One entry of NVML's buffered utilization samples (``nvmlDeviceGetSamples``)."""

    timestamp: float
    percent: float


LOST_GPU_TEXT = "lost: NVML cannot reach it (fell off the bus?); no values until it returns"
"""What views say of a :attr:`GpuSample.lost` GPU in place of its values: the
monitor and ``--once`` use the same words."""


def not_answering_text(seconds: float) -> str:
    """What views say of a :attr:`GpuSample.not_answering_s` GPU in place of its values
    (the monitor, ``--once`` and ``record``'s stderr use the same words)."""
    return (
        f"not answering for {seconds:.0f} s: an NVML call on it has not returned; "
        "no values until it does"
    )


PROFILING_FIELDS = (
    "sm_active_percent",
    "sm_occupancy_percent",
    "tensor_active_percent",
    "dram_active_percent",
)
"""The :class:`GpuSample` profiling percentages (DCGM fields, NVML GPM), in the order
every reader and writer of them uses (the recording's ``profiling`` column)."""


@record
class MigInstance:
    """One MIG instance (a GPU instance with one compute instance in it) of a GPU in MIG
    mode, at one tick. NVML gives no utilization for it (``utilization.gpu`` answers
    NotSupported under MIG): :attr:`sm_percent` is None there, never 0."""

    gpu_instance_id: int
    compute_instance_id: int
    profile: str | None = None
    """The instance's profile as NVML names it ("1g.10gb", "3g.40gb"); None: unknown."""
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    sm_percent: float | None = None
    """Utilization of the instance, where a driver gives it on the MIG handle (none
    known does: None)."""
    sm_active_percent: float | None = None
    """GPM SM activity of the GPU instance (``nvmlGpmMigSampleGet``, Hopper and newer);
    None when the GPU has no GPM or the first tick has no earlier sample."""
    uuid: str | None = None
    """``MIG-...``: what ``CUDA_VISIBLE_DEVICES`` names it by."""

    @property
    def key(self) -> tuple[int, int]:
        """``(gpu instance id, compute instance id)``: what :attr:`GpuProcess.mig_instance`
        holds."""
        return (self.gpu_instance_id, self.compute_instance_id)

    @property
    def label(self) -> str:
        """The profile, or the instance ids when the profile is unknown."""
        return self.profile or f"GI {self.gpu_instance_id}/CI {self.compute_instance_id}"


@record
class GpuSample:
    """One GPU at one tick."""

    index: int
    """NVML index (what ``nvidia-smi`` shows), not the CUDA ordinal."""
    name: str | None = None
    uuid: str | None = None
    sm_percent: float | None = None
    """NVML utilization.gpu: % of time one or more kernels ran (not SM occupancy)."""
    memory_access_percent: float | None = None
    """NVML utilization.memory: % of time device memory was read or written."""
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    pcie_rx_bytes_per_s: float | None = None
    """Host -> device traffic as NVML reports it (sampled over ~20 ms)."""
    pcie_tx_bytes_per_s: float | None = None
    """Device -> host traffic."""
    pcie_generation: int | None = None
    pcie_width: int | None = None
    temperature_c: float | None = None
    power_watts: float | None = None
    power_limit_watts: float | None = None
    """The ENFORCED power limit (NVML ``nvmlDeviceGetEnforcedPowerLimit``)."""
    default_power_limit_watts: float | None = None
    """The board's DEFAULT limit (``nvmlDeviceGetPowerManagementDefaultLimit``); None when
    not measured. An enforced limit below it was lowered (``nvidia-smi -pl``)."""
    sm_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    throttle_reasons: tuple[str, ...] | None = None
    """Active clock event reasons by name (``power_cap``, ``hw_thermal`` ...);
    empty when the clocks run free, None when NVML cannot say."""
    sm_samples: tuple[UtilizationSample, ...] = ()
    """Sub-second SM % readings recorded by the driver since the last tick,
    where NVML supports ``nvmlDeviceGetSamples``; empty otherwise."""
    lost: bool = False
    """NVML says the GPU is lost (fell off the bus, XID 79): every metric is
    None, and views say "lost" rather than "n/a"."""
    not_answering_s: float | None = None
    """Seconds an NVML call on this GPU has been running without returning, when
    it missed this tick's deadline (a wedged driver, a GPU in a bad state): every
    metric is None this tick, and views say "not answering for N s". None: it
    answered. See docs/metrics.md ("A GPU that does not answer")."""
    sm_active_percent: float | None = None
    """DCGM/GPM profiling: % of time at least one warp was resident, averaged over all
    SMs (DCGM ``SMACT``, field 1002). Unlike :attr:`sm_percent` it falls when a
    kernel occupies few SMs. None when the source does not profile."""
    sm_occupancy_percent: float | None = None
    """Resident warps as % of the SMs' maximum, averaged over time and SMs (DCGM
    ``SMOCC``, field 1003)."""
    tensor_active_percent: float | None = None
    """% of cycles the tensor (HMMA) pipes were active (DCGM ``TENSO``, field 1004)."""
    dram_active_percent: float | None = None
    """% of cycles device memory was sending or receiving data (DCGM ``DRAMA``, field
    1005): a bandwidth share, unlike :attr:`memory_access_percent`, a time share."""
    profiling_unavailable: str | None = None
    """Why the profiling percentages above are unknown on a live GPU (no GPM on this GPU
    or driver, profiling restricted to administrators); None when they are known or
    the source does not profile."""
    node: str | None = None
    """The node this GPU is in, where a view holds several nodes' GPUs (a job read back
    from Prometheus); None: this machine, or a file of one machine."""
    implausible: tuple[str, ...] = ()
    """Metrics NVML reported this tick with values that cannot be real (``0xFFFFFFFF``,
    a negative power, a utilization over 100 %), or failed to read this tick (a VRAM
    query answering NotSupported / Unknown): shown as unknown, named here."""
    mig_mode: bool = False
    """The GPU is in MIG mode (partitioned into :attr:`mig_instances`): NVML gives no
    device-wide utilization and no per-process utilization then."""
    mig_instances: tuple[MigInstance, ...] = ()
    """Its MIG instances, by GPU instance id; empty when not in MIG mode."""

    def mig_instance(self, key: tuple[int, int] | None) -> MigInstance | None:
        """The instance with ``key`` (``(gpu instance id, compute instance id)``)."""
        if key is None:
            return None
        for instance in self.mig_instances:
            if instance.key == key:
                return instance
        return None

    @property
    def profiling_known(self) -> bool:
        """Whether any of the profiling percentages (:data:`PROFILING_FIELDS`) is known."""
        return (
            self.sm_active_percent is not None
            or self.sm_occupancy_percent is not None
            or self.tensor_active_percent is not None
            or self.dram_active_percent is not None
        )

    @property
    def profiling_shown_unavailable(self) -> str | None:
        """The reason to show in place of the profiling percentages: the GPU could give
        them but does not here (profiling restricted to administrators, an nvidia-ml-py
        without the GPM API). None where they are known, where the source does not
        profile, and where the GPU has no GPM at all (pre-Hopper: the live source's
        reason starts "not supported"; ``tests/tui`` pins the wording) -- a GPU that
        never had them shows nothing in their place."""
        reason = self.profiling_unavailable
        if reason is None or self.profiling_known or reason.startswith("not supported"):
            return None
        return reason

    @property
    def pcie_link_bytes_per_s(self) -> float | None:
        """One-direction capacity of the current link, when NVML gives gen and width."""
        return pcie_link_bytes_per_s(self.pcie_generation, self.pcie_width)

    @property
    def vram_fraction(self) -> float | None:
        if self.vram_used_bytes is None or not self.vram_total_bytes:
            return None
        return self.vram_used_bytes / self.vram_total_bytes

    @property
    def utilization_sum_percent(self) -> float | None:
        """SM % + memory-access % -- may exceed 100: they are overlapping time fractions."""
        if self.sm_percent is None or self.memory_access_percent is None:
            return None
        return self.sm_percent + self.memory_access_percent

    @property
    def power_limit_lowered(self) -> bool | None:
        """Whether the enforced power limit is below the board's default (None: unknown)."""
        if self.power_limit_watts is None or self.default_power_limit_watts is None:
            return None
        # NVML reports both in milliwatts; a few watts of rounding is not a lowered limit.
        return self.power_limit_watts < self.default_power_limit_watts - 5.0

    @property
    def clocks_held_by(self) -> tuple[str, ...]:
        """The reported clock event reasons that hold clocks down for power or heat."""
        if not self.throttle_reasons:
            return ()
        return tuple(r for r in self.throttle_reasons if r in HOLDING_CLOCK_REASONS)


@record
class WorkerProcess:
    """A child of a GPU process (a DataLoader worker, usually)."""

    pid: int
    cpu_percent: float | None = None
    """% of one core over the last tick (100 = one core fully busy)."""
    rss_bytes: int | None = None
    state: str | None = None
    """Linux state letter: R running, S sleeping, D uninterruptible (I/O) ..."""
    name: str | None = None
    command: str | None = None
    """Its command line, at most ``WORKER_COMMAND_MAX`` characters (None: not known). A
    DataLoader worker is a fork of the main process (the same command line); inductor's
    compile workers run ``torch/_inductor/compile_worker/__main__.py``."""

    @property
    def is_toolchain(self) -> bool:
        """Whether this child is a compiler or linker (``ptxas``, ``cc1plus``, ``nvcc``,
        ``ninja`` ...): a job that runs one is compiling -- triton's kernels through
        ``ptxas``, inductor's C++ through ``g++``, an extension built at import -- not
        loading data, whatever its other children look like."""
        return self.name is not None and is_toolchain_name(self.name)


WORKER_COMMAND_MAX = 512
"""Longest worker command line kept: enough to name the program, bounded per tick."""

_TOOLCHAIN = (
    r"(?:ptxas|cicc|nvcc|nvlink|fatbinary|cudafe\+\+|ninja|cc1|cc1plus|collect2|as|ld"
    r"|ld\.(?:bfd|gold|lld)|(?:[\w.]+-)?(?:gcc|g\+\+|c\+\+|cc|clang|clang\+\+)(?:-[\d.]+)?"
    r"|x86_64-linux-gn|aarch64-linux-g)"
)
"""Process names of the compilers, assemblers and linkers a deep-learning job runs while
it compiles: CUDA's (``nvcc`` drives ``cicc``, ``ptxas``, ``fatbinary``, ``nvlink``;
triton calls ``ptxas`` itself), the host's (``gcc``/``g++``/``clang`` drive ``cc1plus``,
``as``, ``collect2``, ``ld``; a triplet-prefixed ``x86_64-linux-gnu-g++``, cut to the 15
characters of ``/proc/PID/comm``) and ``ninja`` (torch's C++ extension builds).
Compiled at its first use: a process with no children never asks."""


@lru_cache(maxsize=256)
def is_toolchain_name(name: str) -> bool:
    """Whether a process called ``name`` is a compiler, assembler, linker or build driver."""
    return re.compile(_TOOLCHAIN).fullmatch(name) is not None


FRAMEWORKS = ("jax", "tensorflow", "torch")
"""What :attr:`GpuProcess.frameworks` may hold."""


def known_frameworks(values: Any) -> tuple[str, ...]:
    """A file's ``frameworks`` list as :attr:`GpuProcess.frameworks`: only the known
    names (anything else a file holds is dropped, never shown)."""
    return tuple(f for f in values or () if f in FRAMEWORKS)


@record
class GpuProcess:
    """A process holding a context on one GPU, with its host-side picture."""

    pid: int
    gpu_index: int
    vram_bytes: int | None = None
    sm_percent: float | None = None
    """Per-process SM % from NVML process-utilization samples; None when the
    driver has no sample for it (nvitop's 0 for "no sample" maps to None)."""
    memory_access_percent: float | None = None
    cpu_percent: float | None = None
    """Host CPU of the main process alone, % of one core."""
    workers: tuple[WorkerProcess, ...] = ()
    """Child processes (recursively), each with its own CPU %."""
    rss_bytes: int | None = None
    state: str | None = None
    user: str | None = None
    name: str | None = None
    command: str = ""
    create_time: float | None = None
    in_job: bool | None = None
    """Whether the process belongs to the attached job (None: no job, or unknown)."""
    container: str | None = None
    """The container or batch job the process runs in, from /proc/PID/cgroup ("docker
    3f2a1b9c0d4e", "pod ml/trainer-0", "slurm job 1234"); None: none found, or unknown."""
    frameworks: tuple[str, ...] = ()
    """The ML frameworks whose CUDA libraries the process has mapped ("jax", "tensorflow",
    "torch"), read from /proc/PID/maps when it was first seen on a GPU; () when none
    was found or it could not be read (another user's process, an imported log)."""
    launcher_pid: int | None = None
    """The nearest ancestor that launched it as one rank of a job (torchrun, deepspeed,
    accelerate launch, mpirun, srun): a pid in :attr:`Snapshot.launchers`. None: not
    started by a known launcher, or not known (a log without process trees)."""
    mig_instance: tuple[int, int] | None = None
    """``(gpu instance id, compute instance id)`` of the MIG instance it runs on (see
    :attr:`GpuSample.mig_instances`); None when its GPU is not in MIG mode, or unknown."""
    parent_pid: int | None = field(default=None, compare=False)
    """Its parent's pid (/proc/PID/stat); None: not known (not visible here, a log).
    The three parent fields are live-only: recordings do not carry them (so they are
    left out of equality, as a recording read back must equal what was written)."""
    parent_name: str | None = field(default=None, compare=False)
    """Its parent's name, read where the process is a zombie or dead (state Z or X):
    the process to signal so that it reaps it; None otherwise or when not known."""
    parent_state: str | None = field(default=None, compare=False)
    """Its parent's state letter, read with :attr:`parent_name`."""

    @property
    def key(self) -> tuple[int, int]:
        return (self.pid, self.gpu_index)

    @property
    def defunct(self) -> bool:
        """A zombie (Z) or dead (X) process: it has exited, its parent has not reaped it."""
        return self.state in ("Z", "X")

    @property
    def workers_cpu_percent(self) -> float | None:
        """Summed CPU % of the workers; 0.0 with no workers, None if none was measurable."""
        if not self.workers:
            return 0.0
        known = [w.cpu_percent for w in self.workers if w.cpu_percent is not None]
        return sum(known) if known else None

    def busy_workers(self, threshold_percent: float = 20.0) -> int:
        """How many workers used more than ``threshold_percent`` of a core."""
        return sum(
            1
            for w in self.workers
            if w.cpu_percent is not None and w.cpu_percent > threshold_percent
        )


@record
class Launcher:
    """A process that started GPU processes as ranks of one job (``torchrun``,
    ``python -m torch.distributed.run``, ``deepspeed``, ``accelerate launch``,
    ``mpirun``, ``srun``). It usually holds no GPU context itself."""

    pid: int
    kind: str
    """Which launcher: "torchrun", "deepspeed", "accelerate", "mpirun", "srun"."""
    user: str | None = None
    name: str | None = None
    command: str = ""
    cpu_percent: float | None = None
    """Its own CPU, % of one core (None: not measured)."""


@record
class JobInfo:
    """The batch job the monitor is attached to (SLURM), when there is one."""

    job_id: str
    scheduler: str = "slurm"
    step_id: str | None = None
    name: str | None = None
    user: str | None = None
    node: str | None = None
    cpus: tuple[int, ...] = ()
    """Cores allocated to the job on this node (its cpuset)."""
    gpu_indices: tuple[int, ...] | None = None
    """NVML indices of the job's GPUs; None when not known."""
    detected_from: str = ""
    """How it was found, e.g. "SLURM_JOB_ID", "--job 1234 (cgroup)"."""
    filtered: bool = True
    """True when only the job's processes and GPUs are shown (False with --all)."""
    processes: tuple[WorkerProcess, ...] = ()
    """Every process of the job on this node -- with or without a GPU context --
    each with its own CPU %, parents before children (by pid within a level).
    The job's picture in CPU-only mode; GPU rows repeat some of these pids."""
    cpu_percent: float | None = None
    """Summed CPU % of ``processes`` (% of one core; 200 = two cores busy)."""
    foreign_cpu_percent: float | None = None
    """Share of the job's cores (0-100 of their capacity) used by processes
    outside the job: other jobs oversubscribing the node. None when unknown."""


@record
class ReportedFinding:
    """A finding another monitor reported, as it served it: a node's own
    ``gputop-hints export`` (its ``gputop_hints_finding`` series), read back from
    Prometheus by the ``--prometheus`` source. It has the node's host data, which the
    job-wide view does not: the *why* behind a node that is slow. The strings are the
    series' labels, from outside: shown through :func:`gputop_hints.text.visible`."""

    node: str
    rule: str
    subtype: str
    severity: str
    """"critical", "warning" or "info", as the exporter labelled it."""
    gpu: str
    """The node's own GPU number ("" for a finding about the node)."""
    pid: str
    """The process ("" for a finding about a GPU)."""
    since: float | None = None
    """When its condition began on the node (seconds since the epoch); None where the
    exporter did not say."""


IMPORTED_SOURCES = frozenset({"replay", "prometheus"})
""":attr:`Snapshot.source` values of data read back rather than sampled here."""


@record
class Snapshot:
    """Everything known at one tick."""

    timestamp: float
    """Seconds since the epoch when the tick was taken (simulated time for the demo)."""
    interval_s: float
    host: HostSample
    gpus: tuple[GpuSample, ...] = ()
    processes: tuple[GpuProcess, ...] = ()
    source: str = "live"
    """"live" (this machine), "demo", "replay" (a recording or an imported log) or
    "prometheus" (a job's GPUs read back from Prometheus: GPU series only, like an
    imported log; see :data:`IMPORTED_SOURCES`)."""

    source_detail: str = ""
    """Human note on the source, e.g. the demo scenario name."""
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpu_unavailable_reason: str | None = None
    """Why there are no GPUs (e.g. NVML could not be loaded); None when GPUs are shown."""
    sample_duration_s: float | None = None
    """How long the source took to produce this tick (its own cost)."""
    labels: tuple[str, ...] = field(default=())
    """Ground truth for simulated data: the bottlenecks the demo scenario models."""
    job: JobInfo | None = None
    """The SLURM job this view is about, when attached to one."""
    launchers: tuple[Launcher, ...] = ()
    """The launchers named by the processes' :attr:`GpuProcess.launcher_pid`."""
    pid_namespace_nested: bool | None = field(default=None, compare=False)
    """Live: whether this monitor runs in a PID namespace below the host's (a container
    without ``--pid=host``: the ``NSpid`` line of /proc/self/status has more than one
    pid), where processes of the host and of other containers are invisible -- NVML may
    not list them, or lists pids /proc does not have. None: not known, or not live.
    Recordings do not carry it (left out of equality: a recording reads back equal)."""
    node_findings: tuple[ReportedFinding, ...] = ()
    """``--prometheus``: the findings each node's own exporter reports now, worst first
    (:class:`ReportedFinding`); () elsewhere, and for a node whose exporter has none."""

    @property
    def imported(self) -> bool:
        """Read back from data kept elsewhere (a log, Prometheus), not sampled here:
        only what that data holds is known (no processes or host CPU unless it has them)."""
        return self.source in IMPORTED_SOURCES

    def gpu(self, index: int) -> GpuSample | None:
        for g in self.gpus:
            if g.index == index:
                return g
        return None

    def unseen_processes(self) -> frozenset[tuple[int, int]]:
        """Live: the GPU processes NVML lists that this host's /proc does not show --
        they run in another PID namespace (this monitor is in a container without
        ``--pid=host``, or they are in other containers) or exited just now. Imported
        logs and the demo have none."""
        if self.source != "live":
            return frozenset()
        return frozenset(
            p.key
            for p in self.processes
            if p.name is None and not p.command and p.create_time is None and p.state is None
        )


# --- dictionary / JSON form -------------------------------------------------


def _encode(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [_encode(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    """Plain-JSON form of a snapshot (tuples become lists, None stays null)."""
    encoded = _encode(snapshot)
    encoded["schema_version"] = SCHEMA_VERSION
    return dict(encoded)


def _tuple_or_none(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def snapshot_from_dict(data: Mapping[str, Any]) -> Snapshot:
    """Inverse of :func:`snapshot_to_dict`; unknown keys are ignored."""
    h = data["host"]
    la = h.get("load_average")
    host = HostSample(
        hostname=h["hostname"],
        cpu_percent_per_core=tuple(h["cpu_percent_per_core"]),
        allowed_cores=tuple(h["allowed_cores"]),
        iowait_percent=h.get("iowait_percent"),
        memory_used_bytes=h.get("memory_used_bytes"),
        memory_total_bytes=h.get("memory_total_bytes"),
        load_average=(la[0], la[1], la[2]) if la is not None else None,
    )
    gpu_keys = {f.name for f in fields(GpuSample)}
    mig_keys = {f.name for f in fields(MigInstance)}
    gpus = []
    for g in data.get("gpus", ()):
        kwargs = {k: v for k, v in g.items() if k in gpu_keys}
        kwargs["throttle_reasons"] = _tuple_or_none(g.get("throttle_reasons"))
        kwargs["implausible"] = tuple(g.get("implausible") or ())
        kwargs["sm_samples"] = tuple(
            UtilizationSample(s["timestamp"], s["percent"]) for s in g.get("sm_samples", ())
        )
        kwargs["mig_instances"] = tuple(
            MigInstance(**{k: v for k, v in m.items() if k in mig_keys})
            for m in g.get("mig_instances") or ()
        )
        gpus.append(GpuSample(**kwargs))
    proc_keys = {f.name for f in fields(GpuProcess)}
    worker_keys = {f.name for f in fields(WorkerProcess)}
    processes = []
    for p in data.get("processes", ()):
        kwargs = {k: v for k, v in p.items() if k in proc_keys}
        kwargs["workers"] = tuple(
            WorkerProcess(**{k: v for k, v in w.items() if k in worker_keys})
            for w in p.get("workers", ())
        )
        kwargs["frameworks"] = known_frameworks(p.get("frameworks"))
        mig = p.get("mig_instance")
        kwargs["mig_instance"] = None if mig is None else (int(mig[0]), int(mig[1]))
        processes.append(GpuProcess(**kwargs))
    return Snapshot(
        timestamp=data["timestamp"],
        interval_s=data["interval_s"],
        host=host,
        gpus=tuple(gpus),
        processes=tuple(processes),
        source=data.get("source", "live"),
        source_detail=data.get("source_detail", ""),
        driver_version=data.get("driver_version"),
        cuda_driver_version=data.get("cuda_driver_version"),
        gpu_unavailable_reason=data.get("gpu_unavailable_reason"),
        sample_duration_s=data.get("sample_duration_s"),
        labels=tuple(data.get("labels", ())),
        job=_job_from_dict(data.get("job")),
        launchers=_launchers_from_dict(data.get("launchers")),
        pid_namespace_nested=data.get("pid_namespace_nested"),
        node_findings=_reported_from_dict(data.get("node_findings")),
    )


def _reported_from_dict(data: Any) -> tuple[ReportedFinding, ...]:
    if not data:
        return ()
    keys = {f.name for f in fields(ReportedFinding)}
    return tuple(ReportedFinding(**{k: v for k, v in item.items() if k in keys}) for item in data)


def _launchers_from_dict(data: Any) -> tuple[Launcher, ...]:
    if not data:
        return ()
    keys = {f.name for f in fields(Launcher)}
    return tuple(Launcher(**{k: v for k, v in item.items() if k in keys}) for item in data)


def _job_from_dict(data: Mapping[str, Any] | None) -> JobInfo | None:
    if not data:
        return None
    keys = {f.name for f in fields(JobInfo)}
    kwargs = {k: v for k, v in data.items() if k in keys}
    kwargs["cpus"] = tuple(data.get("cpus", ()))
    worker_keys = {f.name for f in fields(WorkerProcess)}
    kwargs["processes"] = tuple(
        WorkerProcess(**{k: v for k, v in p.items() if k in worker_keys})
        for p in data.get("processes", ())
    )
    gpus = data.get("gpu_indices")
    kwargs["gpu_indices"] = None if gpus is None else tuple(gpus)
    return JobInfo(**kwargs)
