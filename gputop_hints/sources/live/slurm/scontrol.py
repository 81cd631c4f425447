"""The ``scontrol`` calls: what SLURM's controller says about a job.

Every call is optional: without ``scontrol`` on the PATH, or when it fails or
times out, the answer is None and the caller falls back to what the node
itself tells (environment, cgroups, affinity).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence

from gputop_hints.sources.live.slurm.parse import BadJobId, parse_job_id, parse_scontrol_job

SCONTROL_TIMEOUT_S = 5.0


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


def scontrol_show_job(
    job_id: str, node: str | None = None, env: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """What ``scontrol show job -d -o`` says about the job (None: no scontrol, or unknown job).

    A ``job_id`` that is not a job id is never passed on (it could read as an
    option of scontrol): SLURM cannot know such a job, so the answer is None.
    """
    try:
        job_id = parse_job_id(job_id)
    except BadJobId:
        return None
    text = _run_scontrol(["show", "job", "-d", "-o", job_id], env)
    if not text or "JobId=" not in text:
        return None
    return parse_scontrol_job(text, node)


def job_exists(job_id: str, env: Mapping[str, str] | None = None) -> bool | None:
    """Whether SLURM knows a running job ``job_id``; None when scontrol cannot say."""
    if _scontrol() is None:
        return None
    info = scontrol_show_job(job_id, None, env)
    if info is None:
        return False
    return info.get("JobState", "RUNNING") in {"RUNNING", "SUSPENDED", "COMPLETING"}
