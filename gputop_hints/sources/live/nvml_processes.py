"""The processes with a context on a GPU, through NVML: VRAM per process and
per-process SM % / memory-access % from NVML's per-process sample buffer.

The host side of the same processes (CPU %, workers, state) is
:mod:`~gputop_hints.sources.live.processes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nvitop.api import libnvml

from gputop_hints.sources.live.nvml_mig import NO_INSTANCE, MigSlot
from gputop_hints.sources.live.nvml_query import NO_NEW_SAMPLES, GpuState, int_or_none, query


@dataclass
class NvmlProcess:
    """NVML's view of one process on one GPU at one tick."""

    vram_bytes: int | None = None
    sm_percent: float | None = None
    memory_access_percent: float | None = None
    mig_instance: tuple[int, int] | None = None
    """``(gpu instance id, compute instance id)`` on a GPU in MIG mode."""


def _instance_of(info: Any) -> tuple[int, int] | None:
    """The MIG instance NVML's process info places the process on (None: off MIG)."""
    gi = int_or_none(getattr(info, "gpuInstanceId", None))
    ci = int_or_none(getattr(info, "computeInstanceId", None))
    if gi is None or ci is None or NO_INSTANCE in (gi, ci):
        return None
    return (gi, ci)


def gpu_processes(state: GpuState, timestamp: float, interval_s: float) -> dict[int, NvmlProcess]:
    """Processes with a context on the GPU, with VRAM and per-process utilization.

    Read straight from NVML (through nvitop's ``nvmlQuery``) rather than
    with nvitop's ``Device.processes()``: that builds psutil-backed objects
    for every pid on every call -- about 0.1 ms per process, more than our
    whole 5 ms budget at 64 processes -- and we measure the host side anyway.

    It also settles what nvitop leaves ambiguous: nvitop writes 0 for a pid
    that has no utilization sample, the same number a sample of "idle"
    gives. Here a pid without a sample since the last tick has
    ``sm_percent=None`` (unknown), and a real sample of 0 stays 0.
    """
    procs: dict[int, NvmlProcess] = {}
    for function in (
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetGraphicsRunningProcesses",
    ):
        for info in query(state, function) or ():
            vram = int_or_none(info.usedGpuMemory)  # None under WDDM and MIG
            known = procs.get(info.pid)
            if known is None:
                procs[info.pid] = NvmlProcess(vram_bytes=vram, mig_instance=_instance_of(info))
            elif vram is not None:
                # Compute and graphics contexts of one pid: NVML reports the
                # pid's memory on both lists, so take it once.
                known.vram_bytes = max(vram, known.vram_bytes or 0)
    if state.mig.slots:
        _place_on_instances(state, state.mig.slots, procs)
    if procs and not state.mig.slots:  # NVML has no per-process utilization under MIG
        _process_utilization(state, timestamp, interval_s, procs)
    return procs


def _place_on_instances(
    state: GpuState, slots: Sequence[MigSlot], procs: dict[int, NvmlProcess]
) -> None:
    """On a GPU in MIG mode, ask each MIG device for its processes when the GPU's own
    list does not place every process on an instance (NVML lists the instances'
    processes on the GPU's handle only for privileged callers)."""
    if procs and all(p.mig_instance is not None for p in procs.values()):
        return
    for slot in slots:
        for function in (
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetGraphicsRunningProcesses",
        ):
            if function in state.mig.unsupported:
                continue
            try:
                infos = libnvml.nvmlQuery(function, slot.handle, ignore_errors=False)
            except libnvml.NVMLError_GpuIsLost:
                raise
            except (libnvml.NVMLError_NotSupported, libnvml.NVMLError_NoPermission):
                state.mig.unsupported.add(function)
                continue
            except libnvml.NVMLError:
                continue
            for info in infos or ():
                vram = int_or_none(info.usedGpuMemory)
                known = procs.get(info.pid)
                if known is None:
                    procs[info.pid] = NvmlProcess(vram_bytes=vram, mig_instance=slot.key)
                    continue
                known.mig_instance = known.mig_instance or slot.key
                if vram is not None and known.vram_bytes is None:
                    known.vram_bytes = vram


def _process_utilization(
    state: GpuState, timestamp: float, interval_s: float, procs: Mapping[int, NvmlProcess]
) -> None:
    """Fill SM % / memory-access % from the per-process samples since the last tick.

    A pid with several samples in the interval gets their mean. NotFound is
    NVML's "no sample recorded since then": everyone stays unknown.
    """
    since = state.last_process_sample_us
    if since is None:
        since = int((timestamp - interval_s) * 1e6)
    samples = query(state, "nvmlDeviceGetProcessUtilization", since, not_found=NO_NEW_SAMPLES)
    if samples is None or samples is NO_NEW_SAMPLES:
        return
    sums: dict[int, list[float]] = {}
    newest = since
    for sample in samples:
        ts = int(sample.timeStamp)
        if ts <= since or sample.pid not in procs:
            continue
        newest = max(newest, ts)
        acc = sums.setdefault(sample.pid, [0.0, 0.0, 0.0])
        acc[0] += float(sample.smUtil)
        acc[1] += float(sample.memUtil)
        acc[2] += 1.0
    state.last_process_sample_us = newest
    for pid, (sm, mem, n) in sums.items():
        procs[pid].sm_percent = sm / n
        procs[pid].memory_access_percent = mem / n
