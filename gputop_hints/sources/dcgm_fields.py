"""DCGM's field names as dcgm-exporter publishes them, and what each is in our model.

Shared by the two readers of dcgm-exporter's series: the live/range Prometheus
source (:mod:`gputop_hints.sources.prometheus.job`) and the reader of saved
``/metrics`` scrapes (:mod:`gputop_hints.sources.files.dcgm_exporter`), so both
read a series the same way. Names and units are dcgm-exporter's
(``etc/default-counters.csv``, ``etc/dcp-metrics-included.csv``): framebuffer
sizes in MiB, the ``DCGM_FI_PROF_*`` activity fields as ratios 0-1, PCIe bytes
per second.
"""

from __future__ import annotations

MIB = 1024 * 1024

VRAM_FREE = "vram_free_bytes"
"""Not a GpuSample field: dcgm-exporter gives free framebuffer, not the total; the
total is used + free + reserved (:func:`with_totals`)."""
VRAM_RESERVED = "vram_reserved_bytes"
"""Not a GpuSample field: the framebuffer the driver reserves (``DCGM_FI_DEV_FB_RESERVED``,
~0.5 GiB on an L4), in neither used nor free; part of the total."""
POWER_MGMT_LIMIT = "power_mgmt_limit_watts"
"""Not a GpuSample field: the management power limit, the power limit where the
exporter gives no enforced limit (``DCGM_FI_DEV_ENFORCED_POWER_LIMIT``)."""

DCGM_FIELDS: dict[str, tuple[str, float]] = {
    "sm_percent": ("DCGM_FI_DEV_GPU_UTIL", 1.0),
    "memory_access_percent": ("DCGM_FI_DEV_MEM_COPY_UTIL", 1.0),
    "vram_used_bytes": ("DCGM_FI_DEV_FB_USED", MIB),
    VRAM_FREE: ("DCGM_FI_DEV_FB_FREE", MIB),
    VRAM_RESERVED: ("DCGM_FI_DEV_FB_RESERVED", MIB),
    "pcie_rx_bytes_per_s": ("DCGM_FI_PROF_PCIE_RX_BYTES", 1.0),
    "pcie_tx_bytes_per_s": ("DCGM_FI_PROF_PCIE_TX_BYTES", 1.0),
    "power_watts": ("DCGM_FI_DEV_POWER_USAGE", 1.0),
    "power_limit_watts": ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 1.0),
    POWER_MGMT_LIMIT: ("DCGM_FI_DEV_POWER_MGMT_LIMIT", 1.0),
    "sm_clock_mhz": ("DCGM_FI_DEV_SM_CLOCK", 1.0),
    "pcie_generation": ("DCGM_FI_DEV_PCIE_LINK_GEN", 1.0),
    "pcie_width": ("DCGM_FI_DEV_PCIE_LINK_WIDTH", 1.0),
    "temperature_c": ("DCGM_FI_DEV_GPU_TEMP", 1.0),
    "sm_active_percent": ("DCGM_FI_PROF_SM_ACTIVE", 100.0),
    "sm_occupancy_percent": ("DCGM_FI_PROF_SM_OCCUPANCY", 100.0),
    "tensor_active_percent": ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 100.0),
    "dram_active_percent": ("DCGM_FI_PROF_DRAM_ACTIVE", 100.0),
}
"""GpuSample field (or :data:`VRAM_FREE`, :data:`VRAM_RESERVED`, :data:`POWER_MGMT_LIMIT`)
-> (dcgm-exporter metric name, scale to the field's unit)."""

RATIO_FIELDS = frozenset(f for f, (_m, scale) in DCGM_FIELDS.items() if scale == 100.0)
"""The fields read from a 0-1 ratio (a ratio above 1 is impossible)."""


def with_totals(values: dict[str, float]) -> dict[str, float]:
    """One GPU's readings at one time, with :data:`VRAM_FREE` and :data:`VRAM_RESERVED`
    turned into the total (used + free + reserved) where the exporter gives no total,
    and the management power limit the limit where no enforced limit is given."""
    free = values.pop(VRAM_FREE, None)
    reserved = values.pop(VRAM_RESERVED, None)
    used = values.get("vram_used_bytes")
    if free is not None and used is not None and "vram_total_bytes" not in values:
        values["vram_total_bytes"] = used + free + (reserved or 0.0)
    mgmt = values.pop(POWER_MGMT_LIMIT, None)
    if mgmt is not None and "power_limit_watts" not in values:
        values["power_limit_watts"] = mgmt
    return values


def is_blank(value: float) -> bool:
    """Whether ``value`` is one of DCGM's blank sentinels (``dcgm_structs.h``: a value
    not read, not found, not supported...), printed by the exporter as a number:
    ``DCGM_INT32_BLANK`` (0x7ffffff0) .. int32 max, ``DCGM_INT64_BLANK``
    (0x7ffffffffffffff0) and up, ``DCGM_FP64_BLANK`` (2**47) .. 2**47 + 15."""
    return (
        0x7FFFFFF0 <= value <= 0x7FFFFFFF
        or value >= float(0x7FFFFFFFFFFFFFF0)
        or 140737488355328.0 <= value <= 140737488355343.0
    )
