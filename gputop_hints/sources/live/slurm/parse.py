"""Pure parsers for the strings SLURM and Linux hand a job: no I/O, no subprocesses.

Job ids as a user types them (``--job``), cpuset lists (``0-3,8``),
``SLURM_JOB_CPUS_PER_NODE`` counts, ``SLURM_JOB_GPUS`` ids, the lines of
``/proc/<pid>/cgroup`` (v1, v2, hybrid) and the job id a cgroup path names,
and ``scontrol show job -d -o`` output. The readers that
feed them live in :mod:`~gputop_hints.sources.live.slurm.detect` and
:mod:`~gputop_hints.sources.live.slurm.membership`; the subprocess calls in
:mod:`~gputop_hints.sources.live.slurm.scontrol`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gputop_hints.text import pattern

_JOB_IN_CGROUP = r"(?:^|/)job_(\d+)(?=/|$)"
_STEP_IN_CGROUP = r"(?:^|/)step_([^/]+)(?=/|$)"


_JOB_ID = r"(?a)[0-9]{1,10}(?:[_+][0-9]{1,10})?"
"""A job id, an array task (``jobid_taskid``) or a het-job component
(``jobid+offset``): the forms ``scontrol show job`` documents for one job.
SLURM ids are 32-bit, so ten digits each at most."""

_SHOWN_ID_CHARS = 40
"""How much of a rejected id an error message repeats."""


class BadJobId(ValueError):
    """A ``--job`` value that is not a SLURM job id; the message says which forms are."""


# -- small parsers -----------------------------------------------------------------------


def parse_job_id(text: str) -> str:
    """``text`` as a SLURM job id (surrounding whitespace dropped), or :class:`BadJobId`.

    Accepted: ``1234``, ``1234_7`` (an array task), ``1234+1`` (a het-job
    component). Everything else is refused *before* it reaches a subprocess:
    ``--job=--clusters=x`` must never become an option of ``scontrol``.
    """
    value = text.strip()
    if pattern(_JOB_ID).fullmatch(value) is None:
        shown = value[:_SHOWN_ID_CHARS] + ("..." if len(value) > _SHOWN_ID_CHARS else "")
        raise BadJobId(
            f"{shown!r} is not a SLURM job id (expected digits, e.g. 1234; "
            "1234_7 for an array task; 1234+1 for a het-job component)"
        )
    return value


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
        if "job_" not in entry.path:  # a plain node's cgroups: no expression to compile
            continue
        match = pattern(_JOB_IN_CGROUP).search(entry.path)
        if match:
            step = pattern(_STEP_IN_CGROUP).search(entry.path, match.end())
            return match.group(1), (step.group(1) if step else None)
    return None, None


# -- scontrol output ----------------------------------------------------------------------


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
