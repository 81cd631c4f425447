"""NVML's GPU Performance Monitoring (GPM): what happens inside "utilization".

On Hopper and newer (H100, H200, B200...) with driver R520+, GPM gives the share of
SM cycles with a warp resident (``NVML_GPM_METRIC_SM_UTIL``), SM occupancy, tensor
pipe activity (``ANY_TENSOR_UTIL``) and DRAM bandwidth use (``DRAM_BW_UTIL``): the
hardware counters DCGM's SMACT, SMOCC, TENSO and DRAMA read, without DCGM's daemon.
The API's semantics: ``nvmlGpmSampleGet`` snapshots the counters, and
``nvmlGpmMetricsGet`` turns two snapshots into each metric over the time between
them. So each tick takes one sample and computes the metrics against the previous
tick's -- two NVML calls per GPU per tick; the first tick has none yet.

Unsupported GPUs and drivers, and sites that restrict profiling to administrators
(``NVML_ERROR_NO_PERMISSION``), give unknown with the reason (never zero); the GPU
is then not asked again. Runs on the GPU's worker thread, like every NVML call.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pynvml
from nvitop.api import libnvml

METRICS: tuple[int, ...] = (
    getattr(pynvml, "NVML_GPM_METRIC_SM_UTIL", 2),
    getattr(pynvml, "NVML_GPM_METRIC_SM_OCCUPANCY", 3),
    getattr(pynvml, "NVML_GPM_METRIC_ANY_TENSOR_UTIL", 5),
    getattr(pynvml, "NVML_GPM_METRIC_DRAM_BW_UTIL", 10),
)
"""The GPM metric ids, in :data:`~gputop_hints.model.PROFILING_FIELDS` order (SM active,
occupancy, tensor, DRAM bandwidth): each fills that GpuSample field, a percentage."""

Profiling = tuple[float | None, float | None, float | None, float | None]
UNKNOWN: Profiling = (None, None, None, None)

NOT_SUPPORTED = "not supported on this GPU or driver (GPM needs Hopper or newer, R520+)"
NO_PERMISSION = (
    "profiling is restricted to administrators on this machine (an admin can allow it: "
    "the nvidia module option NVreg_RestrictProfilingToAdminUsers=0)"
)
NO_API = "this nvidia-ml-py has no GPM API (it needs 11.525 or newer)"

_UNAVAILABLE = {
    "NVMLError_NotSupported": NOT_SUPPORTED,
    "NVMLError_FunctionNotFound": NOT_SUPPORTED,
    "NVMLError_NoPermission": NO_PERMISSION,
}


class GpmReader:
    """One GPU's GPM: two samples, alternately the previous and the current one.

    With ``gpu_instance``, one MIG GPU instance's (``nvmlGpmMigSampleGet`` on its GPU's
    handle) instead of the whole GPU's."""

    def __init__(self, gpu_instance: int | None = None) -> None:
        self.gpu_instance = gpu_instance
        self.reason: str | None = None
        """Why the GPU gives no GPM metrics (None: it does, or has not been asked)."""
        self._probed = False
        self._samples: list[Any] = []
        self._have_previous = False

    def read(self, handle: Any) -> Profiling:
        """This tick's metrics in :data:`METRICS` order (all None: unknown, see
        :attr:`reason`).

        GpuIsLost propagates (the caller gives up on the GPU this tick)."""
        if not self._probed:
            self._probed = True
            self._probe(handle)
        if self.reason is not None or len(self._samples) != 2:
            return UNKNOWN
        previous, current = self._samples
        try:
            if self.gpu_instance is None:
                libnvml.nvmlGpmSampleGet(handle, current)
            else:
                libnvml.nvmlGpmMigSampleGet(handle, self.gpu_instance, current)
            if not self._have_previous:
                self._have_previous = True
                self._samples.reverse()
                return UNKNOWN
            request = pynvml.c_nvmlGpmMetricsGet_t()
            request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = len(METRICS)
            request.sample1 = previous
            request.sample2 = current
            for i, metric in enumerate(METRICS):
                request.metrics[i].metricId = metric
            libnvml.nvmlGpmMetricsGet(request)
        except libnvml.NVMLError_GpuIsLost:
            raise
        except libnvml.NVMLError as exc:
            self._give_up(exc)
            return UNKNOWN
        self._samples.reverse()  # this tick's sample is the next one's previous
        m = request.metrics
        return _percent(m[0]), _percent(m[1]), _percent(m[2]), _percent(m[3])

    def _probe(self, handle: Any) -> None:
        if not hasattr(libnvml, "nvmlGpmQueryDeviceSupport") or not hasattr(
            pynvml, "c_nvmlGpmMetricsGet_t"
        ):
            self.reason = NO_API
            return
        try:
            support = libnvml.nvmlGpmQueryDeviceSupport(handle)
            if not support.isSupportedDevice:
                self.reason = NOT_SUPPORTED
                return
            self._samples = [libnvml.nvmlGpmSampleAlloc(), libnvml.nvmlGpmSampleAlloc()]
        except libnvml.NVMLError_GpuIsLost:
            self._probed = False  # ask again once the GPU is back
            raise
        except libnvml.NVMLError as exc:
            self._give_up(exc)
            if self.reason is None:  # a transient error: probe again next tick
                self._probed = False

    def _give_up(self, exc: Exception) -> None:
        reason = _UNAVAILABLE.get(type(exc).__name__)
        if reason is None:
            return  # a transient error: unknown this tick, asked again the next
        self.reason = reason
        self.close()

    def close(self) -> None:
        """Free the samples (the reader gives no more metrics)."""
        samples, self._samples = self._samples, []
        with contextlib.suppress(libnvml.NVMLError):
            for sample in samples:
                libnvml.nvmlGpmSampleFree(sample)


def _percent(metric: Any) -> float | None:
    """A metric's value when NVML computed it and it is a share (0-100), else None."""
    if metric.nvmlReturn != pynvml.NVML_SUCCESS:
        return None
    value = float(metric.value)
    if not 0.0 <= value <= 100.5:  # rounding may pass 100 by a hair; more is not real
        return None
    return min(value, 100.0)
