"""The followed SLURM job during a run: its members each tick, and the snapshot
narrowed to it.

:class:`JobView` joins the SLURM helpers (which know nothing of NVML) to this
machine's GPUs: it maps the job's GPU ids onto NVML indices once, when it
attaches, then each tick tells which processes are the job's, keeps only the
job's GPUs and GPU processes (unless every process was asked for) and builds
the snapshot's :class:`~gputop_hints.model.JobInfo`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gputop_hints.model import GpuProcess, GpuSample, JobInfo, WorkerProcess
from gputop_hints.sources import SourceUnavailable
from gputop_hints.sources.live import procfs
from gputop_hints.sources.live.nvml import NvmlGpus, mig_parent
from gputop_hints.sources.live.processes import ProcessTracker, job_process_rows
from gputop_hints.sources.live.procfs import ProcTable, process_name
from gputop_hints.sources.live.slurm.proc_files import may_run_in_job

if TYPE_CHECKING:
    from gputop_hints.sources.live.slurm.detect import JobContext

log = logging.getLogger(__name__)


class JobView:
    """One job on this node, as the live source follows it from tick to tick.

    ``gpu_indices`` are the job's GPUs as NVML indices, or None when nothing
    said which (then GPUs are not narrowed down, only processes).
    """

    def __init__(self, context: JobContext, gpu_indices: tuple[int, ...] | None) -> None:
        # loaded only when a job is followed: a plain node never builds a JobView
        from gputop_hints.sources.live.slurm.membership import ForeignLoad, JobMembership

        self.context = context
        self._membership = JobMembership(context.job_id)
        self._foreign = ForeignLoad(context.cpus) if context.cpus else None
        self._job_gpus = gpu_indices

    @classmethod
    def attach(
        cls, job_id: str | None, environ: Mapping[str, str] | None, gpus: NvmlGpus
    ) -> JobView | None:
        """The job to follow: ``job_id`` (``--job``), else the one this process runs in.

        None on a plain node. A ``job_id`` that is not a SLURM job id, or that
        SLURM says is not running, raises :class:`SourceUnavailable`.
        """
        members: frozenset[int] = frozenset()
        if job_id is not None:
            from gputop_hints.sources.live.slurm.membership import JobMembership
            from gputop_hints.sources.live.slurm.parse import BadJobId, parse_job_id
            from gputop_hints.sources.live.slurm.scontrol import ScontrolUnanswered, job_exists

            try:
                job_id = parse_job_id(job_id)
            except BadJobId as exc:
                raise SourceUnavailable(f"--job: {exc}") from None
            try:
                exists = job_exists(job_id, environ)
            except ScontrolUnanswered as exc:
                raise SourceUnavailable(
                    f"cannot tell whether SLURM job {job_id} runs: scontrol said: {exc}"
                ) from None
            if exists is False:
                raise SourceUnavailable(
                    f"SLURM job {job_id} is not running (scontrol does not list it)."
                )
            # From outside the job its facts come from its processes: find them first.
            membership = JobMembership(job_id)
            table = procfs.scan_proc()
            if table is not None:
                members = membership.update(table.tree())
        elif not may_run_in_job(os.environ if environ is None else environ):
            return None  # a plain node: the job detection is not even loaded
        from gputop_hints.sources.live.slurm.detect import detect_job

        context = detect_job(environ, job_id=job_id, members=members)
        if context is None:
            return None
        ids = gpus.gpu_ids()
        view = cls(context, context.gpu_indices(ids, mig_parent) if ids else None)
        log.info("attached to SLURM job %s (%s)", context.job_id, context.detected_from)
        return view

    def members(self, table: ProcTable) -> frozenset[int]:
        """The job's pids among this tick's processes."""
        return self._membership.update(table.tree(), process_name)

    def narrow(
        self,
        gpus: list[GpuSample],
        processes: tuple[GpuProcess, ...],
        table: ProcTable | None,
        members: frozenset[int] | None,
        tracker: ProcessTracker,
        *,
        all_processes: bool,
    ) -> tuple[list[GpuSample], tuple[GpuProcess, ...], JobInfo]:
        """Filter to the job (unless ``all_processes``) and describe it for this tick.

        A GPU where a job process was seen counts as the job's even when
        SLURM's ids did not name it.
        """
        job_gpus: set[int] | None = None if self._job_gpus is None else set(self._job_gpus)
        observed = {p.gpu_index for p in processes if p.in_job}
        if job_gpus is not None:
            job_gpus |= observed
        filtered = not all_processes
        if filtered:
            processes = tuple(p for p in processes if p.in_job)
            if job_gpus is not None:
                gpus = [g for g in gpus if g.index in job_gpus]
        rows: tuple[WorkerProcess, ...] = ()
        total: float | None = None
        foreign: float | None = None
        if table is not None and members is not None:
            rows = job_process_rows(tracker, table, members)
            known = [r.cpu_percent for r in rows if r.cpu_percent is not None]
            total = sum(known) if known else None
            if self._foreign is not None:
                foreign = self._foreign.update(table.cpu_rows(), members, table.taken_at)
        info = self.context.info(
            gpu_indices=None if job_gpus is None else tuple(sorted(job_gpus)),
            filtered=filtered,
            processes=rows,
            cpu_percent=total,
            foreign_cpu_percent=foreign,
        )
        return gpus, processes, info
