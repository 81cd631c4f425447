"""The live source: NVML (through nvitop's Apache-2.0 ``api`` package) plus psutil.

One :meth:`LiveSource.sample` call reads every GPU, every process holding a GPU
context, the children of those processes (DataLoader workers, usually) and the
host's per-core CPU, and returns one frozen :class:`~gputop_hints.model.Snapshot`.

What it promises:

* Unknown is ``None``: nvitop's ``NA``, NVML's NotSupported / NoPermission, a
  GPU that fell off the bus, a process that vanished mid-tick -- each leaves a
  ``None`` where the value would be, and the tick still completes.
* No NVML at all (no driver, a CPU-only CI box) is a mode, not an error: the
  source produces host-only snapshots whose ``gpu_unavailable_reason`` says
  what went wrong, unless ``require_gpu=True`` asked for a hard failure.
* Cheap: the work per tick is about fifteen NVML calls per GPU and, when any
  GPU has processes, one small ``/proc/<pid>/stat`` read per host process.
  Everything static (names, command lines, what a GPU does not support) is
  learnt once and remembered.

Only the ``nvitop.api`` package is used -- never ``nvitop.tui`` (GPL-3.0).
This module must not import Textual.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import psutil
from nvitop.api import Device, libnvml
from nvitop.api import host as nvitop_host

from gputop_hints.model import (
    CLOCK_EVENT_REASONS,
    GpuProcess,
    GpuSample,
    HostSample,
    JobInfo,
    Snapshot,
    UtilizationSample,
    WorkerProcess,
)
from gputop_hints.sources import SourceUnavailable
from gputop_hints.sources.live.slurm import (
    ForeignLoad,
    GpuId,
    JobContext,
    JobMembership,
    detect_job,
    job_exists,
)

log = logging.getLogger(__name__)

NVITOP_LIBNVML_LOGGER = "nvitop.api.libnvml"

DEMO_HINT = "Try --demo to see the monitor with simulated GPUs."

_KNOWN_REASON_BITS = 0
for _bit, _ in CLOCK_EVENT_REASONS:
    _KNOWN_REASON_BITS |= _bit

# NVML renamed "throttle reasons" to "clock event reasons" in R535; older
# drivers (and older nvidia-ml-py) only have the first name.
_CLOCK_REASON_FUNCTIONS = (
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
)

# nvitop reports PCIe throughput in KiB/s (it multiplies by 1024 when
# formatting); NVML's header says "KB/s" without saying which K. We follow
# nvitop, the library whose numbers people will compare ours with side by side,
# and 1024 is what NVML uses for its other "KB" figures. The two readings differ
# by 2.4 %, far below the noise of a throughput sampled over a 20 ms window.
PCIE_BYTES_PER_REPORTED_UNIT = 1024

# psutil's status strings (its STATUS_* constants) -> the letter ps and top show.
_STATE_LETTERS: Mapping[str, str] = {
    "running": "R",
    "sleeping": "S",
    "disk-sleep": "D",
    "stopped": "T",
    "tracing-stop": "t",
    "zombie": "Z",
    "dead": "X",
    "wake-kill": "K",
    "waking": "W",
    "idle": "I",
    "parked": "P",
    "locked": "L",
    "waiting": "W",
}

_PROCESS_GONE = (psutil.NoSuchProcess, psutil.AccessDenied)

_MISSING: Any = object()
"""Default handed to ``nvmlQuery`` so a function the driver lacks is told apart."""


def decode_clock_event_reasons(mask: int) -> tuple[str, ...]:
    """Names of the bits set in an NVML clock event reasons mask, lowest bit first.

    ``0`` (clocks running free) gives ``()``. Bits newer than this table come
    out as ``unknown_0x...`` rather than being dropped.
    """
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    rest = mask & ~_KNOWN_REASON_BITS
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"unknown_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return tuple(names)


def _known(value: Any) -> Any:
    """nvitop's ``NA`` (the string ``'N/A'``) and None both mean unknown."""
    if value is None or (isinstance(value, str) and value == "N/A"):
        return None
    return value


def _int_or_none(value: Any) -> int | None:
    value = _known(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _float_or_none(value: Any) -> float | None:
    value = _known(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@contextlib.contextmanager
def _quiet_nvitop_init() -> Iterator[None]:
    """Silence libnvml's multi-line "FATAL ERROR" log while probing for NVML.

    nvitop logs it at CRITICAL, which Python's last-resort handler prints to
    stderr -- over the terminal the TUI is about to take. We report the same
    fact ourselves, once, in ``gpu_unavailable_reason``.
    """
    logger = logging.getLogger(NVITOP_LIBNVML_LOGGER)
    was_disabled = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was_disabled


def unavailable_reason(exc: BaseException) -> str:
    """A specific, actionable sentence for why NVML could not be used."""
    if isinstance(exc, libnvml.NVMLError_LibraryNotFound):
        lib = "nvml.dll" if sys.platform == "win32" else "libnvidia-ml.so.1"
        return (
            f"NVML could not be loaded ({lib} not found): no NVIDIA driver on this machine. "
            + DEMO_HINT
        )
    if isinstance(exc, libnvml.NVMLError_DriverNotLoaded):
        return (
            "NVML is installed but the NVIDIA kernel driver is not loaded "
            "(no /dev/nvidia* devices or the module failed to load). " + DEMO_HINT
        )
    if isinstance(exc, libnvml.NVMLError_LibRmVersionMismatch):
        return (
            "NVML and the loaded NVIDIA kernel driver have different versions "
            "(the driver was upgraded without reloading the kernel module): "
            "reboot or reload the nvidia modules."
        )
    if isinstance(exc, libnvml.NVMLError_NoPermission):
        return (
            "NVML refused access to the NVIDIA devices (no permission on /dev/nvidia*; "
            "inside a container, is the GPU passed through?)."
        )
    if isinstance(exc, libnvml.NVMLError):
        return f"NVML failed to initialise ({exc}). " + DEMO_HINT
    return f"NVML could not be used ({type(exc).__name__}: {exc}). " + DEMO_HINT


# -- per-GPU state ---------------------------------------------------------------


@dataclass
class _GpuState:
    """What we remember about one GPU between ticks."""

    index: int
    device: Any
    """nvitop ``PhysicalDevice`` (None when NVML would not give a handle)."""
    handle: Any
    name: str | None
    uuid: str | None
    max_sm_clock_mhz: int | None = None
    unsupported: set[str] = field(default_factory=set)
    """NVML functions that answered NotSupported / NoPermission / FunctionNotFound:
    asked once, never again (they do not start working mid-run)."""
    last_sample_us: int | None = None
    """Timestamp of the newest buffered utilization sample already reported."""
    last_process_sample_us: int | None = None
    """Timestamp of the newest per-process utilization sample already used."""


# -- per-process state -----------------------------------------------------------


@dataclass
class _NvmlProcess:
    """NVML's view of one process on one GPU at one tick."""

    vram_bytes: int | None = None
    sm_percent: float | None = None
    memory_access_percent: float | None = None


@dataclass
class _ProcessReading:
    """One process's host-side picture at one tick (None = not known)."""

    cpu_percent: float | None = None
    rss_bytes: int | None = None
    state: str | None = None
    user: str | None = None
    name: str | None = None
    command: str = ""
    create_time: float | None = None


class _ProcStat:
    """The fields of one ``/proc/<pid>/stat`` line that a tick needs."""

    __slots__ = ("cpu_ticks", "last_cpu", "ppid", "rss_pages", "start", "state")

    def __init__(
        self,
        state: str,
        ppid: int,
        cpu_ticks: int,
        start: int,
        rss_pages: int,
        last_cpu: int | None = None,
    ) -> None:
        self.state = state
        self.ppid = ppid
        self.cpu_ticks = cpu_ticks
        """utime + stime, in clock ticks."""
        self.start = start
        """Start time in clock ticks since boot: with the pid, the process's identity."""
        self.rss_pages = rss_pages
        self.last_cpu = last_cpu
        """The core it last ran on (proc(5) field 39)."""


@dataclass
class _ProcTable:
    """Every process on the host, from one pass over ``/proc/<pid>/stat``."""

    stats: dict[int, _ProcStat]
    children: dict[int, list[int]]
    """``{ppid: [pid, ...]}``."""
    taken_at: float
    """``time.monotonic()`` when the pass was made."""


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _scan_proc() -> _ProcTable | None:
    """State, parent, CPU time, RSS and start time of every process, one read each.

    Some microseconds per process -- half what psutil's own ``/proc`` pass
    costs -- and it replaces both ``Process.children()`` per GPU process (which
    rescans ``/proc`` on every call) and the two or three psutil reads per
    watched process per tick. None where there is no Linux ``/proc``.
    """
    if not os.path.isdir("/proc/self"):
        return None
    stats: dict[int, _ProcStat] = {}
    children: dict[int, list[int]] = {}
    taken_at = time.monotonic()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{entry}/stat", os.O_RDONLY)
        except OSError:
            continue
        try:
            data = os.read(fd, 2048)
        except OSError:
            continue
        finally:
            os.close(fd)
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
        # count from the last ')'. After it, index 0 is proc(5) field 3 (state),
        # 1 the ppid, 11/12 utime/stime, 19 starttime, 21 rss (pages), 36 the
        # core it last ran on.
        fields = data[data.rfind(b")") + 2 :].split(b" ", 37)
        if len(fields) < 23:
            continue
        try:
            pid = int(entry)
            stat = _ProcStat(
                state=fields[0].decode("ascii", "replace"),
                ppid=int(fields[1]),
                cpu_ticks=int(fields[11]) + int(fields[12]),
                start=int(fields[19]),
                rss_pages=int(fields[21]),
                last_cpu=int(fields[36]) if len(fields) > 37 else None,
            )
        except ValueError:
            continue
        stats[pid] = stat
        children.setdefault(stat.ppid, []).append(pid)
    return _ProcTable(stats, children, taken_at)


class _Tracked:
    """What we keep about one pid across ticks: the last CPU reading, static fields."""

    __slots__ = (
        "at",
        "command",
        "cpu_s",
        "create_time",
        "name",
        "proc",
        "reading",
        "seen",
        "start",
        "static_level",
        "user",
    )

    def __init__(self, proc: psutil.Process | None, start: int | None) -> None:
        self.proc = proc
        """Only for the psutil path (no /proc scan); None on Linux."""
        self.start = start
        """Start time from the /proc scan (None on the psutil path)."""
        self.cpu_s: float | None = None
        self.at = 0.0
        self.name: str | None = None
        self.user: str | None = None
        self.command: str | None = None
        self.create_time: float | None = None
        self.static_level = 0
        """0: nothing read yet; 1: name; 2: name, user, command line, creation time."""
        self.seen = -1
        self.reading = _ProcessReading()


class _ProcessTracker:
    """CPU %, RSS and state for a changing set of pids, with deltas across ticks.

    CPU % is (user + system time used since the last tick) / (wall time since
    then) -- % of one core. A pid's first observation has no previous reading,
    so it reports None rather than a meaningless 0. A pid is the same process
    only while its start time is unchanged, so pid reuse starts afresh.

    On Linux the numbers come from the tick's ``/proc`` scan, which has already
    read every process's stat line; psutil is asked only once per process, for
    what does not change (name, user, command line, creation time). Elsewhere a
    psutil.Process per pid is kept across ticks and read with ``oneshot()``.
    """

    def __init__(self) -> None:
        self._tracked: dict[int, _Tracked] = {}
        self._tick = 0

    def begin_tick(self) -> None:
        self._tick += 1

    def end_tick(self) -> None:
        """Forget pids not looked at this tick (they exited or left the GPU)."""
        tick = self._tick
        for pid in [pid for pid, t in self._tracked.items() if t.seen != tick]:
            del self._tracked[pid]

    def __len__(self) -> int:
        return len(self._tracked)

    def read(self, pid: int, table: _ProcTable | None, *, details: bool) -> _ProcessReading | None:
        """The host picture of ``pid`` now; None when no such process is visible.

        ``table`` is this tick's ``/proc`` scan, or None to use psutil.
        ``details`` adds user, full command line and creation time (for GPU
        processes; workers only need name, CPU, RSS and state). Each pid is
        read once per tick, even when asked twice (a process on two GPUs).
        """
        entry = self._tracked.get(pid)
        if entry is not None and entry.seen == self._tick:
            return entry.reading
        if table is None:
            return self._read_with_psutil(pid, entry, details)
        stat = table.stats.get(pid)
        if stat is None:  # not on this host: exited, or in another PID namespace
            self._tracked.pop(pid, None)
            return None
        if entry is None or entry.start != stat.start:
            entry = self._tracked[pid] = _Tracked(None, stat.start)
        entry.seen = self._tick
        reading = _ProcessReading(
            rss_bytes=stat.rss_pages * _PAGE_SIZE,
            state=stat.state,
        )
        self._cpu(entry, reading, stat.cpu_ticks / _CLOCK_TICKS, table.taken_at)
        if entry.static_level < (2 if details else 1):
            self._read_static(entry, pid, details)
        self._fill_static(entry, reading, details)
        entry.reading = reading
        return reading

    @staticmethod
    def _cpu(entry: _Tracked, reading: _ProcessReading, cpu_s: float, now: float) -> None:
        if entry.cpu_s is not None and now > entry.at:
            reading.cpu_percent = max(0.0, (cpu_s - entry.cpu_s) / (now - entry.at) * 100.0)
        entry.cpu_s, entry.at = cpu_s, now

    @staticmethod
    def _read_static(entry: _Tracked, pid: int, details: bool) -> None:
        """Name (and with ``details`` user, command line, creation time), once per process."""
        entry.static_level = 2 if details else 1
        try:
            proc = entry.proc if entry.proc is not None else psutil.Process(pid)
        except _PROCESS_GONE:
            return
        with contextlib.suppress(*_PROCESS_GONE):
            entry.name = proc.name()
        if not details:
            return
        with contextlib.suppress(*_PROCESS_GONE):
            entry.create_time = proc.create_time()
        with contextlib.suppress(*_PROCESS_GONE):
            entry.user = proc.username()
        with contextlib.suppress(*_PROCESS_GONE):
            entry.command = " ".join(proc.cmdline())

    @staticmethod
    def _fill_static(entry: _Tracked, reading: _ProcessReading, details: bool) -> None:
        reading.name = entry.name
        if details:
            reading.user = entry.user
            reading.command = entry.command or ""
            reading.create_time = entry.create_time

    def _read_with_psutil(
        self, pid: int, entry: _Tracked | None, details: bool
    ) -> _ProcessReading | None:
        try:
            if entry is None or entry.proc is None or not entry.proc.is_running():
                entry = _Tracked(psutil.Process(pid), None)
                self._tracked[pid] = entry
        except _PROCESS_GONE:
            self._tracked.pop(pid, None)
            return None
        assert entry.proc is not None
        entry.seen = self._tick
        proc = entry.proc
        reading = _ProcessReading()
        try:
            with proc.oneshot():
                times = proc.cpu_times()
                now = time.monotonic()
                status = proc.status()
                reading.rss_bytes = proc.memory_info().rss
        except psutil.ZombieProcess:
            reading.state = "Z"
        except _PROCESS_GONE:
            pass
        else:
            reading.state = _STATE_LETTERS.get(status)
            self._cpu(entry, reading, times.user + times.system, now)
        if entry.static_level < (2 if details else 1):
            self._read_static(entry, pid, details)
        self._fill_static(entry, reading, details)
        entry.reading = reading
        return reading


# -- host CPU --------------------------------------------------------------------


class _HostCpu:
    """Per-core busy % and iowait % from deltas of ``psutil.cpu_times(percpu=True)``.

    We keep our own previous reading instead of using ``psutil.cpu_percent``,
    whose module-global state any other caller in the process would disturb.
    Busy = everything but idle and iowait, as ``psutil.cpu_percent`` counts it.
    """

    def __init__(self) -> None:
        self._last: list[Any] | None = None

    def sample(self) -> tuple[tuple[float | None, ...], float | None]:
        now = psutil.cpu_times(percpu=True)
        last, self._last = self._last, now
        if last is None or len(last) != len(now):
            return (None,) * len(now), None
        per_core: list[float | None] = []
        total_all = 0.0
        iowait_all = 0.0
        for before, after in zip(last, now, strict=True):
            total = _cpu_total(after) - _cpu_total(before)
            idle = after.idle - before.idle
            iowait = getattr(after, "iowait", 0.0) - getattr(before, "iowait", 0.0)
            if total <= 0:
                per_core.append(None)
                continue
            busy = total - idle - iowait
            per_core.append(min(100.0, max(0.0, busy / total * 100.0)))
            total_all += total
            iowait_all += max(0.0, iowait)
        iowait_percent = iowait_all / total_all * 100.0 if total_all > 0 else None
        if not hasattr(now[0], "iowait"):
            iowait_percent = None
        return tuple(per_core), iowait_percent


def _cpu_total(times: Any) -> float:
    # guest time is already counted in user/nice on Linux.
    total = float(sum(times))
    return total - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)


def _tree(table: _ProcTable) -> dict[int, tuple[int, int]]:
    """``{pid: (ppid, start)}``: what job membership needs from a /proc scan."""
    return {pid: (st.ppid, st.start) for pid, st in table.stats.items()}


def _allowed_cores() -> tuple[int, ...]:
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return tuple(range(os.cpu_count() or 1))


# -- the source ------------------------------------------------------------------


class LiveSource:
    """Snapshots of this machine's NVIDIA GPUs and the processes using them.

    ``interval_s`` is the expected time between ``sample()`` calls (recorded on
    each snapshot, and the look-back for the first batch of buffered NVML
    utilization samples). With ``require_gpu=True`` a machine where NVML is not
    usable raises :class:`SourceUnavailable` instead of running CPU-only.

    Job context (see :mod:`gputop_hints.sources.live.slurm`): inside a SLURM job (or with
    ``job="ID"``, attaching from outside it) each snapshot carries a
    :class:`~gputop_hints.model.JobInfo` in ``Snapshot.job`` -- with all of the
    job's processes on this node and their CPU %, and the share of its cores
    that processes outside it take -- ``HostSample.allowed_cores`` holds the
    job's cores, and every GPU process row says ``in_job``. By default only
    the job's GPUs and GPU processes are reported; ``all_processes=True``
    (``--all``) reports everything. ``detect_job=False`` ignores the
    environment (a plain node's behaviour even inside a job). A ``job`` that
    SLURM says is not running raises :class:`SourceUnavailable`.
    """

    kind = "live"
    simulated = False

    def __init__(
        self,
        interval_s: float = 1.0,
        *,
        require_gpu: bool = False,
        job: str | None = None,
        all_processes: bool = False,
        detect_job: bool = True,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._closed = False
        self._hostname = socket.gethostname()
        self._host_cpu = _HostCpu()
        self._processes = _ProcessTracker()
        self._gpus: list[_GpuState] = []
        self._logged_failures: set[tuple[int, str]] = set()
        self.driver_version: str | None = None
        self.cuda_driver_version: str | None = None
        self.gpu_unavailable_reason: str | None = None
        try:
            self._start_nvml()
        except Exception as exc:  # any failure to start NVML means CPU-only mode
            self._gpus = []
            self.gpu_unavailable_reason = unavailable_reason(exc)
            log.info("live source without GPUs: %s", self.gpu_unavailable_reason)
        if self.gpu_unavailable_reason is not None and require_gpu:
            raise SourceUnavailable(self.gpu_unavailable_reason)
        self.job: JobContext | None = None
        """The attached job (None on a plain node, or with ``detect_job=False``)."""
        self.all_processes = all_processes
        self._membership: JobMembership | None = None
        self._foreign: ForeignLoad | None = None
        self._job_gpus: tuple[int, ...] | None = None
        if job is not None or detect_job:
            self._attach(job, environ)

    def _attach(self, job_id: str | None, environ: Mapping[str, str] | None) -> None:
        members: frozenset[int] = frozenset()
        if job_id is not None:
            job_id = job_id.strip()
            if not job_id.isdigit() and not job_id.replace("_", "").isdigit():
                raise SourceUnavailable(f"--job {job_id!r}: not a SLURM job id")
            if job_exists(job_id, environ) is False:
                raise SourceUnavailable(
                    f"SLURM job {job_id} is not running (scontrol does not list it)."
                )
            membership = JobMembership(job_id)
            table = _scan_proc()
            if table is not None:
                members = membership.update(_tree(table))
        context = detect_job(environ, job_id=job_id, members=members)
        if context is None:
            return
        self.job = context
        self._membership = JobMembership(context.job_id)
        if context.cpus:
            self._foreign = ForeignLoad(context.cpus)
        ids = [
            GpuId(
                s.index,
                s.uuid,
                _int_or_none(self._query(s, "nvmlDeviceGetMinorNumber"))
                if s.handle is not None
                else None,
            )
            for s in self._gpus
        ]
        self._job_gpus = context.gpu_indices(ids, self._mig_parent) if ids else None
        log.info("attached to SLURM job %s (%s)", context.job_id, context.detected_from)

    @staticmethod
    def _mig_parent(mig_uuid: str) -> int | None:
        """NVML index of the GPU a ``MIG-<uuid>`` instance lives on."""
        try:
            handle = libnvml.nvmlQuery("nvmlDeviceGetHandleByUUID", mig_uuid, ignore_errors=False)
            parent = libnvml.nvmlQuery(
                "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", handle, ignore_errors=False
            )
            return _int_or_none(libnvml.nvmlQuery("nvmlDeviceGetIndex", parent))
        except libnvml.NVMLError:
            return None

    def _start_nvml(self) -> None:
        with _quiet_nvitop_init():
            count = Device.count()
        self.driver_version = _known(Device.driver_version())
        self.cuda_driver_version = _known(Device.cuda_driver_version())
        if count <= 0:
            self.gpu_unavailable_reason = (
                f"NVML works (driver {self.driver_version or 'unknown'}) but sees no GPUs: "
                "none is installed, or none is visible here (container device mapping, "
                "SLURM --gres, cgroup device rules)."
            )
            return
        for index in range(count):
            try:
                device = Device(index)
            except libnvml.NVMLError as exc:
                log.warning("GPU %d: NVML gave no handle (%s)", index, exc)
                self._gpus.append(_GpuState(index, None, None, None, None))
                continue
            handle = device.handle
            name = _known(device.name())
            if handle is None or (isinstance(name, str) and name.startswith("ERROR:")):
                name = None  # nvitop's "ERROR: GPU is Lost" placeholder is not a name
            state = _GpuState(index, device, handle, name, _known(device.uuid()))
            if handle is not None:
                state.max_sm_clock_mhz = _int_or_none(
                    self._query(state, "nvmlDeviceGetMaxClockInfo", libnvml.NVML_CLOCK_SM)
                )
            self._gpus.append(state)

    # -- Source protocol ---------------------------------------------------------

    def sample(self) -> Snapshot:
        """Take one tick (GPUs, their processes and workers, host CPU)."""
        with self._lock:
            started = time.perf_counter()
            timestamp = time.time()
            gpus: list[GpuSample] = []
            raw_processes: list[tuple[int, int, _NvmlProcess]] = []
            self._processes.begin_tick()
            if not self._closed:
                for state in self._gpus:
                    try:
                        sample, procs = self._sample_gpu(state, timestamp)
                    except Exception as exc:  # a surprise on one GPU must not blank the rest
                        self._log_gpu_failure(state, exc)
                        sample, procs = GpuSample(state.index, state.name, state.uuid), {}
                    gpus.append(sample)
                    raw_processes.extend((state.index, pid, p) for pid, p in procs.items())
            table: _ProcTable | None = None
            if raw_processes or (self._membership is not None and not self._closed):
                table = _scan_proc()
            members: frozenset[int] | None = None
            if self._membership is not None and table is not None and not self._closed:
                members = self._membership.update(_tree(table), self._name_of)
            processes = self._host_side(raw_processes, table, members)
            job: JobInfo | None = None
            if self.job is not None and not self._closed:
                gpus, processes, job = self._job_view(gpus, processes, table, members)
            self._processes.end_tick()
            host = self._sample_host()
            reason = self.gpu_unavailable_reason
            if self._closed and reason is None:
                reason = "The live source was closed."
            return Snapshot(
                timestamp=timestamp,
                interval_s=self.interval_s,
                host=host,
                gpus=tuple(gpus),
                processes=processes,
                source="live",
                source_detail=self._hostname,
                driver_version=self.driver_version,
                cuda_driver_version=self.cuda_driver_version,
                gpu_unavailable_reason=reason,
                sample_duration_s=time.perf_counter() - started,
                job=job,
            )

    def _log_gpu_failure(self, state: _GpuState, exc: Exception) -> None:
        key = (state.index, type(exc).__name__)
        if key not in self._logged_failures:  # once per GPU and kind, not every tick
            self._logged_failures.add(key)
            log.exception("GPU %d: sampling failed; its values are unknown this tick", state.index)

    def close(self) -> None:
        """Drop NVML handles and process caches.

        NVML itself is left initialised: nvitop shuts it down at exit, and other
        code in this process may still be using it.
        """
        with self._lock:
            self._closed = True
            self._gpus = []
            self._processes = _ProcessTracker()

    # -- GPUs --------------------------------------------------------------------

    def _query(self, state: _GpuState, function: str, *args: Any) -> Any:
        """One NVML call on ``state``'s GPU; None when unknown this tick.

        NotSupported, NoPermission and FunctionNotFound are remembered so the
        call is never made again for this GPU. GpuIsLost propagates: the caller
        gives up on the GPU for this tick.
        """
        if function in state.unsupported:
            return None
        try:
            value = libnvml.nvmlQuery(
                function,
                state.handle,
                *args,
                default=_MISSING,
                ignore_errors=False,
                ignore_function_not_found=True,
            )
        except (libnvml.NVMLError_NotSupported, libnvml.NVMLError_NoPermission):
            state.unsupported.add(function)
            return None
        except libnvml.NVMLError_GpuIsLost:
            raise
        except libnvml.NVMLError:
            return None
        if value is _MISSING:
            state.unsupported.add(function)
            return None
        return value

    def _sample_gpu(
        self, state: _GpuState, timestamp: float
    ) -> tuple[GpuSample, Mapping[int, _NvmlProcess]]:
        if state.handle is None:
            return GpuSample(index=state.index, name=state.name, uuid=state.uuid), {}
        try:
            # The first call doubles as the "is this GPU still there" probe.
            util = self._query(state, "nvmlDeviceGetUtilizationRates")
            mem = state.device.memory_info()  # nvitop: handles unified-memory boards
            rx = self._query(state, "nvmlDeviceGetPcieThroughput", libnvml.NVML_PCIE_UTIL_RX_BYTES)
            tx = self._query(state, "nvmlDeviceGetPcieThroughput", libnvml.NVML_PCIE_UTIL_TX_BYTES)
            link_gen = self._query(state, "nvmlDeviceGetCurrPcieLinkGeneration")
            link_width = self._query(state, "nvmlDeviceGetCurrPcieLinkWidth")
            temperature = self._query(
                state, "nvmlDeviceGetTemperature", libnvml.NVML_TEMPERATURE_GPU
            )
            power_mw = self._query(state, "nvmlDeviceGetPowerUsage")
            power_limit_mw = self._query(state, "nvmlDeviceGetPowerManagementLimit")
            sm_clock = self._query(state, "nvmlDeviceGetClockInfo", libnvml.NVML_CLOCK_SM)
            reasons = self._clock_event_reasons(state)
            sm_samples = self._sm_samples(state, timestamp)
            procs = self._gpu_processes(state, timestamp)
        except libnvml.NVMLError_GpuIsLost:
            return GpuSample(index=state.index, name=state.name, uuid=state.uuid), {}

        def scaled(kib_per_s: Any) -> float | None:
            value = _float_or_none(kib_per_s)
            return None if value is None else value * PCIE_BYTES_PER_REPORTED_UNIT

        def watts(milliwatts: Any) -> float | None:
            value = _float_or_none(milliwatts)
            return None if value is None else value / 1000.0

        sample = GpuSample(
            index=state.index,
            name=state.name,
            uuid=state.uuid,
            sm_percent=None if util is None else _float_or_none(util.gpu),
            memory_access_percent=None if util is None else _float_or_none(util.memory),
            vram_used_bytes=_int_or_none(mem.used),
            vram_total_bytes=_int_or_none(mem.total),
            pcie_rx_bytes_per_s=scaled(rx),
            pcie_tx_bytes_per_s=scaled(tx),
            pcie_generation=_int_or_none(link_gen),
            pcie_width=_int_or_none(link_width),
            temperature_c=_float_or_none(temperature),
            power_watts=watts(power_mw),
            power_limit_watts=watts(power_limit_mw),
            sm_clock_mhz=_int_or_none(sm_clock),
            max_sm_clock_mhz=state.max_sm_clock_mhz,
            throttle_reasons=reasons,
            sm_samples=sm_samples,
        )
        return sample, procs

    def _clock_event_reasons(self, state: _GpuState) -> tuple[str, ...] | None:
        """Decoded clock event reasons; falls back to the pre-R535 throttle-reasons call."""
        for function in _CLOCK_REASON_FUNCTIONS:
            if function in state.unsupported:
                continue
            mask = self._query(state, function)
            if function in state.unsupported:
                continue  # the driver lacks it: try the older name
            mask = _int_or_none(mask)
            return None if mask is None else decode_clock_event_reasons(mask)
        return None

    def _sm_samples(self, state: _GpuState, timestamp: float) -> tuple[UtilizationSample, ...]:
        """SM % readings the driver buffered since the last tick, each reported once.

        NVML answers NotFound when nothing was recorded after the given
        timestamp -- that is "no new samples", not "unsupported". The first
        call looks back one interval rather than returning the whole buffer.
        """
        function = "nvmlDeviceGetSamples"
        if function in state.unsupported:
            return ()
        since = state.last_sample_us
        if since is None:
            since = int((timestamp - self.interval_s) * 1e6)
        try:
            result = libnvml.nvmlQuery(
                function,
                state.handle,
                libnvml.NVML_GPU_UTILIZATION_SAMPLES,
                since,
                default=_MISSING,
                ignore_errors=False,
                ignore_function_not_found=True,
            )
        except libnvml.NVMLError_NotFound:
            state.last_sample_us = since
            return ()
        except (libnvml.NVMLError_NotSupported, libnvml.NVMLError_NoPermission):
            state.unsupported.add(function)
            return ()
        except libnvml.NVMLError_GpuIsLost:
            raise
        except libnvml.NVMLError:
            return ()
        if result is _MISSING:
            state.unsupported.add(function)
            return ()
        value_type, raw_samples = result
        newest = since
        out: list[UtilizationSample] = []
        for raw in raw_samples:
            ts = int(raw.timeStamp)
            if ts <= since:
                continue
            value = _sample_value(raw.sampleValue, value_type)
            if value is None:
                continue
            out.append(UtilizationSample(ts / 1e6, value))
            newest = max(newest, ts)
        state.last_sample_us = newest
        out.sort(key=lambda s: s.timestamp)
        return tuple(out)

    def _gpu_processes(self, state: _GpuState, timestamp: float) -> dict[int, _NvmlProcess]:
        """Processes with a context on the GPU, with VRAM and per-process utilization.

        Read straight from NVML (through nvitop's ``nvmlQuery``) rather than
        with nvitop's ``Device.processes()``: that builds psutil-backed objects
        for every pid on every call -- about 0.1 ms per process, more than our
        whole 5 ms budget at 64 processes -- and we measure the host side anyway.

        It also settles what nvitop leaves ambiguous: nvitop writes 0 for a pid
        that has no utilization sample, the same number a sample of "idle"
        gives. Here a pid without a sample since the last tick has
        ``sm_percent=None`` (unknown), and a real sample of 0 stays 0.
        """
        procs: dict[int, _NvmlProcess] = {}
        for function in (
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetGraphicsRunningProcesses",
        ):
            for info in self._query(state, function) or ():
                vram = _int_or_none(info.usedGpuMemory)  # None under WDDM and MIG
                known = procs.get(info.pid)
                if known is None:
                    procs[info.pid] = _NvmlProcess(vram_bytes=vram)
                elif vram is not None:
                    # Compute and graphics contexts of one pid: NVML reports the
                    # pid's memory on both lists, so take it once.
                    known.vram_bytes = max(vram, known.vram_bytes or 0)
        if procs:
            self._process_utilization(state, timestamp, procs)
        return procs

    def _process_utilization(
        self, state: _GpuState, timestamp: float, procs: Mapping[int, _NvmlProcess]
    ) -> None:
        """Fill SM % / memory-access % from the per-process samples since the last tick.

        A pid with several samples in the interval gets their mean. NotFound is
        NVML's "no sample recorded since then": everyone stays unknown.
        """
        function = "nvmlDeviceGetProcessUtilization"
        if function in state.unsupported:
            return
        since = state.last_process_sample_us
        if since is None:
            since = int((timestamp - self.interval_s) * 1e6)
        try:
            samples = libnvml.nvmlQuery(
                function,
                state.handle,
                since,
                default=_MISSING,
                ignore_errors=False,
                ignore_function_not_found=True,
            )
        except libnvml.NVMLError_NotFound:
            return
        except (libnvml.NVMLError_NotSupported, libnvml.NVMLError_NoPermission):
            state.unsupported.add(function)
            return
        except libnvml.NVMLError_GpuIsLost:
            raise
        except libnvml.NVMLError:
            return
        if samples is _MISSING:
            state.unsupported.add(function)
            return
        sums: dict[int, list[float]] = {}
        newest = since
        for sample in samples:
            ts = int(sample.timeStamp)
            if ts <= since or sample.pid not in procs:
                continue
            newest = max(newest, ts)
            acc = sums.setdefault(sample.pid, [0.0, 0.0, 0.0])
            acc[0] += float(sample.smUtil)
            acc[1] += float(sample.memUtil)
            acc[2] += 1.0
        state.last_process_sample_us = newest
        for pid, (sm, mem, n) in sums.items():
            procs[pid].sm_percent = sm / n
            procs[pid].memory_access_percent = mem / n

    # -- processes ---------------------------------------------------------------

    def _host_side(
        self,
        raw: list[tuple[int, int, _NvmlProcess]],
        table: _ProcTable | None,
        members: frozenset[int] | None,
    ) -> tuple[GpuProcess, ...]:
        """GpuProcess rows: NVML's view of each (gpu, pid) plus the host's view of the pid.

        A pid NVML lists but the host cannot see (it just exited, or it lives in
        another PID namespace, as with GPU jobs in other containers) keeps its
        row -- it does hold VRAM -- with None for every host-side field.
        """
        tracker = self._processes
        rows: list[GpuProcess] = []
        gpu_pids = {pid for _, pid, _ in raw}
        children: Mapping[int, list[int]] = {}
        if table is not None:
            children = table.children
        elif raw:
            with contextlib.suppress(psutil.Error):
                children = nvitop_host.reverse_ppid_map()
        workers_of: dict[int, tuple[WorkerProcess, ...]] = {}
        for gpu_index, pid, nvml in sorted(raw, key=lambda r: (r[0], r[1])):
            reading = tracker.read(pid, table, details=True)
            if pid not in workers_of:
                workers_of[pid] = (
                    self._workers(pid, children, table, gpu_pids) if reading is not None else ()
                )
            in_job: bool | None = None
            if reading is None:
                reading = _ProcessReading()  # invisible here: membership unknown
            elif members is not None:
                in_job = pid in members
            rows.append(
                GpuProcess(
                    pid=pid,
                    gpu_index=gpu_index,
                    vram_bytes=nvml.vram_bytes,
                    sm_percent=nvml.sm_percent,
                    memory_access_percent=nvml.memory_access_percent,
                    cpu_percent=reading.cpu_percent,
                    workers=workers_of[pid],
                    rss_bytes=reading.rss_bytes,
                    state=reading.state,
                    user=reading.user,
                    name=reading.name,
                    command=reading.command,
                    create_time=reading.create_time,
                    in_job=in_job,
                )
            )
        return tuple(rows)

    def _workers(
        self,
        pid: int,
        children: Mapping[int, list[int]],
        table: _ProcTable | None,
        gpu_pids: set[int],
    ) -> tuple[WorkerProcess, ...]:
        """Descendants of ``pid``, each measured on its own.

        A descendant that holds a GPU context itself (a rank started by
        ``mp.spawn``) is a peer, not a loader worker: it and its subtree are
        reported under its own row instead.
        """
        out: list[WorkerProcess] = []
        stack = sorted(children.get(pid, ()), reverse=True)
        seen = {pid}
        while stack:
            child = stack.pop()
            if child in seen or child in gpu_pids:
                continue
            seen.add(child)
            reading = self._processes.read(child, table, details=False)
            if reading is None:
                continue
            out.append(
                WorkerProcess(
                    pid=child,
                    cpu_percent=reading.cpu_percent,
                    rss_bytes=reading.rss_bytes,
                    state=reading.state,
                    name=reading.name,
                )
            )
            stack.extend(sorted(children.get(child, ()), reverse=True))
        return tuple(out)

    # -- job ---------------------------------------------------------------------

    def _name_of(self, pid: int) -> str | None:
        """Process name (comm), for leaving SLURM's own slurmstepd out of the job."""
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
                return f.read().strip()
        except OSError:
            return None

    def _job_view(
        self,
        gpus: list[GpuSample],
        processes: tuple[GpuProcess, ...],
        table: _ProcTable | None,
        members: frozenset[int] | None,
    ) -> tuple[list[GpuSample], tuple[GpuProcess, ...], JobInfo]:
        """Filter to the job (unless ``all_processes``) and describe it for this tick."""
        assert self.job is not None
        job_gpus: set[int] | None = None if self._job_gpus is None else set(self._job_gpus)
        observed = {p.gpu_index for p in processes if p.in_job}
        if job_gpus is not None:
            job_gpus |= observed
        filtered = not self.all_processes
        if filtered:
            processes = tuple(p for p in processes if p.in_job)
            if job_gpus is not None:
                gpus = [g for g in gpus if g.index in job_gpus]
        rows: tuple[WorkerProcess, ...] = ()
        total: float | None = None
        foreign: float | None = None
        if table is not None and members is not None:
            rows = self._job_processes(table, members)
            known = [r.cpu_percent for r in rows if r.cpu_percent is not None]
            total = sum(known) if known else None
            if self._foreign is not None:
                foreign = self._foreign.update(
                    (
                        (pid, st.start, st.cpu_ticks / _CLOCK_TICKS, st.last_cpu, st.ppid)
                        for pid, st in table.stats.items()
                    ),
                    members,
                    table.taken_at,
                )
        info = self.job.info(
            gpu_indices=None if job_gpus is None else tuple(sorted(job_gpus)),
            filtered=filtered,
            processes=rows,
            cpu_percent=total,
            foreign_cpu_percent=foreign,
        )
        return gpus, processes, info

    def _job_processes(
        self, table: _ProcTable, members: frozenset[int]
    ) -> tuple[WorkerProcess, ...]:
        """Every member with its CPU %, parents before children."""
        out: list[WorkerProcess] = []
        roots = sorted(p for p in members if table.stats[p].ppid not in members)
        stack = list(reversed(roots))
        seen: set[int] = set()
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            reading = self._processes.read(pid, table, details=False)
            if reading is not None:
                out.append(
                    WorkerProcess(
                        pid=pid,
                        cpu_percent=reading.cpu_percent,
                        rss_bytes=reading.rss_bytes,
                        state=reading.state,
                        name=reading.name,
                    )
                )
            kids = [c for c in table.children.get(pid, ()) if c in members]
            stack.extend(sorted(kids, reverse=True))
        return tuple(out)

    # -- host --------------------------------------------------------------------

    def _sample_host(self) -> HostSample:
        per_core, iowait = self._host_cpu.sample()
        memory_used: int | None = None
        memory_total: int | None = None
        with contextlib.suppress(OSError, RuntimeError):
            vm = psutil.virtual_memory()
            memory_total = vm.total
            # "used" as people mean it: what applications hold and cannot give back.
            memory_used = vm.total - vm.available
        load: tuple[float, float, float] | None = None
        with contextlib.suppress(OSError, AttributeError):
            load = os.getloadavg()
        allowed = self.job.cpus if self.job is not None and self.job.cpus else _allowed_cores()
        return HostSample(
            hostname=self._hostname,
            cpu_percent_per_core=per_core,
            allowed_cores=allowed,
            iowait_percent=iowait,
            memory_used_bytes=memory_used,
            memory_total_bytes=memory_total,
            load_average=load,
        )

    # -- introspection for tests and benchmarks ----------------------------------

    @property
    def tracked_pids(self) -> int:
        """How many pids the CPU-delta cache holds (it must not grow without bound)."""
        return len(self._processes)


def _sample_value(value: Any, value_type: int) -> float | None:
    """Read an ``nvmlValue_t`` union by its declared type."""
    attribute = {
        0: "dVal",
        1: "uiVal",
        2: "ulVal",
        3: "ullVal",
        4: "sllVal",
        5: "siVal",
        6: "usVal",
    }.get(value_type)
    if attribute is None:
        return None
    return float(getattr(value, attribute))
