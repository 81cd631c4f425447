"""The host side of a tick: CPU busy % per core, iowait, memory, load and the
cores this monitor (or the job it follows) may use.

No NVML here, so the SLURM helpers can share :func:`allowed_cores` without
loading it.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import psutil

from gputop_hints.model import HostSample


class HostCpu:
    """Per-core busy % and iowait % from deltas of ``psutil.cpu_times(percpu=True)``.

    We keep our own previous reading instead of using ``psutil.cpu_percent``,
    whose module-global state any other caller in the process would disturb.
    Busy = everything but idle and iowait, as ``psutil.cpu_percent`` counts it.
    """

    def __init__(self) -> None:
        self._last: list[Any] | None = None

    def sample(self) -> tuple[tuple[float | None, ...], float | None]:
        """``(busy % per core, iowait % of all cores)`` since the previous call.

        The first call has nothing to compare with: every core is None, as is
        iowait (also None where the platform does not count iowait).
        """
        now = psutil.cpu_times(percpu=True)
        last, self._last = self._last, now
        if last is None or len(last) != len(now):
            return (None,) * len(now), None
        per_core: list[float | None] = []
        total_all = 0.0
        iowait_all = 0.0
        for before, after in zip(last, now, strict=True):
            total = _cpu_total(after) - _cpu_total(before)
            idle = after.idle - before.idle
            iowait = getattr(after, "iowait", 0.0) - getattr(before, "iowait", 0.0)
            if total <= 0:
                per_core.append(None)
                continue
            busy = total - idle - iowait
            per_core.append(min(100.0, max(0.0, busy / total * 100.0)))
            total_all += total
            iowait_all += max(0.0, iowait)
        iowait_percent = iowait_all / total_all * 100.0 if total_all > 0 else None
        if not hasattr(now[0], "iowait"):
            iowait_percent = None
        return tuple(per_core), iowait_percent


def _cpu_total(times: Any) -> float:
    # guest time is already counted in user/nice on Linux.
    total = float(sum(times))
    return total - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)


def allowed_cores() -> tuple[int, ...]:
    """The cores this process may run on (its CPU affinity), sorted.

    Where affinity cannot be read, every core the machine has.
    """
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return tuple(range(os.cpu_count() or 1))


def sample_host(host_cpu: HostCpu, hostname: str, job_cores: tuple[int, ...] = ()) -> HostSample:
    """One tick's :class:`~gputop_hints.model.HostSample`.

    ``job_cores`` are the cores of the job being followed; when empty (no job,
    or nothing told its cores) the allowed cores are this process's own.
    """
    per_core, iowait = host_cpu.sample()
    memory_used: int | None = None
    memory_total: int | None = None
    with contextlib.suppress(OSError, RuntimeError):
        vm = psutil.virtual_memory()
        memory_total = vm.total
        # "used" as people mean it: what applications hold and cannot give back.
        memory_used = vm.total - vm.available
    load: tuple[float, float, float] | None = None
    with contextlib.suppress(OSError, AttributeError):
        load = os.getloadavg()
    return HostSample(
        hostname=hostname,
        cpu_percent_per_core=per_core,
        allowed_cores=job_cores or allowed_cores(),
        iowait_percent=iowait,
        memory_used_bytes=memory_used,
        memory_total_bytes=memory_total,
        load_average=load,
    )
