"""How the live source calls NVML: one call through nvitop's ``nvmlQuery``,
unknown as ``None``, what a GPU does not support remembered per GPU, and
what never changes about a GPU learnt -- and re-asked until it is known.

Shared by :mod:`~gputop_hints.sources.live.nvml` (devices) and
:mod:`~gputop_hints.sources.live.nvml_processes` (processes on them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nvitop.api import Device, libnvml

from gputop_hints.sources.live.nvml_gpm import GpmReader
from gputop_hints.sources.live.nvml_mig import MigReader

_MISSING: Any = object()
"""Default handed to ``nvmlQuery`` so a function the driver lacks is told apart."""

NO_NEW_SAMPLES: Any = object()
"""What :func:`query` answers for NVML's NotFound when the caller asks to tell it apart."""


def known(value: Any) -> Any:
    """nvitop's ``NA`` (the string ``'N/A'``) and None both mean unknown."""
    if value is None or (isinstance(value, str) and value == "N/A"):
        return None
    return value


def int_or_none(value: Any) -> int | None:
    """A known number as an int; None for unknown and for anything not a number."""
    value = known(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def float_or_none(value: Any) -> float | None:
    """A known number as a float; None for unknown and for anything not a number."""
    value = known(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@dataclass
class GpuState:
    """What we remember about one GPU between ticks."""

    index: int
    device: Any
    """nvitop ``PhysicalDevice`` (None when NVML would not give a handle)."""
    handle: Any
    name: str | None
    uuid: str | None
    max_sm_clock_mhz: int | None = None
    default_power_limit_mw: int | None = None
    """The board's default power limit: a lower enforced limit was set by an admin."""
    unsupported: set[str] = field(default_factory=set)
    """NVML functions that answered NotSupported / NoPermission / FunctionNotFound:
    asked once, never again (they do not start working mid-run)."""
    last_sample_us: int | None = None
    """Timestamp of the newest buffered utilization sample already reported."""
    last_process_sample_us: int | None = None
    """Timestamp of the newest per-process utilization sample already used."""
    lost: bool = False
    """NVML said GpuIsLost when asked for a handle: the GPU fell off the bus."""
    vram_answered: bool = False
    """``nvmlDeviceGetMemoryInfo`` gave a real figure on this GPU once: a later
    NotSupported is a failed reading, not a unified-memory board."""
    gpm: GpmReader = field(default_factory=GpmReader)
    """The GPU's GPM samples (SM active, occupancy, tensor, DRAM bandwidth)."""
    mig: MigReader = field(default_factory=MigReader)
    """Its MIG instances, when it is in MIG mode."""

    @property
    def static_missing(self) -> bool:
        """Whether something :func:`learn_static` asks for is still unknown and worth asking.

        What the GPU answered NotSupported / NoPermission for is not: it will
        not start working mid-run.
        """
        if self.handle is None:
            return True
        if (
            self.name is not None
            and self.uuid is not None
            and self.max_sm_clock_mhz is not None
            and self.default_power_limit_mw is not None
        ):
            return False  # the usual case, every tick: no tuple built
        return any(
            value is None and function not in self.unsupported
            for value, function in (
                (self.name, "nvmlDeviceGetName"),
                (self.uuid, "nvmlDeviceGetUUID"),
                (self.max_sm_clock_mhz, "nvmlDeviceGetMaxClockInfo"),
                (self.default_power_limit_mw, "nvmlDeviceGetPowerManagementDefaultLimit"),
            )
        )


def query(state: GpuState, function: str, *args: Any, not_found: Any = None) -> Any:
    """One NVML call on ``state``'s GPU; None when unknown this tick.

    NotSupported, NoPermission and FunctionNotFound are remembered so the
    call is never made again for this GPU. GpuIsLost propagates: the caller
    gives up on the GPU for this tick. NotFound -- for the sample buffers,
    "nothing recorded since then" -- answers ``not_found``.
    """
    if function in state.unsupported:
        return None
    try:
        value = libnvml.nvmlQuery(
            function,
            state.handle,
            *args,
            default=_MISSING,
            ignore_errors=False,
            ignore_function_not_found=True,
        )
    except libnvml.NVMLError_NotFound:
        return not_found
    except (libnvml.NVMLError_NotSupported, libnvml.NVMLError_NoPermission):
        state.unsupported.add(function)
        return None
    except libnvml.NVMLError_GpuIsLost:
        raise
    except libnvml.NVMLError:
        return None
    if value is _MISSING:
        state.unsupported.add(function)
        return None
    return value


def _text(value: Any) -> str | None:
    """A name or UUID as NVML gave it; None for unknown."""
    value = known(value)
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return value if isinstance(value, str) and value else None


def learn_static(state: GpuState) -> None:
    """Ask NVML for whatever is still unknown of ``state``'s handle, name, UUID, max clock
    and default power limit.

    Called at start-up and, while :attr:`GpuState.static_missing`, once a
    tick after that: one transient NVML error (``Unknown``, a GPU briefly
    lost) must not blank a GPU's name or values for the whole session.
    Raises NVML's error when the handle cannot be had (``state.lost`` says
    whether the GPU is lost) or the GPU is lost mid-way; the caller keeps
    that to this GPU.
    """
    if state.handle is None:
        try:
            libnvml.nvmlQuery("nvmlDeviceGetHandleByIndex", state.index, ignore_errors=False)
        except libnvml.NVMLError_GpuIsLost:
            state.lost = True
            raise
        # nvitop's device object reads what needs its care (unified-memory boards).
        device = Device(state.index)
        if device.handle is None:  # lost or failed again between the two calls
            return
        state.device, state.handle, state.lost = device, device.handle, False
    if state.name is None:
        state.name = _text(query(state, "nvmlDeviceGetName"))
    if state.uuid is None:
        state.uuid = _text(query(state, "nvmlDeviceGetUUID"))
    if state.max_sm_clock_mhz is None:
        state.max_sm_clock_mhz = int_or_none(
            query(state, "nvmlDeviceGetMaxClockInfo", libnvml.NVML_CLOCK_SM)
        )
    if state.default_power_limit_mw is None:
        state.default_power_limit_mw = int_or_none(
            query(state, "nvmlDeviceGetPowerManagementDefaultLimit")
        )


def sample_value(value: Any, value_type: int) -> float | None:
    """Read an ``nvmlValue_t`` union by its declared type."""
    attribute = {
        0: "dVal",
        1: "uiVal",
        2: "ulVal",
        3: "ullVal",
        4: "sllVal",
        5: "siVal",
        6: "usVal",
    }.get(value_type)
    if attribute is None:
        return None
    return float(getattr(value, attribute))
