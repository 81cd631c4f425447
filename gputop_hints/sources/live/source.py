"""The live source: NVML (through nvitop's Apache-2.0 ``api`` package) plus psutil.

One :meth:`LiveSource.sample` call reads every GPU, every process holding a GPU
context, the children of those processes (DataLoader workers, usually) and the
host's per-core CPU, and returns one frozen :class:`~gputop_hints.model.Snapshot`.

What it promises:

* Unknown is ``None``: nvitop's ``NA``, NVML's NotSupported / NoPermission, a
  GPU that fell off the bus, a process that vanished mid-tick -- each leaves a
  ``None`` where the value would be, and the tick still completes.
* No NVML at all (no driver, a CPU-only CI box) is a mode, not an error: the
  source produces host-only snapshots whose ``gpu_unavailable_reason`` says
  what went wrong, unless ``require_gpu=True`` asked for a hard failure.
* A GPU whose NVML call never returns holds up nothing but itself: each GPU is
  read on its own worker thread under a deadline (:mod:`.nvml`), and the GPU
  reads ``not_answering_s`` until the call returns. :meth:`LiveSource.close`
  never waits for a stuck call.
* Cheap: the work per tick is about fifteen NVML calls per GPU and, when any
  GPU has processes, one small ``/proc/<pid>/stat`` read per GPU process and
  per known descendant -- per host process only every few seconds, when a
  new GPU pid shows up, or every tick while a job is followed
  (:class:`~.procfs.ProcScanner`; a new DataLoader worker shows within
  :data:`~.procfs.FULL_RESCAN_S`).
  Everything static (names, command lines, what a GPU does not support) is
  learnt once and remembered.

This module orchestrates a tick; the work is done by its neighbours:
:mod:`.nvml` (the GPUs), :mod:`.procfs` (the one ``/proc`` pass),
:mod:`.processes` (GPU processes and their workers), :mod:`.host` (CPU,
memory) and :mod:`.job_view` (the SLURM job, when one is followed).
Only the ``nvitop.api`` package is used -- never ``nvitop.tui`` (GPL-3.0).
This module must not import Textual.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gputop_hints.model import GpuSample, JobInfo, Launcher, Snapshot
from gputop_hints.sources import SourceUnavailable
from gputop_hints.sources.live import procfs
from gputop_hints.sources.live.host import HostCpu, sample_host
from gputop_hints.sources.live.job_view import JobView
from gputop_hints.sources.live.launchers import LauncherFinder
from gputop_hints.sources.live.nvml import NvmlGpus, mig_parent, unavailable_reason
from gputop_hints.sources.live.nvml_processes import NvmlProcess
from gputop_hints.sources.live.processes import ProcessTracker, gpu_process_rows

if TYPE_CHECKING:
    from gputop_hints.sources.live.slurm.detect import JobContext

log = logging.getLogger(__name__)


class LiveSource:
    """Snapshots of this machine's NVIDIA GPUs and the processes using them.

    ``interval_s`` is the expected time between ``sample()`` calls (recorded on
    each snapshot, and the look-back for the first batch of buffered NVML
    utilization samples). With ``require_gpu=True`` a machine where NVML is not
    usable raises :class:`SourceUnavailable` instead of running CPU-only.

    Job context (see :mod:`gputop_hints.sources.live.slurm`): inside a SLURM job (or with
    ``job="ID"``, attaching from outside it) each snapshot carries a
    :class:`~gputop_hints.model.JobInfo` in ``Snapshot.job`` -- with all of the
    job's processes on this node and their CPU %, and the share of its cores
    that processes outside it take -- ``HostSample.allowed_cores`` holds the
    job's cores, and every GPU process row says ``in_job``. By default only
    the job's GPUs and GPU processes are reported; ``all_processes=True``
    (``--all``) reports everything. ``detect_job=False`` ignores the
    environment (a plain node's behaviour even inside a job). A ``job`` that
    SLURM says is not running raises :class:`SourceUnavailable`.
    """

    kind = "live"
    simulated = False

    def __init__(
        self,
        interval_s: float = 1.0,
        *,
        require_gpu: bool = False,
        job: str | None = None,
        all_processes: bool = False,
        detect_job: bool = True,
        environ: Mapping[str, str] | None = None,
        only_visible: bool = False,
    ) -> None:
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._closed = False
        self._hostname = socket.gethostname()
        self._host_cpu = HostCpu()
        self._processes = ProcessTracker()
        self._scanner = procfs.ProcScanner()
        self._launchers = LauncherFinder()
        self._launcher_pids: set[int] = set()
        """Last tick's launchers: read with the GPU processes, for their CPU %."""
        self._gpus = NvmlGpus(interval_s)
        self._nested = procfs.pid_namespace_nested()
        """Whether this monitor runs in a PID namespace below the host's (read once)."""
        self.gpu_unavailable_reason: str | None = None
        try:
            self.gpu_unavailable_reason = self._gpus.start()
        except Exception as exc:  # any failure to start NVML means CPU-only mode
            self._gpus.close()
            self.gpu_unavailable_reason = unavailable_reason(exc)
            log.info("live source without GPUs: %s", self.gpu_unavailable_reason)
        self.driver_version = self._gpus.driver_version
        self.cuda_driver_version = self._gpus.cuda_driver_version
        if self.gpu_unavailable_reason is not None and require_gpu:
            raise SourceUnavailable(self.gpu_unavailable_reason)
        self.all_processes = all_processes
        self.visible: tuple[int, ...] | None = None
        """``--only-visible``: the NVML indices this environment's CUDA_VISIBLE_DEVICES
        names, the only GPUs (and their processes) sampled; None: every GPU."""
        if only_visible:
            from gputop_hints.sources.live.slurm.membership import cuda_visible_devices_to_nvml

            env = os.environ if environ is None else environ
            self.visible = cuda_visible_devices_to_nvml(
                env.get("CUDA_VISIBLE_DEVICES"), self._gpus.gpu_ids(), mig_parent=mig_parent
            )
        self._job: JobView | None = None
        if job is not None or detect_job:
            self._job = JobView.attach(job, environ, self._gpus)
        self.job: JobContext | None = None if self._job is None else self._job.context
        """The attached job (None on a plain node, or with ``detect_job=False``)."""

    # -- Source protocol ---------------------------------------------------------

    def sample(self) -> Snapshot:
        """Take one tick (GPUs, their processes and workers, host CPU)."""
        with self._lock:
            started = time.perf_counter()
            timestamp = time.time()
            self._processes.begin_tick()
            gpus: list[GpuSample] = []
            raw_processes: list[tuple[int, int, NvmlProcess]] = []
            if not self._closed:
                gpus, raw_processes = self._gpus.sample(timestamp)
            if self.visible is not None:
                shown = set(self.visible)
                gpus = [g for g in gpus if g.index in shown]
                raw_processes = [r for r in raw_processes if r[0] in shown]
            job_view = None if self._closed else self._job
            table: procfs.ProcTable | None = None
            if raw_processes or job_view is not None:
                # A job needs the whole host every tick; GPU processes alone
                # need all of /proc only every few seconds (see ProcScanner).
                table = self._scanner.scan(
                    {pid for _, pid, _ in raw_processes} | self._launcher_pids,
                    full=job_view is not None,
                )
            members: frozenset[int] | None = None
            if job_view is not None and table is not None:
                members = job_view.members(table)
            processes = gpu_process_rows(self._processes, raw_processes, table, members)
            processes, launchers = self._launchers.attach(processes)
            launchers = self._measured(launchers, table)
            job: JobInfo | None = None
            if job_view is not None:
                gpus, processes, job = job_view.narrow(
                    gpus,
                    processes,
                    table,
                    members,
                    self._processes,
                    all_processes=self.all_processes,
                )
            self._processes.end_tick()
            host = sample_host(
                self._host_cpu, self._hostname, self.job.cpus if self.job is not None else ()
            )
            reason = self.gpu_unavailable_reason
            if self._closed:
                self._processes = ProcessTracker()  # closed mid-tick: drop what close could not
                if reason is None:
                    reason = "The live source was closed."
            return Snapshot(
                timestamp=timestamp,
                interval_s=self.interval_s,
                host=host,
                gpus=tuple(gpus),
                processes=processes,
                source="live",
                source_detail=self._hostname + self._visible_text(),
                driver_version=self.driver_version,
                cuda_driver_version=self.cuda_driver_version,
                gpu_unavailable_reason=reason,
                sample_duration_s=time.perf_counter() - started,
                job=job,
                launchers=launchers,
                pid_namespace_nested=self._nested,
            )

    def _measured(
        self, launchers: tuple[Launcher, ...], table: procfs.ProcTable | None
    ) -> tuple[Launcher, ...]:
        """The launchers with their own CPU % (a torchrun at 100 % of a core is news; from
        their second tick, as every CPU %)."""
        self._launcher_pids = {launcher.pid for launcher in launchers}
        out = []
        for launcher in launchers:
            reading = self._processes.read(launcher.pid, table, details=False)
            cpu = reading.cpu_percent if reading is not None else None
            out.append(dataclasses.replace(launcher, cpu_percent=cpu))
        return tuple(out)

    def _visible_text(self) -> str:
        if self.visible is None:
            return ""
        shown = ",".join(str(i) for i in sorted(self.visible)) or "none"
        return f", only GPUs {shown} (CUDA_VISIBLE_DEVICES)"

    def close(self) -> None:
        """Drop NVML handles and process caches.

        NVML itself is left initialised: nvitop shuts it down at exit, and other
        code in this process may still be using it. Returns at once, even while
        a tick is stuck in an NVML call that never returns: the GPU workers are
        abandoned (daemon threads), and the process caches are dropped here
        only when no tick is running -- else by that tick when it ends.
        """
        self._closed = True
        self._gpus.close()
        if self._lock.acquire(blocking=False):
            try:
                self._processes = ProcessTracker()
            finally:
                self._lock.release()

    # -- introspection for tests and benchmarks ----------------------------------

    @property
    def tracked_pids(self) -> int:
        """How many pids the CPU-delta cache holds (it must not grow without bound)."""
        return len(self._processes)
