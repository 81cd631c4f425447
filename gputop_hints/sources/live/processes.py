"""GPU-process tracking: the host's view of every process that holds a GPU
context, of its descendants (DataLoader workers, usually) and of a job's
processes -- CPU %, RSS, state, name, user and command line.

CPU % needs two readings, so a :class:`ProcessTracker` lives across ticks and
remembers each pid's last CPU time. On Linux the numbers come from the tick's
:func:`~gputop_hints.sources.live.procfs.scan_proc` pass; elsewhere from
psutil. The NVML side of a GPU process (VRAM, per-process SM %) comes in from
:mod:`~gputop_hints.sources.live.nvml` as plain data.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psutil
from nvitop.api import host as nvitop_host

from gputop_hints.model import WORKER_COMMAND_MAX, GpuProcess, WorkerProcess
from gputop_hints.sources.live.procfs import CLOCK_TICKS, PAGE_SIZE, ProcTable
from gputop_hints.text import pattern

if TYPE_CHECKING:
    from gputop_hints.sources.live.nvml_processes import NvmlProcess

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


@dataclass
class ProcessReading:
    """One process's host-side picture at one tick (None = not known)."""

    cpu_percent: float | None = None
    rss_bytes: int | None = None
    state: str | None = None
    user: str | None = None
    name: str | None = None
    command: str = ""
    create_time: float | None = None
    frameworks: tuple[str, ...] = ()
    container: str | None = None
    ppid: int | None = None


_POD_UID = r"([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
_KUBEPODS = r"kubepods[^\n]*?pod" + _POD_UID
"""A Kubernetes pod's cgroup: ``/kubepods/burstable/pod<uid>/<id>`` (cgroupfs driver)
or ``kubepods-burstable-pod<uid with _>.slice`` (systemd driver); guaranteed pods
have no QoS level in the path."""

_CONTAINER_PATTERNS: tuple[tuple[str, str, str], ...] = (
    ("docker", r"(?:/docker/|docker-)([0-9a-f]{12})[0-9a-f]*", "docker {}"),
    ("libpod-", r"libpod-(?:conmon-)?([0-9a-f]{12})[0-9a-f]*", "podman {}"),
    ("cri-containerd-", r"cri-containerd-([0-9a-f]{12})[0-9a-f]*", "containerd {}"),
    ("/job_", r"/job_(\d+)(?=/|\n|$)", "slurm job {}"),
    ("lxc", r"(?:/lxc/|lxc\.payload\.)([\w.-]{1,40})", "lxc {}"),
)
"""cgroup paths that name a container runtime or a batch job: Docker and containerd
(cgroupfs ``/docker/<id>`` and systemd ``docker-<id>.scope``), Podman
(``libpod-<id>.scope``), SLURM's cgroup plugin (``/slurm/uid_N/job_N/step_N``,
``slurmstepd.scope/job_N``) and LXC. Kubernetes (:data:`_KUBEPODS`) is tried first: a
pod's containers are also ``cri-containerd-``/``docker-`` scopes. The shapes, and
where each comes from, are in tests/fixtures/cgroup/README.md. Each comes with a text every
match holds: a cgroup without it is passed over without compiling the expression (most
processes are in none of these)."""

_K8S_NAME = r"[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?"
"""A Kubernetes object name (DNS subdomain, RFC 1123); a namespace is a shorter label."""

_ENVIRON_BYTES = 16384
"""How much of /proc/PID/environ is read, once per pid: the runtime puts HOSTNAME first
and the pod spec's variables (POD_NAMESPACE) before the services' many."""

SERVICE_ACCOUNT_NAMESPACE = "var/run/secrets/kubernetes.io/serviceaccount/namespace"
"""The namespace file Kubernetes mounts into every container with a service account
token (the default), relative to the container's root."""


def pod_uid_of(cgroup_text: str) -> str | None:
    """The uid of the Kubernetes pod a ``/proc/PID/cgroup`` text places its process in
    (dashed, as ``kubectl get pod -o jsonpath={.metadata.uid}`` prints it); None if none."""
    if "kubepods" not in cgroup_text:
        return None
    m = pattern(_KUBEPODS).search(cgroup_text)
    return m.group(1).replace("_", "-") if m else None


def container_of(
    cgroup_text: str, pod_name: str | None = None, namespace: str | None = None
) -> str | None:
    """A short name for the container or job a ``/proc/PID/cgroup`` text places its
    process in; None when it names none (a plain login session or service). A
    Kubernetes pod is ``pod <namespace>/<name>`` with the names given (read from the
    process, :func:`pod_names`), else ``pod <name>``, else ``pod <uid>``."""
    uid = pod_uid_of(cgroup_text)
    if uid is not None:
        name = pod_name if pod_name and pattern(_K8S_NAME).fullmatch(pod_name) else None
        if name is None:
            return f"pod {uid}"
        if namespace and len(namespace) <= 63 and pattern(_K8S_NAME).fullmatch(namespace):
            return f"pod {namespace}/{name}"
        return f"pod {name}"
    for needed, source, label in _CONTAINER_PATTERNS:
        m = pattern(source).search(cgroup_text) if needed in cgroup_text else None
        if m:
            return label.format(m.group(1))
    return None


def environ_names(environ: bytes) -> tuple[str | None, str | None]:
    """The pod name and namespace a process's environment gives: ``HOSTNAME`` (the pod
    name, unless the pod spec sets ``hostname``) and ``POD_NAMESPACE`` (the downward
    API's usual name for ``metadata.namespace``). A variable cut by the read bound is
    not trusted."""
    name = namespace = None
    entries = environ.split(b"\0")
    if len(environ) >= _ENVIRON_BYTES:
        entries = entries[:-1]  # the last one may be cut short
    for entry in entries:
        key, sep, value = entry.partition(b"=")
        if not sep:
            continue
        if key == b"HOSTNAME" and name is None:
            name = value.decode("utf-8", "replace")
        elif key == b"POD_NAMESPACE" and namespace is None:
            namespace = value.decode("utf-8", "replace")
    return name, namespace


def pod_names(pid: int, proc_root: str = "/proc") -> tuple[str | None, str | None]:
    """The pod name and namespace of a process in a Kubernetes pod, read without asking
    any daemon: its environment (readable by its user and root), and the namespace file
    of the service account mounted into its root when the environment has none.
    (None, None) where neither can be read."""
    try:
        with open(f"{proc_root}/{pid}/environ", "rb") as f:
            name, namespace = environ_names(f.read(_ENVIRON_BYTES))
    except OSError:
        name = namespace = None
    if name is not None and namespace is None:
        try:
            with open(f"{proc_root}/{pid}/root/{SERVICE_ACCOUNT_NAMESPACE}", "rb") as f:
                namespace = f.read(64).decode("utf-8", "replace").strip() or None
        except OSError:
            pass
    return name, namespace


def cgroup_container(pid: int, proc_root: str = "/proc") -> str | None:
    """:func:`container_of` for a live pid, with its pod's names where the process
    shows them; None when its cgroup cannot be read. Called once per pid."""
    try:
        with open(f"{proc_root}/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
            text = f.read(16384)
    except OSError:
        return None
    if pod_uid_of(text) is None:
        return container_of(text)
    return container_of(text, *pod_names(pid, proc_root))


_FRAMEWORK_LIBRARIES: tuple[tuple[bytes, str], ...] = (
    (b"xla_extension", "jax"),  # jaxlib's XLA client (jaxlib/xla_extension.so)
    (b"jax_cuda", "jax"),  # the jax-cuda12-plugin's PJRT plugin
    (b"libtensorflow_framework", "tensorflow"),
    (b"_pywrap_tensorflow_internal", "tensorflow"),
    (b"libtorch_cuda", "torch"),
)
"""Shared objects that name the framework a process runs: by the time NVML lists a
process it has a CUDA context, which the framework's own CUDA library created."""


def mapped_frameworks(pid: int) -> tuple[str, ...]:
    """The ML frameworks whose libraries ``pid`` has mapped, from /proc/PID/maps; () when
    none, or when the file cannot be read (another user's process: ptrace rules)."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            maps = f.read()
    except OSError:
        return ()
    return tuple(sorted({name for lib, name in _FRAMEWORK_LIBRARIES if lib in maps}))


class _Tracked:
    """What we keep about one pid across ticks: the last CPU reading, static fields."""

    __slots__ = (
        "at",
        "command",
        "container",
        "cpu_s",
        "create_time",
        "frameworks",
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
        self.frameworks: tuple[str, ...] = ()
        self.container: str | None = None
        self.static_level = 0
        """0: nothing read yet; 1: name; 2: name, user, command line, creation time."""
        self.seen = -1
        self.reading = ProcessReading()


class ProcessTracker:
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
        """Start a tick: each pid is read at most once until the next one."""
        self._tick += 1

    def end_tick(self) -> None:
        """Forget pids not looked at this tick (they exited or left the GPU)."""
        tick = self._tick
        for pid in [pid for pid, t in self._tracked.items() if t.seen != tick]:
            del self._tracked[pid]

    def __len__(self) -> int:
        """How many pids are remembered (it must not grow without bound)."""
        return len(self._tracked)

    def read(self, pid: int, table: ProcTable | None, *, details: bool) -> ProcessReading | None:
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
        reading = ProcessReading(
            rss_bytes=stat.rss_pages * PAGE_SIZE,
            state=stat.state,
            ppid=stat.ppid,
        )
        self._cpu(entry, reading, stat.cpu_ticks / CLOCK_TICKS, table.taken_at)
        if entry.static_level < (2 if details else 1):
            self._read_static(entry, pid, details)
        self._fill_static(entry, reading, details)
        entry.reading = reading
        return reading

    @staticmethod
    def _cpu(entry: _Tracked, reading: ProcessReading, cpu_s: float, now: float) -> None:
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
        with contextlib.suppress(*_PROCESS_GONE):
            entry.command = " ".join(proc.cmdline())  # once per pid, workers' too
        if not details:
            return
        with contextlib.suppress(*_PROCESS_GONE):
            entry.create_time = proc.create_time()
        with contextlib.suppress(*_PROCESS_GONE):
            entry.user = proc.username()
        entry.frameworks = mapped_frameworks(pid)  # once per GPU process
        entry.container = cgroup_container(pid)

    @staticmethod
    def _fill_static(entry: _Tracked, reading: ProcessReading, details: bool) -> None:
        reading.name = entry.name
        reading.command = entry.command or ""
        if details:
            reading.user = entry.user
            reading.create_time = entry.create_time
            reading.frameworks = entry.frameworks
            reading.container = entry.container

    def _read_with_psutil(
        self, pid: int, entry: _Tracked | None, details: bool
    ) -> ProcessReading | None:
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
        reading = ProcessReading()
        try:
            with proc.oneshot():
                times = proc.cpu_times()
                now = time.monotonic()
                status = proc.status()
                reading.ppid = proc.ppid()
                reading.rss_bytes = proc.memory_info().rss
        except psutil.ZombieProcess:
            reading.state = "Z"
            with contextlib.suppress(psutil.Error):
                reading.ppid = proc.ppid()
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


# -- rows for the snapshot -------------------------------------------------------


def gpu_process_rows(
    tracker: ProcessTracker,
    raw: list[tuple[int, int, NvmlProcess]],
    table: ProcTable | None,
    members: frozenset[int] | None,
) -> tuple[GpuProcess, ...]:
    """GpuProcess rows: NVML's view of each (gpu, pid) plus the host's view of the pid.

    ``raw`` is ``(gpu index, pid, NVML's view)`` for every process NVML
    listed this tick; ``members`` the job's pids when a job is followed.
    A pid NVML lists but the host cannot see (it just exited, or it lives in
    another PID namespace, as with GPU jobs in other containers) keeps its
    row -- it does hold VRAM -- with None for every host-side field.
    """
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
                _workers(tracker, pid, children, table, gpu_pids) if reading is not None else ()
            )
        in_job: bool | None = None
        if reading is None:
            reading = ProcessReading()  # invisible here: membership unknown
        elif members is not None:
            in_job = pid in members
        parent_name = parent_state = None
        if reading.state in ("Z", "X") and reading.ppid is not None:
            parent_name, parent_state = _parent_of_defunct(reading.ppid, table)
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
                frameworks=reading.frameworks,
                container=reading.container,
                in_job=in_job,
                mig_instance=nvml.mig_instance,
                parent_pid=reading.ppid,
                parent_name=parent_name,
                parent_state=parent_state,
            )
        )
    return tuple(rows)


def _parent_of_defunct(ppid: int, table: ProcTable | None) -> tuple[str | None, str | None]:
    """Name and state of the parent of a zombie GPU process: the process that has not
    reaped it (``wait()``), to be signalled or ended. Read only for zombies (rare), so
    the cost of a psutil call per tick stays off the common path."""
    state: str | None = None
    stat = table.stats.get(ppid) if table is not None else None
    if stat is not None:
        state = stat.state
    try:
        proc = psutil.Process(ppid)
        name = proc.name()
        if state is None:
            state = _STATE_LETTERS.get(proc.status())
    except _PROCESS_GONE:
        return None, state
    return name, state


def _workers(
    tracker: ProcessTracker,
    pid: int,
    children: Mapping[int, list[int]],
    table: ProcTable | None,
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
        reading = tracker.read(child, table, details=False)
        if reading is None:
            continue
        out.append(
            WorkerProcess(
                pid=child,
                cpu_percent=reading.cpu_percent,
                rss_bytes=reading.rss_bytes,
                state=reading.state,
                name=reading.name,
                command=reading.command[:WORKER_COMMAND_MAX] or None,
            )
        )
        stack.extend(sorted(children.get(child, ()), reverse=True))
    return tuple(out)


def job_process_rows(
    tracker: ProcessTracker, table: ProcTable, members: frozenset[int]
) -> tuple[WorkerProcess, ...]:
    """Every member of the job with its CPU %, parents before children."""
    out: list[WorkerProcess] = []
    roots = sorted(p for p in members if table.stats[p].ppid not in members)
    stack = list(reversed(roots))
    seen: set[int] = set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        reading = tracker.read(pid, table, details=False)
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
