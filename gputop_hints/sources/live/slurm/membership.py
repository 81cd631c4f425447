"""What belongs to a job on this node: its processes, its GPUs, and the load
that does *not* belong to it on its cores.

* :class:`JobMembership` -- which pids are the job's: the cgroup path naming
  ``job_<id>``, ``SLURM_JOB_ID`` in a readable ``/proc/<pid>/environ``, or
  descent from a member; learnt once per process.
* :func:`cuda_visible_devices_to_nvml` / :func:`slurm_gpus_to_nvml` -- the
  job's GPU identifiers as NVML indices (GPU identities come in as plain
  :class:`GpuId` data, so this module never loads NVML).
* :class:`ForeignLoad` -- how much of the job's cores processes outside the
  job take.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gputop_hints.sources.live.slurm.parse import job_from_cgroup
from gputop_hints.sources.live.slurm.proc_files import PROC, environ_job_id, read_proc_cgroup

# Processes that run in a job's cgroup but are SLURM's, not the user's.
INFRASTRUCTURE_NAMES = frozenset({"slurmstepd", "sleep_forever"})


# -- membership ----------------------------------------------------------------------------


@dataclass
class _Verdict:
    """A pid's membership, judged once for the process that started at ``start``."""

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
    belongs to the job when its parent does. SLURM's own ``slurmstepd`` and
    this monitor are never members.
    """

    job_id: str
    proc: str = PROC
    use_environ: bool = True
    exclude: set[int] = field(default_factory=lambda: {os.getpid()})
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
            if verdict is True:
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


# -- the job's GPUs as NVML indices ------------------------------------------------------


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
