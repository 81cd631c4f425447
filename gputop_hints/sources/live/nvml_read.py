"""One tick of one GPU through nvitop's ``api``: :func:`read_gpu`.

Per-device metrics (SM %, memory access %, VRAM, PCIe, temperature, power,
clocks, clock event reasons), the utilization samples NVML buffered since the
last tick, and the processes with a context on the GPU. Runs on the GPU's own
worker thread (see :mod:`.nvml`). Unknown is ``None``. Only the ``nvitop.api``
package is used -- never ``nvitop.tui`` (GPL-3.0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psutil
from nvitop.api import libnvml

from gputop_hints.model import CLOCK_EVENT_REASONS, GpuSample, MigInstance, UtilizationSample
from gputop_hints.sources.live.nvml_processes import NvmlProcess, gpu_processes
from gputop_hints.sources.live.nvml_query import (
    NO_NEW_SAMPLES,
    GpuState,
    float_or_none,
    int_or_none,
    query,
    sample_value,
)

_KNOWN_REASON_BITS = 0
for _bit, _ in CLOCK_EVENT_REASONS:
    _KNOWN_REASON_BITS |= _bit

# NVML renamed "throttle reasons" to "clock event reasons" in R535; older
# drivers (and older nvidia-ml-py) only have the first name.
_CLOCK_REASON_FUNCTIONS = (
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
)

# nvitop reports PCIe throughput in KiB/s (it multiplies by 1024 when
# formatting); NVML's header says "KB/s" without saying which K. We follow
# nvitop, the library whose numbers people will compare ours with side by side,
# and 1024 is what NVML uses for its other "KB" figures. The two readings differ
# by 2.4 %, far below the noise of a throughput sampled over a 20 ms window.
PCIE_BYTES_PER_REPORTED_UNIT = 1024


def decode_clock_event_reasons(mask: int) -> tuple[str, ...]:
    """Names of the bits set in an NVML clock event reasons mask, lowest bit first.

    ``0`` (clocks running free) gives ``()``. Bits newer than this table come
    out as ``unknown_0x...`` rather than being dropped.
    """
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    rest = mask & ~_KNOWN_REASON_BITS
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"unknown_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return tuple(names)


PLAUSIBLE: dict[str, tuple[float, float]] = {
    "sm_percent": (0.0, 100.0),
    "memory_access_percent": (0.0, 100.0),
    "pcie_rx_bytes_per_s": (0.0, 1e12),
    "pcie_tx_bytes_per_s": (0.0, 1e12),
    "pcie_generation": (1, 8),
    "pcie_width": (1, 64),
    "temperature_c": (0.0, 150.0),  # unsigned in NVML: -1 is a wrapper's "no sensor"
    "power_watts": (0.0, 5000.0),
    "power_limit_watts": (1.0, 5000.0),
    "sm_clock_mhz": (1, 10_000),
    "vram_total_bytes": (1, 2**44),
    "vram_used_bytes": (0, 2**44),
}
"""What a reading can physically be. Outside it, it is not a reading: NVML returns
``0xFFFFFFFF`` (4294967295) for "not available" from some calls on some boards and
drivers, a failed call can leave garbage in the out-parameter, and NVML's answers are
unsigned (a negative temperature is something between it and us). Such values are
unknown (None), never shown as 4294967295 °C, and named in ``GpuSample.implausible``
(``--json``: ``implausible``) so the user can see NVML misbehaved."""


def drop_implausible(readings: dict[str, Any]) -> tuple[str, ...]:
    """Make every reading outside :data:`PLAUSIBLE` (or VRAM used above the total)
    None, in place; return the names of those dropped."""
    dropped = []
    for name, (low, high) in PLAUSIBLE.items():
        value = readings.get(name)
        if value is not None and not low <= value <= high:
            readings[name] = None
            dropped.append(name)
    used, total = readings.get("vram_used_bytes"), readings.get("vram_total_bytes")
    if used is not None and total is not None and used > total:
        readings["vram_used_bytes"] = None
        dropped.append("vram_used_bytes")
    return tuple(dropped)


def read_gpu(
    state: GpuState, timestamp: float, interval_s: float
) -> tuple[GpuSample, Mapping[int, NvmlProcess]]:
    """One tick of one GPU: its metrics, and the processes with a context on it.

    ``interval_s`` is the look-back for the first read of the sample buffers.
    GpuIsLost gives a ``lost`` sample; any other surprise propagates.
    """
    if state.handle is None:
        return GpuSample(state.index, state.name, state.uuid, lost=state.lost), {}
    try:
        # The first call doubles as the "is this GPU still there" probe.
        util = query(state, "nvmlDeviceGetUtilizationRates")
        vram_used, vram_total, vram_failed = _vram(state)
        rx = query(state, "nvmlDeviceGetPcieThroughput", libnvml.NVML_PCIE_UTIL_RX_BYTES)
        tx = query(state, "nvmlDeviceGetPcieThroughput", libnvml.NVML_PCIE_UTIL_TX_BYTES)
        link_gen = query(state, "nvmlDeviceGetCurrPcieLinkGeneration")
        link_width = query(state, "nvmlDeviceGetCurrPcieLinkWidth")
        temperature = query(state, "nvmlDeviceGetTemperature", libnvml.NVML_TEMPERATURE_GPU)
        power_mw = query(state, "nvmlDeviceGetPowerUsage")
        power_limit_mw = query(state, "nvmlDeviceGetPowerManagementLimit")
        sm_clock = query(state, "nvmlDeviceGetClockInfo", libnvml.NVML_CLOCK_SM)
        reasons = _clock_event_reasons(state)
        sm_samples = _sm_samples(state, timestamp, interval_s)
        mig_mode, instances = _mig(state)
        procs = gpu_processes(state, timestamp, interval_s)
        active, occupancy, tensor, dram = state.gpm.read(state.handle)
    except libnvml.NVMLError_GpuIsLost:
        # Nothing about it is known now: no metric, so no rule can fire on it.
        return GpuSample(state.index, state.name, state.uuid, lost=True), {}

    def scaled(kib_per_s: Any) -> float | None:
        value = float_or_none(kib_per_s)
        return None if value is None else value * PCIE_BYTES_PER_REPORTED_UNIT

    def watts(milliwatts: Any) -> float | None:
        value = float_or_none(milliwatts)
        return None if value is None else value / 1000.0

    readings: dict[str, Any] = {
        "sm_percent": None if util is None else float_or_none(util.gpu),
        "memory_access_percent": None if util is None else float_or_none(util.memory),
        "vram_used_bytes": vram_used,
        "vram_total_bytes": vram_total,
        "pcie_rx_bytes_per_s": scaled(rx),
        "pcie_tx_bytes_per_s": scaled(tx),
        "pcie_generation": int_or_none(link_gen),
        "pcie_width": int_or_none(link_width),
        "temperature_c": float_or_none(temperature),
        "power_watts": watts(power_mw),
        "power_limit_watts": watts(power_limit_mw),
        "sm_clock_mhz": int_or_none(sm_clock),
    }
    implausible = vram_failed + drop_implausible(readings)
    sample = GpuSample(
        index=state.index,
        name=state.name,
        uuid=state.uuid,
        **readings,
        default_power_limit_watts=watts(state.default_power_limit_mw),
        max_sm_clock_mhz=state.max_sm_clock_mhz,
        throttle_reasons=reasons,
        sm_samples=sm_samples,
        implausible=implausible,
        sm_active_percent=active,
        sm_occupancy_percent=occupancy,
        tensor_active_percent=tensor,
        dram_active_percent=dram,
        profiling_unavailable=state.gpm.reason,
        mig_mode=mig_mode,
        mig_instances=instances,
    )
    return sample, procs


def _mig(state: GpuState) -> tuple[bool, tuple[MigInstance, ...]]:
    """Whether the GPU is in MIG mode, and its instances now (see :mod:`.nvml_mig`)."""
    mode = query(state, "nvmlDeviceGetMigMode")
    current = mode[0] if isinstance(mode, list | tuple) and mode else None
    if current != libnvml.NVML_DEVICE_MIG_ENABLE:
        if state.mig.slots:
            state.mig.clear()
        return False, ()
    gpm = state.gpm.reason is None
    return True, state.mig.read(state.handle, gpm)

_VRAM_FIELDS = ("vram_used_bytes", "vram_total_bytes")


def _vram(state: GpuState) -> tuple[int | None, int | None, tuple[str, ...]]:
    """VRAM used and total this tick, and the fields named as failed.

    A failed ``nvmlDeviceGetMemoryInfo`` (Unknown, or NotSupported from a GPU
    that answered it before) is unknown *this tick* -- never the last figure,
    never the host's memory -- and named in ``implausible``. NotSupported (or a
    total of 0) from a GPU that never answered it is a unified-memory board
    (GB10, DGX Spark): its VRAM is the host's memory, as nvitop reports it.
    """
    try:
        info = libnvml.nvmlQuery("nvmlDeviceGetMemoryInfo", state.handle, ignore_errors=False)
    except libnvml.NVMLError_GpuIsLost:
        raise
    except libnvml.NVMLError_NotSupported:
        info, unified = None, True
    except libnvml.NVMLError:
        info, unified = None, False
    else:
        total = None if info is None else int_or_none(getattr(info, "total", None))
        unified = total == 0
        if total:
            state.vram_answered = True
            return int_or_none(getattr(info, "used", None)), total, ()
    if unified and not state.vram_answered:
        vm = psutil.virtual_memory()
        return max(0, vm.total - vm.available), vm.total, ()
    return None, None, _VRAM_FIELDS


def _clock_event_reasons(state: GpuState) -> tuple[str, ...] | None:
    """Decoded clock event reasons; falls back to the pre-R535 throttle-reasons call."""
    for function in _CLOCK_REASON_FUNCTIONS:
        if function in state.unsupported:
            continue
        mask = query(state, function)
        if function in state.unsupported:
            continue  # the driver lacks it: try the older name
        mask = int_or_none(mask)
        return None if mask is None else decode_clock_event_reasons(mask)
    return None


def _sm_samples(
    state: GpuState, timestamp: float, interval_s: float
) -> tuple[UtilizationSample, ...]:
    """SM % readings the driver buffered since the last tick, each reported once.

    NVML answers NotFound when nothing was recorded after the given
    timestamp -- that is "no new samples", not "unsupported". The first
    call looks back one interval rather than returning the whole buffer.
    """
    since = state.last_sample_us
    if since is None:
        since = int((timestamp - interval_s) * 1e6)
    result = query(
        state,
        "nvmlDeviceGetSamples",
        libnvml.NVML_GPU_UTILIZATION_SAMPLES,
        since,
        not_found=NO_NEW_SAMPLES,
    )
    if result is NO_NEW_SAMPLES:
        state.last_sample_us = since
        return ()
    if result is None:
        return ()
    value_type, raw_samples = result
    newest = since
    out: list[UtilizationSample] = []
    for raw in raw_samples:
        ts = int(raw.timeStamp)
        if ts <= since:
            continue
        value = sample_value(raw.sampleValue, value_type)
        if value is None:
            continue
        out.append(UtilizationSample(ts / 1e6, value))
        newest = max(newest, ts)
    state.last_sample_us = newest
    out.sort(key=lambda s: s.timestamp)
    return tuple(out)
