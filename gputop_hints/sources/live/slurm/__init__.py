"""Job context: which batch job the monitor is about, and what that job was given.

On a shared SLURM node people attach with ``srun --jobid=<id> --overlap --pty
gputop-hints``; the monitor must then show *their* job -- its GPUs, its cores,
its processes -- and the hints must reason about the cores the job was
allocated, not the whole machine. This module finds all of that, without
Textual and without NVML (GPU identifiers come in as plain data):

* :func:`detect_job` -- the job from the environment (``SLURM_JOB_ID`` ...) or
  from ``--job ID`` given outside it, with its cores and GPUs.
* :class:`JobMembership` -- which pids belong to the job: the cgroup path
  naming ``job_<id>``, ``SLURM_JOB_ID`` in a readable ``/proc/<pid>/environ``,
  or descent from a member; membership is learnt once per process.
* :class:`ForeignLoad` -- how much of the job's cores processes *outside* the
  job take (other jobs oversubscribing the node, a stray process on a login
  node), from ``/proc/<pid>/stat``'s last-CPU field and CPU-time deltas.
* Parsers for the pieces: cpuset lists, ``SLURM_JOB_CPUS_PER_NODE``, cgroup v1
  and v2 files, ``CUDA_VISIBLE_DEVICES`` (indices, UUIDs, MIG ids), ``scontrol``.

Every reader takes its roots (``/proc``, ``/sys/fs/cgroup``) and environment as
arguments so tests can point them at fixture files.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gputop_hints.model import JobInfo, WorkerProcess

PROC = "/proc"
CGROUP_ROOT = "/sys/fs/cgroup"

SCONTROL_TIMEOUT_S = 5.0

_JOB_IN_CGROUP = re.compile(r"(?:^|/)job_(\d+)(?=/|$)")
_STEP_IN_CGROUP = re.compile(r"(?:^|/)step_([^/]+)(?=/|$)")

# Processes that run in a job's cgroup but are SLURM's, not the user's.
INFRASTRUCTURE_NAMES = frozenset({"slurmstepd", "sleep_forever"})


# -- small parsers -----------------------------------------------------------------------


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """A Linux cpuset list (``0-3,8,10-11``, as in ``cpuset.cpus``) as sorted core ids.

    Whitespace and an empty string (no cores) are accepted; anything else that
    is not a list raises :class:`ValueError`.
    """
    cores: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        stride = 1
        if ":" in part:  # "0-7:2" (cpuset's stride form, rare)
            part, _, step = part.partition(":")
            stride = int(step)
            if stride <= 0:
                raise ValueError(f"bad stride in cpu list: {text!r}")
        if "-" in part:
            low_text, _, high_text = part.partition("-")
            low, high = int(low_text), int(high_text)
            if high < low:
                raise ValueError(f"bad range in cpu list: {text!r}")
            cores.update(range(low, high + 1, stride))
        else:
            cores.add(int(part))
    if any(c < 0 for c in cores):
        raise ValueError(f"negative core in cpu list: {text!r}")
    return tuple(sorted(cores))


def format_cpu_list(cores: Iterable[int]) -> str:
    """The inverse of :func:`parse_cpu_list`: ``(0, 1, 2, 3, 8)`` -> ``"0-3,8"``."""
    ordered = sorted(set(cores))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_cpus_per_node(text: str) -> tuple[int, ...]:
    """``SLURM_JOB_CPUS_PER_NODE`` / ``SLURM_TASKS_PER_NODE``: ``"72(x2),36"`` -> (72, 72, 36).

    One entry per node of the job, in ``SLURM_JOB_NODELIST`` order.
    """
    counts: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part)
        if match is None:
            raise ValueError(f"not a SLURM per-node count: {text!r}")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return tuple(counts)


def parse_gpu_ids(text: str) -> tuple[int, ...] | None:
    """``SLURM_JOB_GPUS`` / ``SLURM_STEP_GPUS`` (``"0,1"``, ranges allowed); None if not numbers."""
    try:
        return tuple(dict.fromkeys(parse_cpu_list(text)))
    except ValueError:
        return None


# -- cgroups -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CgroupEntry:
    """One line of ``/proc/<pid>/cgroup``: ``hierarchy-id:controllers:path``."""

    hierarchy: str
    controllers: tuple[str, ...]
    """Empty for the cgroup v2 unified hierarchy (``0::/path``)."""
    path: str


def parse_proc_cgroup(text: str) -> tuple[CgroupEntry, ...]:
    """The lines of a ``/proc/<pid>/cgroup`` file (v1, v2 or hybrid)."""
    entries = []
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        names = tuple(c for c in controllers.split(",") if c)
        entries.append(CgroupEntry(hierarchy, names, path))
    return tuple(entries)


def job_from_cgroup(text: str) -> tuple[str | None, str | None]:
    """``(job id, step)`` named by the cgroup paths in ``text``; ``(None, None)`` if none.

    Matches SLURM's layouts: v1 ``/slurm/uid_1000/job_42/step_0/task_0`` and v2
    ``/system.slice/<node>_slurmstepd.scope/job_42/step_batch/user/task_0``.
    """
    for entry in parse_proc_cgroup(text):
        match = _JOB_IN_CGROUP.search(entry.path)
        if match:
            step = _STEP_IN_CGROUP.search(entry.path, match.end())
            return match.group(1), (step.group(1) if step else None)
    return None, None


def _read_text(path: str | Path) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_proc_cgroup(pid: int | str = "self", proc: str = PROC) -> str | None:
    return _read_text(f"{proc}/{pid}/cgroup")


def cgroup_cpuset(
    cgroup_text: str,
    *,
    root: str = CGROUP_ROOT,
    job_id: str | None = None,
) -> tuple[tuple[int, ...], str] | None:
    """The cores of the cpuset cgroup a process is in: ``(cores, file read)``, or None.

    ``cgroup_text`` is the process's ``/proc/<pid>/cgroup``. cgroup v1 reads
    ``<root>/cpuset/<path>/cpuset.effective_cpus`` (then ``cpuset.cpus``), v2
    ``<root>/<path>/cpuset.cpus.effective`` (then ``cpuset.cpus``), walking up
    to the nearest ancestor that has the file. With ``job_id`` the path is cut
    at ``job_<id>`` -- the job's own allocation rather than one step's -- and a
    path that does not name that job gives None: a node-wide cpuset says
    nothing about the job.
    """
    entries = parse_proc_cgroup(cgroup_text)
    v1 = [e for e in entries if "cpuset" in e.controllers]
    v2 = [e for e in entries if e.hierarchy == "0" and not e.controllers]
    candidates: list[tuple[str, str, tuple[str, ...]]] = []
    for e in v1:
        candidates.append(
            (os.path.join(root, "cpuset"), e.path, ("cpuset.effective_cpus", "cpuset.cpus"))
        )
        candidates.append(
            (os.path.join(root, "cpuset,cpu"), e.path, ("cpuset.effective_cpus", "cpuset.cpus"))
        )
    candidates.extend((root, e.path, ("cpuset.cpus.effective", "cpuset.cpus")) for e in v2)
    for base, path, names in candidates:
        if job_id is not None:
            match = re.search(rf"(?:^|/)job_{re.escape(job_id)}(?=/|$)", path)
            if match is None:
                continue
            path = path[: match.end()]
        rel = path.strip("/")
        while True:
            directory = os.path.join(base, rel) if rel else base
            for name in names:
                file = os.path.join(directory, name)
                text = _read_text(file)
                if text is None or not text.strip():
                    continue
                try:
                    cores = parse_cpu_list(text)
                except ValueError:
                    continue
                if cores:
                    return cores, file
            # Walk up to the nearest cgroup that has the file -- but never above
            # the job's own directory: a parent's cpuset is not the job's.
            if not rel or job_id is not None:
                break
            rel = os.path.dirname(rel)
    return None


# -- /proc environ -------------------------------------------------------------------------


def read_environ(pid: int | str, proc: str = PROC) -> dict[str, str] | None:
    """A process's environment at exec time; None when unreadable (another user's, gone)."""
    try:
        with open(f"{proc}/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return None
    env: dict[str, str] = {}
    for item in data.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def environ_job_id(pid: int | str, proc: str = PROC) -> str | bool | None:
    """``SLURM_JOB_ID`` in ``/proc/<pid>/environ``.

    The id; None when the process has none; False when the file is unreadable
    (another user's process, or it is gone).
    """
    try:
        with open(f"{proc}/{pid}/environ", "rb") as f:
            data = b"\0" + f.read()
    except OSError:
        return False
    for key in (b"\0SLURM_JOB_ID=", b"\0SLURM_JOBID="):
        at = data.find(key)
        if at < 0:
            continue
        start = at + len(key)
        end = data.find(b"\0", start)
        return data[start : end if end >= 0 else len(data)].decode("ascii", "replace")
    return None


# -- CUDA_VISIBLE_DEVICES ------------------------------------------------------------------


@dataclass(frozen=True)
class GpuId:
    """What we know about one NVML device to map identifiers onto it."""

    index: int
    uuid: str | None = None
    minor_number: int | None = None


def cuda_visible_devices_to_nvml(
    value: str | None,
    gpus: Sequence[GpuId],
    *,
    mig_parent: Callable[[str], int | None] | None = None,
) -> tuple[int, ...] | None:
    """NVML indices of the devices a ``CUDA_VISIBLE_DEVICES`` value makes visible.

    Follows CUDA's and nvitop's reading: a comma list of ordinals *or* UUIDs
    (``GPU-...``, abbreviations allowed when unique) *or* MIG ids
    (``MIG-GPU-<uuid>/<gi>/<ci>``, ``MIG-<uuid>``); parsing stops at the first
    invalid entry; a duplicate makes the whole value invalid (nothing visible).
    Ordinals are taken in PCI bus order, which is NVML's index order (what
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` gives and what SLURM assumes). A MIG
    device maps to its parent GPU's index; a ``MIG-<uuid>`` needs
    ``mig_parent`` (NVML lookup) to resolve. None (variable unset) means no
    restriction and returns None.
    """
    if value is None:
        return None
    ordered = sorted(gpus, key=lambda g: g.index)
    out: list[int] = []
    seen: set[str] = set()
    for raw in value.split(","):
        token = raw.strip()
        if not token:
            break
        if token in seen:
            return ()
        seen.add(token)
        index = _one_cuda_device(token, ordered, mig_parent)
        if index is None:
            break
        if index not in out:
            out.append(index)
    return tuple(out)


def _one_cuda_device(
    token: str, gpus: Sequence[GpuId], mig_parent: Callable[[str], int | None] | None
) -> int | None:
    if token[0].isdigit():
        digits = re.match(r"\d+", token)
        assert digits is not None
        ordinal = int(digits.group(0))
        return gpus[ordinal].index if ordinal < len(gpus) else None
    if token.startswith("MIG-GPU-"):  # MIG-GPU-<gpu uuid>/<gi>/<ci> (drivers < 470)
        return _by_uuid(token[len("MIG-") :].split("/", 1)[0], gpus)
    if token.startswith("MIG-"):
        return mig_parent(token) if mig_parent is not None else None
    if token.startswith("GPU-"):
        return _by_uuid(token, gpus)
    return None


def _by_uuid(prefix: str, gpus: Sequence[GpuId]) -> int | None:
    matches = [g.index for g in gpus if g.uuid is not None and g.uuid.startswith(prefix)]
    return matches[0] if len(matches) == 1 else None


def slurm_gpus_to_nvml(ids: Sequence[int], gpus: Sequence[GpuId]) -> tuple[int, ...]:
    """SLURM's GPU ids (``SLURM_JOB_GPUS``: gres indices, i.e. ``/dev/nvidia<N>`` minors).

    Mapped through NVML minor numbers where known; otherwise an id is taken as
    the NVML index (true on nodes whose gres.conf lists the devices in order).
    """
    by_minor = {g.minor_number: g.index for g in gpus if g.minor_number is not None}
    out: list[int] = []
    for i in ids:
        index = by_minor.get(i, i) if by_minor else i
        if index not in out:
            out.append(index)
    return tuple(out)


# -- scontrol ------------------------------------------------------------------------------


def _scontrol() -> str | None:
    return shutil.which("scontrol")


def _run_scontrol(args: Sequence[str], env: Mapping[str, str] | None) -> str | None:
    program = _scontrol()
    if program is None:
        return None
    try:
        result = subprocess.run(
            [program, *args],
            capture_output=True,
            text=True,
            timeout=SCONTROL_TIMEOUT_S,
            env=dict(env) if env is not None else None,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    return result.stdout


def parse_scontrol_job(text: str, node: str | None = None) -> dict[str, str]:
    """``scontrol show job -d -o ID`` as a dict; the detail for ``node`` adds CPU_IDs/GRES.

    The ``-d`` detail holds ``Nodes=<list> CPU_IDs=0-3 Mem=... GRES=gpu:2(IDX:0-1)``
    once per group of nodes; the group naming ``node`` (or the first, when the
    job has one group) fills ``CPU_IDs`` and ``GRES_IDX``.
    """
    out: dict[str, str] = {}
    detail: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for token in re.findall(r"(\S+?)=(\S*)", text):
        key, value = token
        if key == "Nodes":
            current = {"Nodes": value}
            detail.append(current)
        elif current is not None and key in ("CPU_IDs", "Mem", "GRES"):
            current[key] = value
        else:
            current = None
            out.setdefault(key, value)
    chosen = None
    for d in detail:
        if node is not None and node in _expand_hostlist(d["Nodes"]):
            chosen = d
            break
    if chosen is None and len(detail) == 1:
        chosen = detail[0]
    if chosen is not None:
        if "CPU_IDs" in chosen:
            out["CPU_IDs"] = chosen["CPU_IDs"]
        idx = re.search(r"IDX:([0-9,\-]+)", chosen.get("GRES", ""))
        if idx:
            out["GRES_IDX"] = idx.group(1)
    return out


def _expand_hostlist(text: str) -> set[str]:
    """``node[01-03,07],gpu5`` -> the names (enough to match one host)."""
    names: set[str] = set()
    for match in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?", text):
        prefix, ranges = match.group(1), match.group(2)
        if ranges is None:
            names.add(prefix)
            continue
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            if not high:
                names.add(prefix + low)
                continue
            with contextlib.suppress(ValueError):
                for n in range(int(low), int(high) + 1):
                    names.add(prefix + str(n).zfill(len(low)))
    return names


def scontrol_show_job(
    job_id: str, node: str | None = None, env: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """What ``scontrol show job -d -o`` says about the job (None: no scontrol, or unknown job)."""
    text = _run_scontrol(["show", "job", "-d", "-o", job_id], env)
    if not text or "JobId=" not in text:
        return None
    return parse_scontrol_job(text, node)


def scontrol_listpids(job_id: str, env: Mapping[str, str] | None = None) -> set[int] | None:
    """Pids slurmd tracks for the job on this node (``scontrol listpids``); None if unavailable.

    Only useful with proctrack plugins that track pids (cgroup); with
    ``proctrack/linuxproc`` slurmd may answer ``-1``, which is dropped here.
    """
    text = _run_scontrol(["listpids", job_id], env)
    if text is None:
        return None
    pids: set[int] = set()
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[1] == job_id:
            with contextlib.suppress(ValueError):
                pid = int(parts[0])
                if pid > 0:
                    pids.add(pid)
    return pids


# -- the job -------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobContext:
    """A job found on this node, before any tick: who it is and what it was given."""

    job_id: str
    step_id: str | None = None
    name: str | None = None
    user: str | None = None
    node: str | None = None
    cpus: tuple[int, ...] = ()
    """The job's cores on this node (empty when nothing could tell)."""
    cpus_from: str = ""
    """Where ``cpus`` came from: "cgroup <file>", "scontrol CPU_IDs", "affinity"."""
    cpus_on_node: int | None = None
    """``SLURM_CPUS_ON_NODE`` (or the node's entry of ``SLURM_JOB_CPUS_PER_NODE``)."""
    slurm_gpu_ids: tuple[int, ...] | None = None
    """``SLURM_JOB_GPUS`` / ``SLURM_STEP_GPUS`` / scontrol's ``GRES IDX``: SLURM's ids."""
    cuda_visible_devices: str | None = None
    inside: bool = True
    """True when this process runs in the job (SLURM_JOB_ID), False for ``--job ID``."""
    detected_from: str = ""

    def gpu_indices(
        self,
        gpus: Sequence[GpuId],
        mig_parent: Callable[[str], int | None] | None = None,
    ) -> tuple[int, ...] | None:
        """The job's GPUs as NVML indices, or None when nothing says (then: all GPUs)."""
        if self.slurm_gpu_ids is not None:
            return slurm_gpus_to_nvml(self.slurm_gpu_ids, gpus)
        if self.cuda_visible_devices is not None and gpus:
            return cuda_visible_devices_to_nvml(
                self.cuda_visible_devices, gpus, mig_parent=mig_parent
            )
        return None

    def info(
        self,
        *,
        gpu_indices: tuple[int, ...] | None = None,
        filtered: bool = True,
        processes: tuple[WorkerProcess, ...] = (),
        cpu_percent: float | None = None,
        foreign_cpu_percent: float | None = None,
    ) -> JobInfo:
        """The model's :class:`~gputop_hints.model.JobInfo` for one tick."""
        return JobInfo(
            job_id=self.job_id,
            scheduler="slurm",
            step_id=self.step_id,
            name=self.name,
            user=self.user,
            node=self.node,
            cpus=self.cpus,
            gpu_indices=gpu_indices,
            detected_from=self.detected_from,
            filtered=filtered,
            processes=processes,
            cpu_percent=cpu_percent,
            foreign_cpu_percent=foreign_cpu_percent,
        )


def _own_affinity() -> tuple[int, ...]:
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return tuple(range(os.cpu_count() or 1))


def _affinity(pid: int) -> set[int]:
    try:
        return set(os.sched_getaffinity(pid))
    except (AttributeError, OSError):
        return set()


def _this_node_count(env: Mapping[str, str], node: str | None) -> int | None:
    with contextlib.suppress(ValueError):
        if env.get("SLURM_CPUS_ON_NODE"):
            return int(env["SLURM_CPUS_ON_NODE"])
    text = env.get("SLURM_JOB_CPUS_PER_NODE")
    if not text:
        return None
    try:
        counts = parse_cpus_per_node(text)
    except ValueError:
        return None
    nodes = [n for n in env.get("SLURM_JOB_NODELIST", "").split(",") if n]
    if node is not None and len(nodes) == len(counts) and node in nodes:
        return counts[nodes.index(node)]
    return counts[0] if len(set(counts)) == 1 and counts else None


def detect_job(
    environ: Mapping[str, str] | None = None,
    *,
    job_id: str | None = None,
    proc: str = PROC,
    cgroup_root: str = CGROUP_ROOT,
    use_scontrol: bool = True,
    members: Iterable[int] = (),
) -> JobContext | None:
    """The job this monitor is about, or None on a plain node.

    Without ``job_id`` the job is this process's own (``SLURM_JOB_ID`` in
    ``environ``, then a cgroup path naming ``job_<id>``). With ``job_id`` (from
    ``--job``) the monitor runs outside the job: its facts come from a member
    process's environment and cgroup, and from ``scontrol``. ``members`` are
    pids already known to be in the job (the first tick's scan) for those
    look-ups.

    Cores, first that answers: the job-level cpuset cgroup (own, or a member's),
    ``scontrol show job -d``'s ``CPU_IDs`` for this node, the union of the
    members' CPU affinities, this process's affinity.
    """
    env = os.environ if environ is None else environ
    node_env = env.get("SLURMD_NODENAME")
    node = node_env or socket.gethostname().split(".")[0]
    inside = job_id is None
    how: list[str] = []
    own_cgroup = read_proc_cgroup("self", proc) or ""
    job_env: Mapping[str, str] = {}
    step_id: str | None = None
    if job_id is None:
        job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
        if job_id:
            how.append("SLURM_JOB_ID")
            job_env = env
            step_id = env.get("SLURM_STEP_ID") or env.get("SLURM_STEPID")
        else:
            job_id, step_id = job_from_cgroup(own_cgroup)
            if job_id is None:
                return None
            how.append("cgroup")
    else:
        job_id = job_id.strip()
        how.append(f"--job {job_id}")
        for pid in members:  # a member's environment tells what SLURM gave the job
            member_env = read_environ(pid, proc)
            if member_env and (member_env.get("SLURM_JOB_ID") or "") == job_id:
                job_env = member_env
                break

    scontrol: dict[str, str] | None = None

    def ask_scontrol() -> dict[str, str] | None:
        nonlocal scontrol
        if scontrol is None and use_scontrol:
            scontrol = scontrol_show_job(job_id, node, env) or {}
        return scontrol or None

    # Cores.
    cpus: tuple[int, ...] = ()
    cpus_from = ""
    cgroup_texts = [own_cgroup] if inside else []
    cgroup_texts += [t for t in (read_proc_cgroup(p, proc) for p in members) if t]
    for text in cgroup_texts:
        found = cgroup_cpuset(text, root=cgroup_root, job_id=job_id)
        if found is not None:
            cpus, file = found
            cpus_from = f"cgroup {file}"
            break
    if not cpus:
        sc = ask_scontrol()
        if sc and sc.get("CPU_IDs"):
            with contextlib.suppress(ValueError):
                cpus = parse_cpu_list(sc["CPU_IDs"])
                cpus_from = "scontrol CPU_IDs"
    if not cpus:
        union: set[int] = set()
        for pid in members:
            union |= _affinity(pid)
        if union:
            cpus, cpus_from = tuple(sorted(union)), "affinity of the job's processes"
    if not cpus and inside:
        cpus, cpus_from = _own_affinity(), "own affinity"
    if cpus_from:
        how.append(f"cores from {cpus_from}")

    # GPUs (SLURM ids; mapped to NVML indices later, when NVML is known).
    slurm_gpus: tuple[int, ...] | None = None
    for key in ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS"):
        if job_env.get(key):
            slurm_gpus = parse_gpu_ids(job_env[key])
            if slurm_gpus is not None:
                break
    if slurm_gpus is None and not inside:
        sc = ask_scontrol()
        if sc and sc.get("GRES_IDX"):
            slurm_gpus = parse_gpu_ids(sc["GRES_IDX"])

    name = job_env.get("SLURM_JOB_NAME")
    user = job_env.get("SLURM_JOB_USER")
    if not inside and (name is None or user is None):
        sc = ask_scontrol()
        if sc:
            name = name or sc.get("JobName")
            user = user or (sc.get("UserId") or "").split("(")[0] or None
    return JobContext(
        job_id=job_id,
        step_id=step_id if inside else None,
        name=name,
        user=user,
        node=node,
        cpus=cpus,
        cpus_from=cpus_from,
        cpus_on_node=_this_node_count(job_env, node) if job_env else None,
        slurm_gpu_ids=slurm_gpus,
        cuda_visible_devices=job_env.get("CUDA_VISIBLE_DEVICES"),
        inside=inside,
        detected_from="; ".join(how),
    )


def job_exists(job_id: str, env: Mapping[str, str] | None = None) -> bool | None:
    """Whether SLURM knows a running job ``job_id``; None when scontrol cannot say."""
    if _scontrol() is None:
        return None
    info = scontrol_show_job(job_id, None, env)
    if info is None:
        return False
    return info.get("JobState", "RUNNING") in {"RUNNING", "SUSPENDED", "COMPLETING"}


# -- membership ----------------------------------------------------------------------------


@dataclass
class _Verdict:
    start: int
    member: bool | None
    """True / False from cgroup or environ; None: neither could tell."""


@dataclass
class JobMembership:
    """Which processes on this node belong to ``job_id``; cheap enough to run every tick.

    A pid is judged once per process lifetime (pid + start time): its cgroup
    path naming ``job_<id>`` (proctrack/cgroup, the usual production set-up)
    decides; otherwise ``SLURM_JOB_ID`` in its ``/proc/<pid>/environ`` (only
    readable for one's own processes, or as root); a process neither can judge
    belongs to the job when its parent does. ``extra`` pids (``scontrol
    listpids``) are members too. SLURM's own ``slurmstepd`` and this monitor
    are never members.
    """

    job_id: str
    proc: str = PROC
    use_environ: bool = True
    exclude: set[int] = field(default_factory=lambda: {os.getpid()})
    extra: set[int] = field(default_factory=set)
    _verdicts: dict[int, _Verdict] = field(default_factory=dict)

    def update(
        self,
        stats: Mapping[int, tuple[int, int]],
        names: Callable[[int], str | None] | None = None,
    ) -> frozenset[int]:
        """Members among ``stats`` (``{pid: (ppid, start time)}``, one /proc pass)."""
        verdicts = self._verdicts
        for pid in [pid for pid in verdicts if pid not in stats]:
            del verdicts[pid]
        for pid, (_, start) in stats.items():
            known = verdicts.get(pid)
            if known is None or known.start != start:
                verdicts[pid] = _Verdict(start, self._judge(pid))
        members: set[int] = set()
        undecided: dict[int, int] = {}
        for pid, (ppid, _) in stats.items():
            if pid in self.exclude:
                continue
            verdict = verdicts[pid].member
            if verdict is True or pid in self.extra:
                members.add(pid)
            elif verdict is None:
                undecided[pid] = ppid
        # Inherit along the tree: a child the probes could not judge follows its parent.
        changed = True
        while changed and undecided:
            changed = False
            for pid, ppid in list(undecided.items()):
                if ppid in members:
                    members.add(pid)
                    del undecided[pid]
                    changed = True
        if names is not None:
            members = {p for p in members if names(p) not in INFRASTRUCTURE_NAMES}
        return frozenset(members)

    def _judge(self, pid: int) -> bool | None:
        text = read_proc_cgroup(pid, self.proc)
        if text is None:
            return None
        job, _ = job_from_cgroup(text)
        if job is not None:
            return job == self.job_id
        if not self.use_environ:
            return None
        found = environ_job_id(pid, self.proc)
        if found is False:
            return None  # unreadable (another user's process): the tree may still tell
        if found is None:
            return False
        return found == self.job_id


# -- other jobs on our cores ---------------------------------------------------------------


class ForeignLoad:
    """Busy share of the job's cores taken by processes outside the job.

    Each tick gets every process's CPU time and the core it last ran on
    (``/proc/<pid>/stat`` fields 14+15 and 39). The CPU time a non-member used
    since the previous tick is charged to its last core; the sum over the
    job's cores, divided by their capacity over the interval, is the estimate
    (0-100, % of the job's cores). It is an estimate: a process that hopped
    between cores mid-tick is charged to the one it ended on, and a process
    seen for the first time has no delta yet. Kernel threads are not counted.
    """

    def __init__(self, cores: Iterable[int]) -> None:
        self.cores = frozenset(cores)
        self._last: dict[int, tuple[int, float]] = {}
        self._at: float | None = None

    def update(
        self,
        rows: Iterable[tuple[int, int, float, int | None, int]],
        members: Container[int],
        now: float,
    ) -> float | None:
        """Foreign busy % of the job's cores since the last call (None on the first).

        ``rows``: ``(pid, start, cpu_seconds, last_cpu, ppid)`` for every process.
        """
        last, previous_at = self._last, self._at
        current: dict[int, tuple[int, float]] = {}
        foreign_s = 0.0
        for pid, start, cpu_s, last_cpu, ppid in rows:
            current[pid] = (start, cpu_s)
            if pid == 2 or ppid == 2 or pid in members:
                continue
            if last_cpu is None or last_cpu not in self.cores:
                continue
            before = last.get(pid)
            if before is None or before[0] != start:
                continue
            foreign_s += max(0.0, cpu_s - before[1])
        self._last, self._at = current, now
        if previous_at is None or now <= previous_at or not self.cores:
            return None
        capacity = (now - previous_at) * len(self.cores)
        return min(100.0, foreign_s / capacity * 100.0)


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def read_proc_rows(proc: str = PROC) -> list[tuple[int, int, float, int | None, int]]:
    """``(pid, start, cpu_seconds, last_cpu, ppid)`` per process: :class:`ForeignLoad`'s input."""
    rows: list[tuple[int, int, float, int | None, int]] = []
    try:
        entries = os.listdir(proc)
    except OSError:
        return rows
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) < 20:
            continue
        try:
            last_cpu = int(fields[36]) if len(fields) > 36 else None
            rows.append(
                (
                    int(entry),
                    int(fields[19]),
                    (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS,
                    last_cpu,
                    int(fields[1]),
                )
            )
        except ValueError:
            continue
    return rows
