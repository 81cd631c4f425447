"""Job detection: which batch job the monitor is about, and what that job was given.

On a shared SLURM node people attach with ``srun --jobid=<id> --overlap --pty
gputop-hints``; the monitor must then show *their* job and reason about the
cores the job was allocated, not the whole machine. :func:`detect_job` finds
the job -- from ``SLURM_JOB_ID`` in the environment, a cgroup path naming
``job_<id>``, or ``--job ID`` given from outside it -- and its cores (cgroup
v1/v2 cpuset, ``scontrol``, the members' affinity), GPUs (``SLURM_JOB_GPUS``,
``CUDA_VISIBLE_DEVICES``, scontrol's GRES), name and user.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputop_hints.model import JobInfo, WorkerProcess
from gputop_hints.sources.live.host import allowed_cores
from gputop_hints.sources.live.slurm.parse import (
    job_from_cgroup,
    parse_cpu_list,
    parse_cpus_per_node,
    parse_gpu_ids,
    parse_proc_cgroup,
)
from gputop_hints.sources.live.slurm.proc_files import (
    PROC,
    read_environ,
    read_proc_cgroup,
    read_text,
)

if TYPE_CHECKING:
    from gputop_hints.sources.live.slurm.membership import GpuId

CGROUP_ROOT = "/sys/fs/cgroup"


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
                text = read_text(file)
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
        # a job's own module: a plain node (no job) never loads it
        from gputop_hints.sources.live.slurm.membership import (
            cuda_visible_devices_to_nvml,
            slurm_gpus_to_nvml,
        )

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
            # only a job asks scontrol: a plain node never loads the subprocess caller
            from gputop_hints.sources.live.slurm.scontrol import scontrol_show_job

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
        cpus, cpus_from = allowed_cores(), "own affinity"
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
