"""A GPU in MIG mode: its instances, read every tick on the GPU's worker.

A GPU partitioned with MIG (A100, H100, H200, B200...) runs its work in MIG
instances: a GPU instance (its own SMs and memory slice) with a compute instance in
it, which CUDA sees as a device of its own (``MIG-...``). NVML answers NotSupported
for device-wide utilization and for per-process utilization in MIG mode; memory is
known per instance (``nvmlDeviceGetMemoryInfo`` on the MIG device handle), and on
Hopper and newer GPM gives each GPU instance's SM activity (``nvmlGpmMigSampleGet``).

Each tick: the MIG mode (one call; a GPU without MIG answers NotSupported once and is
not asked again), then for each MIG device slot its handle, instance ids and memory.
What never changes for an instance (its profile, from the MIG device's name, and its
UUID) is asked once per instance. Unknown is ``None``, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nvitop.api import libnvml

from gputop_hints.model import MigInstance
from gputop_hints.sources.live.nvml_gpm import GpmReader
from gputop_hints.text import pattern

MAX_SLOTS = 7
"""MIG devices a GPU can hold at most (seven 1g instances on an A100/H100)."""

NO_INSTANCE = 0xFFFFFFFF
"""NVML's gpuInstanceId / computeInstanceId for a process on a GPU not in MIG mode."""

_PROFILE = r"(?i)\bMIG\s+([0-9]+g\.[0-9]+gb(?:\+[a-z]+)?)\s*$"
"""The profile at the end of a MIG device's name ("NVIDIA A100-SXM4-40GB MIG 1g.5gb")."""

_UNKNOWN: Any = object()


def profile_from_name(name: Any) -> str | None:
    """The MIG profile ("1g.10gb", "3g.40gb", "1g.10gb+me") a MIG device's name ends
    with; None when it does not end with one."""
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    if not isinstance(name, str):
        return None
    match = pattern(_PROFILE).search(name)
    return None if match is None else match.group(1).lower()


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return int(value)


@dataclass
class MigSlot:
    """One MIG device as this tick found it: its ids and handle (its processes are
    asked on the handle when the GPU's own list does not place them)."""

    key: tuple[int, int]
    handle: Any


class MigReader:
    """One GPU's MIG instances, across ticks."""

    def __init__(self) -> None:
        self.unsupported: set[str] = set()
        """Functions a MIG device answered NotSupported / NoPermission for: not asked again."""
        self._slots: int | None = None
        self._static: dict[tuple[int, int], tuple[str | None, str | None]] = {}
        self._gpm: dict[int, GpmReader] = {}
        self.slots: list[MigSlot] = []
        """This tick's MIG devices (empty when not in MIG mode)."""

    def _ask(self, function: str, handle: Any, *args: Any) -> Any:
        """One NVML call; None when unknown (remembered when NotSupported)."""
        if function in self.unsupported:
            return None
        try:
            return libnvml.nvmlQuery(
                function,
                handle,
                *args,
                default=_UNKNOWN,
                ignore_errors=False,
                ignore_function_not_found=True,
            )
        except libnvml.NVMLError_GpuIsLost:
            raise
        except libnvml.NVMLError_NotFound:
            return None
        except (libnvml.NVMLError_NotSupported, libnvml.NVMLError_NoPermission):
            self.unsupported.add(function)
            return None
        except libnvml.NVMLError:
            return None

    def read(self, handle: Any, gpm: bool) -> tuple[MigInstance, ...]:
        """The instances of the GPU behind ``handle`` (in MIG mode) now, by GPU instance
        id; :attr:`slots` holds their handles. ``gpm``: the GPU has GPM (ask each GPU
        instance's SM activity). GpuIsLost propagates."""
        if self._slots is None:
            count = _int(self._ask("nvmlDeviceGetMaxMigDeviceCount", handle))
            self._slots = MAX_SLOTS if count is None else max(0, min(count, MAX_SLOTS))
        slots: list[MigSlot] = []
        instances: list[MigInstance] = []
        gi_active: dict[int, float | None] = {}
        for index in range(self._slots):
            mig = self._ask("nvmlDeviceGetMigDeviceHandleByIndex", handle, index)
            if mig is None or mig is _UNKNOWN:
                continue
            gi = _int(self._ask("nvmlDeviceGetGpuInstanceId", mig))
            ci = _int(self._ask("nvmlDeviceGetComputeInstanceId", mig))
            if gi is None or ci is None:
                continue
            key = (gi, ci)
            static = self._static.get(key)
            if static is None:
                uuid = self._ask("nvmlDeviceGetUUID", mig)
                static = (
                    profile_from_name(self._ask("nvmlDeviceGetName", mig)),
                    uuid if isinstance(uuid, str) and uuid else None,
                )
                self._static[key] = static
            used, total = self._memory(mig)
            util = self._ask("nvmlDeviceGetUtilizationRates", mig)
            sm = getattr(util, "gpu", None) if util not in (None, _UNKNOWN) else None
            sm = float(sm) if isinstance(sm, int | float) and 0 <= sm <= 100 else None
            active = None
            if gpm:
                if gi not in gi_active:  # once per GPU instance, whatever its compute instances
                    reader = self._gpm.setdefault(gi, GpmReader(gpu_instance=gi))
                    gi_active[gi] = reader.read(handle)[0]
                active = gi_active[gi]
            slots.append(MigSlot(key, mig))
            instances.append(
                MigInstance(
                    gpu_instance_id=gi,
                    compute_instance_id=ci,
                    profile=static[0],
                    vram_used_bytes=used,
                    vram_total_bytes=total,
                    sm_percent=sm,
                    sm_active_percent=active,
                    uuid=static[1],
                )
            )
        for gone in set(self._gpm) - set(gi_active):  # destroyed: free its samples
            self._gpm.pop(gone).close()
        self.slots = slots
        instances.sort(key=lambda m: m.key)
        return tuple(instances)

    def _memory(self, mig: Any) -> tuple[int | None, int | None]:
        info = self._ask("nvmlDeviceGetMemoryInfo", mig)
        if info is None or info is _UNKNOWN:
            return None, None
        used, total = _int(getattr(info, "used", None)), _int(getattr(info, "total", None))
        if not total or used is None or not 0 <= used <= total:
            return None, total or None
        return used, total

    def clear(self) -> None:
        """Not in MIG mode (now): no instances."""
        self.slots = []
        for reader in self._gpm.values():
            reader.close()
        self._gpm.clear()
