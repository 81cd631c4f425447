"""The cards and links the field corpus runs on, from their data sheets.

Each :class:`GpuModel` carries what NVML would report about the board (name,
memory, default power limit, maximum SM clock) and what its physics imply
(power at idle in P8 and with a context in P0, where it slows down for heat).
Copy rates over PCIe follow from the link: pinned (page-locked) host memory
reaches about 80 % of the link's one-direction bandwidth; pageable memory is
first copied into a pinned staging buffer by the driver, which caps it near
10-13 GB/s on Gen4 x16 (CUDA C++ Best Practices Guide, "Pinned memory").
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop_hints.model import pcie_link_bytes_per_s

MIB = 2**20
GIB = 2**30


@dataclass(frozen=True, slots=True)
class GpuModel:
    """One board as NVML names and bounds it."""

    name: str
    tag: str
    """Short name for case names: a100-40, h100, v100, 4090."""
    vram_total_bytes: int
    power_limit_watts: float
    """The default (and maximum) enforced power limit."""
    idle_watts: float
    """Drawn in P8 with no context."""
    active_idle_watts: float
    """Drawn in P0 with a context and no kernel running (clocks up, SMs idle)."""
    max_sm_clock_mhz: int
    idle_sm_clock_mhz: int
    pcie_generation: int
    pcie_width: int
    slowdown_c: float
    """Temperature where the driver starts to pull clocks (sw_thermal)."""
    shutdown_margin_c: float = 8.0
    """hw_thermal is raised this far above the slowdown temperature."""
    reserved_bytes: int = 0
    """Device memory the driver reports as used with no process (newer drivers)."""

    @property
    def link_bytes_per_s(self) -> float:
        value = pcie_link_bytes_per_s(self.pcie_generation, self.pcie_width)
        assert value is not None
        return value

    @property
    def pinned_copy_bytes_per_s(self) -> float:
        """What a large cudaMemcpyAsync from page-locked memory reaches (~80 % of the link)."""
        return 0.8 * self.link_bytes_per_s

    @property
    def pageable_copy_bytes_per_s(self) -> float:
        """A copy from pageable memory: staged through a pinned buffer, about 37 % of the link."""
        return min(0.37 * self.link_bytes_per_s, 20e9)


A100_40GB = GpuModel(
    name="NVIDIA A100-SXM4-40GB",
    tag="a100-40",
    vram_total_bytes=40960 * MIB,
    power_limit_watts=400.0,
    idle_watts=52.0,
    active_idle_watts=68.0,
    max_sm_clock_mhz=1410,
    idle_sm_clock_mhz=210,
    pcie_generation=4,
    pcie_width=16,
    slowdown_c=88.0,
    reserved_bytes=426 * MIB,
)
A100_80GB = GpuModel(
    name="NVIDIA A100-SXM4-80GB",
    tag="a100-80",
    vram_total_bytes=81920 * MIB,
    power_limit_watts=400.0,
    idle_watts=58.0,
    active_idle_watts=72.0,
    max_sm_clock_mhz=1410,
    idle_sm_clock_mhz=210,
    pcie_generation=4,
    pcie_width=16,
    slowdown_c=88.0,
    reserved_bytes=530 * MIB,
)
H100_80GB = GpuModel(
    name="NVIDIA H100 80GB HBM3",
    tag="h100",
    vram_total_bytes=81559 * MIB,
    power_limit_watts=700.0,
    idle_watts=68.0,
    active_idle_watts=118.0,
    max_sm_clock_mhz=1980,
    idle_sm_clock_mhz=345,
    pcie_generation=5,
    pcie_width=16,
    slowdown_c=90.0,
    reserved_bytes=546 * MIB,
)
V100_32GB = GpuModel(
    name="Tesla V100-SXM2-32GB",
    tag="v100",
    vram_total_bytes=32510 * MIB,
    power_limit_watts=300.0,
    idle_watts=39.0,
    active_idle_watts=55.0,
    max_sm_clock_mhz=1530,
    idle_sm_clock_mhz=135,
    pcie_generation=3,
    pcie_width=16,
    slowdown_c=85.0,
)
RTX_4090 = GpuModel(
    name="NVIDIA GeForce RTX 4090",
    tag="4090",
    vram_total_bytes=24564 * MIB,
    power_limit_watts=450.0,
    idle_watts=21.0,
    active_idle_watts=48.0,
    max_sm_clock_mhz=3120,
    idle_sm_clock_mhz=210,
    pcie_generation=4,
    pcie_width=16,
    slowdown_c=84.0,
    reserved_bytes=330 * MIB,
)

MODELS: tuple[GpuModel, ...] = (A100_40GB, A100_80GB, H100_80GB, V100_32GB, RTX_4090)


def with_link(model: GpuModel, generation: int, width: int = 16) -> GpuModel:
    """The same board in another slot (a Gen4 card in a Gen3 server, an x8 riser)."""
    from dataclasses import replace

    return replace(model, pcie_generation=generation, pcie_width=width)
