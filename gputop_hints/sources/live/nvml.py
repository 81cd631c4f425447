"""NVML through nvitop's Apache-2.0 ``api`` package: this machine's GPUs, learnt
once and sampled every tick.

:class:`NvmlGpus` finds the devices and what never changes about them (name,
UUID, max SM clock), then each tick reads per-device metrics (SM %, memory
access %, VRAM, PCIe, temperature, power, clocks, clock event reasons), the
utilization samples NVML buffered since the last tick, and the processes with
a context on each GPU with their VRAM and per-process utilization. MIG
instance ids resolve to their parent GPU here too.

Unknown is ``None``: nvitop's ``NA``, NVML's NotSupported / NoPermission, a
GPU that fell off the bus -- each leaves a ``None`` where the value would be.
A function a GPU does not support is asked once, never again. Only the
``nvitop.api`` package is used -- never ``nvitop.tui`` (GPL-3.0).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from nvitop.api import Device, libnvml

from gputop_hints.model import CLOCK_EVENT_REASONS, GpuSample, UtilizationSample
from gputop_hints.sources.live.nvml_processes import NvmlProcess, gpu_processes
from gputop_hints.sources.live.nvml_query import (
    NO_NEW_SAMPLES,
    GpuState,
    float_or_none,
    int_or_none,
    known,
    learn_static,
    query,
    sample_value,
)
from gputop_hints.sources.live.slurm import GpuId

log = logging.getLogger(__name__)

NVITOP_LIBNVML_LOGGER = "nvitop.api.libnvml"

DEMO_HINT = "Try --demo to see the monitor with simulated GPUs."

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


@contextlib.contextmanager
def _quiet_nvitop_init() -> Iterator[None]:
    """Silence libnvml's multi-line "FATAL ERROR" log while probing for NVML.

    nvitop logs it at CRITICAL, which Python's last-resort handler prints to
    stderr -- over the terminal the TUI is about to take. We report the same
    fact ourselves, once, in ``gpu_unavailable_reason``.
    """
    logger = logging.getLogger(NVITOP_LIBNVML_LOGGER)
    was_disabled = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was_disabled


def unavailable_reason(exc: BaseException) -> str:
    """A specific, actionable sentence for why NVML could not be used."""
    if isinstance(exc, libnvml.NVMLError_LibraryNotFound):
        lib = "nvml.dll" if sys.platform == "win32" else "libnvidia-ml.so.1"
        return (
            f"NVML could not be loaded ({lib} not found): no NVIDIA driver on this machine. "
            + DEMO_HINT
        )
    if isinstance(exc, libnvml.NVMLError_DriverNotLoaded):
        return (
            "NVML is installed but the NVIDIA kernel driver is not loaded "
            "(no /dev/nvidia* devices or the module failed to load). " + DEMO_HINT
        )
    if isinstance(exc, libnvml.NVMLError_LibRmVersionMismatch):
        return (
            "NVML and the loaded NVIDIA kernel driver have different versions "
            "(the driver was upgraded without reloading the kernel module): "
            "reboot or reload the nvidia modules."
        )
    if isinstance(exc, libnvml.NVMLError_NoPermission):
        return (
            "NVML refused access to the NVIDIA devices: permission denied "
            "(no permission on /dev/nvidia*). Check that your user may read and write "
            "/dev/nvidia* (ls -l /dev/nvidia*; often the 'video' group) and, inside a "
            "container, that the GPUs are passed through (docker run --gpus all, "
            "the NVIDIA container toolkit)."
        )
    if isinstance(exc, libnvml.NVMLError):
        return f"NVML failed to initialise ({exc}). " + DEMO_HINT
    return f"NVML could not be used ({type(exc).__name__}: {exc}). " + DEMO_HINT


def mig_parent(mig_uuid: str) -> int | None:
    """NVML index of the GPU a ``MIG-<uuid>`` instance lives on."""
    try:
        handle = libnvml.nvmlQuery("nvmlDeviceGetHandleByUUID", mig_uuid, ignore_errors=False)
        parent = libnvml.nvmlQuery(
            "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", handle, ignore_errors=False
        )
        return int_or_none(libnvml.nvmlQuery("nvmlDeviceGetIndex", parent))
    except libnvml.NVMLError:
        return None


# -- the GPUs --------------------------------------------------------------------


class NvmlGpus:
    """This machine's GPUs: found by :meth:`start`, read by :meth:`sample` each tick.

    ``interval_s`` is the expected time between ticks: the look-back for the
    first read of NVML's sample buffers.
    """

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._gpus: list[GpuState] = []
        self._logged_failures: set[tuple[int, str]] = set()
        self.driver_version: str | None = None
        self.cuda_driver_version: str | None = None

    def start(self) -> str | None:
        """Find the GPUs; why there are none to show when NVML works but sees none.

        Raises whatever NVML raised when it cannot be used at all, or cannot
        count the GPUs (:func:`unavailable_reason` turns that into a
        sentence). A GPU that fails on its own -- lost, or one transient
        error -- is listed with what is known, and asked again next tick: it
        does not hide the healthy GPUs.
        """
        with _quiet_nvitop_init():
            # Not Device.count(): it answers 0 for any error, and "no GPUs" is
            # the wrong story when NVML said "no permission".
            count = libnvml.nvmlQuery("nvmlDeviceGetCount", ignore_errors=False)
        self.driver_version = known(Device.driver_version())
        self.cuda_driver_version = known(Device.cuda_driver_version())
        if count <= 0:
            return (
                f"NVML works (driver {self.driver_version or 'unknown'}) but sees no GPUs: "
                "none is installed, or none is visible here (container device mapping, "
                "SLURM --gres, cgroup device rules)."
            )
        for index in range(count):
            state = GpuState(index, None, None, None, None)
            self._gpus.append(state)
            self._learn_static(state)
        return None

    def close(self) -> None:
        """Forget every GPU: later ticks report none."""
        self._gpus = []

    def gpu_ids(self) -> list[GpuId]:
        """Index, UUID and minor number of each GPU: what SLURM's GPU ids map onto."""
        return [GpuId(s.index, s.uuid, self._minor_number(s)) for s in self._gpus]

    def _minor_number(self, state: GpuState) -> int | None:
        if state.handle is None:
            return None
        try:
            return int_or_none(query(state, "nvmlDeviceGetMinorNumber"))
        except libnvml.NVMLError:  # lost since start-up: unknown, like its other facts
            return None

    def _learn_static(self, state: GpuState) -> None:
        """:func:`learn_static`, with a failure kept to this GPU (and logged once)."""
        try:
            learn_static(state)
        except Exception as exc:  # one GPU's surprise must not hide the others
            self._log_gpu_failure(state, exc, "its name and values are unknown until it answers")

    def sample(
        self, timestamp: float
    ) -> tuple[list[GpuSample], list[tuple[int, int, NvmlProcess]]]:
        """Every GPU now, and ``(gpu index, pid, NVML's view)`` for each process on one.

        A surprise on one GPU leaves that GPU's values unknown this tick (logged
        once per GPU and kind of failure) and does not blank the others.
        """
        gpus: list[GpuSample] = []
        processes: list[tuple[int, int, NvmlProcess]] = []
        for state in self._gpus:
            if state.static_missing:  # at most one more try per GPU and tick
                self._learn_static(state)
            try:
                sample, procs = self._sample_gpu(state, timestamp)
            except Exception as exc:  # a surprise on one GPU must not blank the rest
                self._log_gpu_failure(state, exc, "its values are unknown this tick")
                sample, procs = GpuSample(state.index, state.name, state.uuid), {}
            gpus.append(sample)
            processes.extend((state.index, pid, p) for pid, p in procs.items())
        return gpus, processes

    def _log_gpu_failure(self, state: GpuState, exc: Exception, consequence: str) -> None:
        key = (state.index, type(exc).__name__)
        if key not in self._logged_failures:  # once per GPU and kind, not every tick
            self._logged_failures.add(key)
            if isinstance(exc, libnvml.NVMLError):  # NVML's own word: no traceback needed
                log.warning("GPU %d: NVML said %s; %s", state.index, exc, consequence)
            else:
                log.exception("GPU %d: %s", state.index, consequence)

    def _sample_gpu(
        self, state: GpuState, timestamp: float
    ) -> tuple[GpuSample, Mapping[int, NvmlProcess]]:
        if state.handle is None:
            return GpuSample(state.index, state.name, state.uuid, lost=state.lost), {}
        try:
            # The first call doubles as the "is this GPU still there" probe.
            util = query(state, "nvmlDeviceGetUtilizationRates")
            mem = state.device.memory_info()  # nvitop: handles unified-memory boards
            rx = query(state, "nvmlDeviceGetPcieThroughput", libnvml.NVML_PCIE_UTIL_RX_BYTES)
            tx = query(state, "nvmlDeviceGetPcieThroughput", libnvml.NVML_PCIE_UTIL_TX_BYTES)
            link_gen = query(state, "nvmlDeviceGetCurrPcieLinkGeneration")
            link_width = query(state, "nvmlDeviceGetCurrPcieLinkWidth")
            temperature = query(state, "nvmlDeviceGetTemperature", libnvml.NVML_TEMPERATURE_GPU)
            power_mw = query(state, "nvmlDeviceGetPowerUsage")
            power_limit_mw = query(state, "nvmlDeviceGetPowerManagementLimit")
            sm_clock = query(state, "nvmlDeviceGetClockInfo", libnvml.NVML_CLOCK_SM)
            reasons = self._clock_event_reasons(state)
            sm_samples = self._sm_samples(state, timestamp)
            procs = gpu_processes(state, timestamp, self.interval_s)
        except libnvml.NVMLError_GpuIsLost:
            # Nothing about it is known now: no metric, so no rule can fire on it.
            return GpuSample(state.index, state.name, state.uuid, lost=True), {}

        def scaled(kib_per_s: Any) -> float | None:
            value = float_or_none(kib_per_s)
            return None if value is None else value * PCIE_BYTES_PER_REPORTED_UNIT

        def watts(milliwatts: Any) -> float | None:
            value = float_or_none(milliwatts)
            return None if value is None else value / 1000.0

        sample = GpuSample(
            index=state.index,
            name=state.name,
            uuid=state.uuid,
            sm_percent=None if util is None else float_or_none(util.gpu),
            memory_access_percent=None if util is None else float_or_none(util.memory),
            vram_used_bytes=int_or_none(mem.used),
            vram_total_bytes=int_or_none(mem.total),
            pcie_rx_bytes_per_s=scaled(rx),
            pcie_tx_bytes_per_s=scaled(tx),
            pcie_generation=int_or_none(link_gen),
            pcie_width=int_or_none(link_width),
            temperature_c=float_or_none(temperature),
            power_watts=watts(power_mw),
            power_limit_watts=watts(power_limit_mw),
            default_power_limit_watts=watts(state.default_power_limit_mw),
            sm_clock_mhz=int_or_none(sm_clock),
            max_sm_clock_mhz=state.max_sm_clock_mhz,
            throttle_reasons=reasons,
            sm_samples=sm_samples,
        )
        return sample, procs

    def _clock_event_reasons(self, state: GpuState) -> tuple[str, ...] | None:
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

    def _sm_samples(self, state: GpuState, timestamp: float) -> tuple[UtilizationSample, ...]:
        """SM % readings the driver buffered since the last tick, each reported once.

        NVML answers NotFound when nothing was recorded after the given
        timestamp -- that is "no new samples", not "unsupported". The first
        call looks back one interval rather than returning the whole buffer.
        """
        since = state.last_sample_us
        if since is None:
            since = int((timestamp - self.interval_s) * 1e6)
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
