"""Readers of the per-process files that carry job facts: ``/proc/<pid>/cgroup``
and ``/proc/<pid>/environ``.

Each takes the ``/proc`` root as an argument so tests can point it at fixture
files, and answers None (or False) rather than raising when a process is gone
or belongs to another user.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

PROC = "/proc"


def read_text(path: str | Path) -> str | None:
    """A small text file's contents; None when it cannot be read (gone, not ours)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_proc_cgroup(pid: int | str = "self", proc: str = PROC) -> str | None:
    """``/proc/<pid>/cgroup`` (this process's by default); None when unreadable."""
    return read_text(f"{proc}/{pid}/cgroup")


def may_run_in_job(environ: Mapping[str, str], proc: str = PROC) -> bool:
    """False when this process surely runs in no SLURM job: neither ``SLURM_JOB_ID``
    (nor ``SLURM_JOBID``) in ``environ`` nor a ``job_`` in its ``/proc/self/cgroup`` --
    where :func:`~gputop_hints.sources.live.slurm.detect.detect_job` (without ``--job``)
    answers None. A plain node asks only this, and loads nothing more of this package."""
    if environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID"):
        return True
    return "job_" in (read_proc_cgroup("self", proc) or "")


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
