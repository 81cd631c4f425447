"""Job context: which batch job the monitor is about, and what that job was given.

On a shared SLURM node people attach with ``srun --jobid=<id> --overlap --pty
gputop-hints``; the monitor must then show *their* job -- its GPUs, its cores,
its processes -- and the hints must reason about the cores the job was
allocated, not the whole machine. This package finds all of that, without
Textual and without NVML (GPU identifiers come in as plain data):

* :mod:`.detect` -- :func:`detect_job`: the job from the environment
  (``SLURM_JOB_ID`` ...), a cgroup path, or ``--job ID`` given outside it,
  with its cores and GPUs.
* :mod:`.membership` -- :class:`JobMembership` (which pids belong to the job),
  the job's GPUs as NVML indices, and :class:`ForeignLoad` (how much of the
  job's cores processes *outside* the job take).
* :mod:`.parse` -- pure parsers: ``--job`` ids, cpuset lists, ``SLURM_JOB_CPUS_PER_NODE``,
  cgroup files, ``scontrol`` output.
* :mod:`.scontrol` -- the ``scontrol`` subprocess calls.
* :mod:`.proc_files` -- readers of ``/proc/<pid>/cgroup`` and ``environ``.

Every reader takes its roots (``/proc``, ``/sys/fs/cgroup``) and environment as
arguments so tests can point them at fixture files. The names below are the
package's public surface; import them from here (each loads its submodule on
first use).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gputop_hints.sources.live.slurm.detect import (
        CGROUP_ROOT,
        JobContext,
        cgroup_cpuset,
        detect_job,
    )
    from gputop_hints.sources.live.slurm.membership import (
        INFRASTRUCTURE_NAMES,
        ForeignLoad,
        GpuId,
        JobMembership,
        cuda_visible_devices_to_nvml,
        slurm_gpus_to_nvml,
    )
    from gputop_hints.sources.live.slurm.parse import (
        BadJobId,
        CgroupEntry,
        format_cpu_list,
        job_from_cgroup,
        parse_cpu_list,
        parse_cpus_per_node,
        parse_gpu_ids,
        parse_job_id,
        parse_proc_cgroup,
        parse_scontrol_job,
    )
    from gputop_hints.sources.live.slurm.proc_files import (
        PROC,
        environ_job_id,
        may_run_in_job,
        read_environ,
        read_proc_cgroup,
    )
    from gputop_hints.sources.live.slurm.scontrol import (
        SCONTROL_TIMEOUT_S,
        ScontrolUnanswered,
        job_exists,
        scontrol_show_job,
    )

_EXPORTS = {
    "BadJobId": "parse",
    "CGROUP_ROOT": "detect",
    "CgroupEntry": "parse",
    "ForeignLoad": "membership",
    "GpuId": "membership",
    "INFRASTRUCTURE_NAMES": "membership",
    "JobContext": "detect",
    "JobMembership": "membership",
    "PROC": "proc_files",
    "SCONTROL_TIMEOUT_S": "scontrol",
    "ScontrolUnanswered": "scontrol",
    "cgroup_cpuset": "detect",
    "cuda_visible_devices_to_nvml": "membership",
    "detect_job": "detect",
    "environ_job_id": "proc_files",
    "format_cpu_list": "parse",
    "job_exists": "scontrol",
    "job_from_cgroup": "parse",
    "may_run_in_job": "proc_files",
    "parse_cpu_list": "parse",
    "parse_cpus_per_node": "parse",
    "parse_gpu_ids": "parse",
    "parse_job_id": "parse",
    "parse_proc_cgroup": "parse",
    "parse_scontrol_job": "parse",
    "read_environ": "proc_files",
    "read_proc_cgroup": "proc_files",
    "scontrol_show_job": "scontrol",
    "slurm_gpus_to_nvml": "membership",
}
"""Where each public name lives: imported on first use, so a plain node (which
needs only :func:`detect_job`) never loads the parsers of scontrol and membership."""


__all__ = [
    "CGROUP_ROOT",
    "INFRASTRUCTURE_NAMES",
    "PROC",
    "SCONTROL_TIMEOUT_S",
    "BadJobId",
    "CgroupEntry",
    "ForeignLoad",
    "GpuId",
    "JobContext",
    "JobMembership",
    "ScontrolUnanswered",
    "cgroup_cpuset",
    "cuda_visible_devices_to_nvml",
    "detect_job",
    "environ_job_id",
    "format_cpu_list",
    "job_exists",
    "job_from_cgroup",
    "may_run_in_job",
    "parse_cpu_list",
    "parse_cpus_per_node",
    "parse_gpu_ids",
    "parse_job_id",
    "parse_proc_cgroup",
    "parse_scontrol_job",
    "read_environ",
    "read_proc_cgroup",
    "scontrol_show_job",
    "slurm_gpus_to_nvml",
]


def __getattr__(name: str) -> object:
    """A public name, from its submodule on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
