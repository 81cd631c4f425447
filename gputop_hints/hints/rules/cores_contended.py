"""cores-contended: processes outside the attached SLURM job load the job's own cores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_HOST_CPU, METRIC_PROCESSES

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "cores-contended"


@dataclass(frozen=True)
class CoresContended:
    """cores-contended's thresholds: the ``cores_contended:`` section of defaults.yaml."""

    foreign_share_above_percent: float = field(
        metadata=threshold(
            0, 100, "%", "share of the job's cores used by processes outside the job"
        )
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Processes outside the attached job use a large share of the job's own cores."""
    c = t.cores_contended
    job = win.latest.job
    if job is None or not job.cpus:
        return []
    shares = [
        s.job.foreign_cpu_percent
        for s in list(win.history.snapshots)[-win.ticks :]
        if s.job is not None and s.job.foreign_cpu_percent is not None
    ]
    if not shares:
        return []
    share = sum(shares) / len(shares)
    if share < c.foreign_share_above_percent:
        return []
    out: list[Finding] = []
    for proc in win.processes():
        if proc.in_job is False:
            continue
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.WARNING,
                label=f"cores shared: {share:.0f}% other",
                summary=(
                    f"Processes outside job {job.job_id} use {share:.0f} % of the "
                    f"{len(job.cpus)} cores allocated to it: its DataLoader workers and main "
                    "process get less CPU than the job asked for."
                ),
                advice=(
                    "Tell the admins: another job (or a login-node process) runs on cores "
                    "SLURM gave to this one -- a missing cgroup/affinity constraint.",
                    "Until fixed, fewer DataLoader workers than allocated cores avoids "
                    "fighting over the shared ones.",
                ),
                evidence=(
                    Evidence(
                        "job's cores used by other processes (mean)",
                        share,
                        f">= {c.foreign_share_above_percent:g}",
                        "%",
                        Scope.HOST,
                    ),
                ),
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=CoresContended,
    title="Job's cores shared",
    sentence=(
        "Attached to a SLURM job, processes outside it use a large share of the cores the job "
        "was allocated: its workers get less CPU than it asked for."
    ),
    subject="process",
    needs=(METRIC_PROCESSES, METRIC_HOST_CPU),
)
