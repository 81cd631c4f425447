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
    return _ask_scontrol(args, env)[0]


def _ask_scontrol(
    args: Sequence[str], env: Mapping[str, str] | None
) -> tuple[str | None, str | None]:
    """(its output, None) when scontrol answered; (None, what it said) when it did not."""
    program = _scontrol()
    if program is None:
        return None, "scontrol is not installed"
    try:
        result = subprocess.run(
            [program, *args],
            capture_output=True,
            text=True,
            timeout=SCONTROL_TIMEOUT_S,
            env=dict(env) if env is not None else None,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"scontrol gave no answer in {SCONTROL_TIMEOUT_S:g} s"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"scontrol could not run: {exc}"
    if result.returncode != 0:
        said = (result.stderr or result.stdout).strip().splitlines()
        return None, said[0] if said else f"scontrol exited with status {result.returncode}"
    return result.stdout, None


_UNKNOWN_JOB = ("invalid job id", "unknown job", "job id not found")
"""What scontrol says for a job it does not know (as opposed to not being able to ask)."""


class ScontrolUnanswered(Exception):
    """scontrol could not be asked (controller down, timeout): the message is what it said."""


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
    """Whether SLURM knows a running job ``job_id``; None without scontrol.

    Raises :class:`ScontrolUnanswered` with what scontrol said when it is there but
    cannot answer (``Unable to contact slurm controller``, a timeout): that is not
    "the job is not running"."""
    if _scontrol() is None:
        return None
    try:
        job_id = parse_job_id(job_id)
    except BadJobId:
        return False
    text, said = _ask_scontrol(["show", "job", "-d", "-o", job_id], env)
    if text is None:
        if said is not None and any(m in said.lower() for m in _UNKNOWN_JOB):
            return False
        raise ScontrolUnanswered(said or "no answer")
    if "JobId=" not in text:
        return False
    info = parse_scontrol_job(text, None)
    return info.get("JobState", "RUNNING") in {"RUNNING", "SUSPENDED", "COMPLETING"}
