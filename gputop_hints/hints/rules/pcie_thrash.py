"""pcie-thrash: the PCIe link is busy much of the time while SM is low."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.signals import link_thrashing
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_PCIE, METRIC_PROCESSES, METRIC_SM, GpuProcess

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "pcie-thrash"


@dataclass(frozen=True)
class PcieThrash:
    """pcie-thrash's thresholds: the ``pcie_thrash:`` section of defaults.yaml."""

    link_share_above: float = field(
        metadata=threshold(0, 2, "", "a reading of rx+tx above this share of the link is busy")
    )
    floor_gb_per_s: float = field(
        metadata=threshold(0, 1000, "GB/s", "busy reading when link capacity is unknown")
    )
    min_busy_fraction: float = field(
        metadata=threshold(0, 1, "", "share of readings that must be busy")
    )
    sm_below_percent: float = field(metadata=threshold(0, 100, "%", "only while SM is below this"))
    hysteresis: Hysteresis


def _active(win: Window, t: Thresholds, proc: GpuProcess) -> bool:
    """Whether ``proc`` did anything in the window that could move data over its link:
    ran kernels of its own (NVML sample), or worked on the host (a copy is issued by a
    host thread; a pageable one is staged by a CPU memcpy). Unknown counts as active."""
    own = win.process_sm_values(proc)
    if own is not None and max(own, default=0.0) >= t.idle_holding_vram.sm_below_percent:
        return True
    cpu = win.process_cpu_mean(proc)
    if cpu is None and own is None:
        return True
    return (cpu or 0.0) >= t.idle_holding_vram.host_busy_cpu_percent or (
        win.process_busy_workers_mean(proc) or 0.0
    ) >= 0.5


def _shared_link_note(procs: list[GpuProcess], active: list[GpuProcess]) -> list[Evidence]:
    """With several processes on the GPU, say whose the traffic is taken to be, and why."""
    if len(procs) == 1:
        return []
    if len(active) == 1:
        text = (
            f"PCIe is per GPU: {len(procs)} processes share it; the others ran no kernel "
            "and did no host work in the window"
        )
    else:
        text = (
            f"PCIe is per GPU: {len(active)} of {len(procs)} processes on it are active; "
            "cannot tell which process moves the data"
        )
    return [Evidence(text, None, "device evidence", "", Scope.DEVICE, met=None)]


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Heavy PCIe traffic while SM is low: copies, not compute, set the pace."""
    out: list[Finding] = []
    min_vram = t.general.min_vram_gib * GIB
    for gpu in win.latest.gpus:
        hit, evidence = link_thrashing(win, t, gpu.index)
        if not hit:
            continue
        procs = win.significant_processes_on(gpu.index, min_vram)
        if not procs:
            continue
        # PCIe traffic is counted per GPU. It is one process's when only one process on
        # the GPU did anything that moves data; with several active, the finding is the
        # GPU's: which of them copies cannot be told from NVML.
        active = [p for p in procs if _active(win, t, p)] if len(procs) > 1 else procs
        subject = (
            Subject(gpu.index, active[0].pid) if len(active) == 1 else Subject(gpu.index)
        )
        out.append(
            Finding(
                rule=ID,
                subject=subject,
                severity=Severity.WARNING,
                label="PCIe thrash",
                summary=(
                    f"GPU {gpu.index}'s PCIe link is busy in {evidence[0].value or 0:.0f} % of "
                    f"readings (mean {(evidence[1].value or 0) / 1e9:.1f} GB/s) while SM is "
                    f"{evidence[2].value or 0:.0f} %: host<->device copies, not kernels, set "
                    "the pace."
                ),
                advice=(
                    "Keep tensors on the GPU between steps; avoid .cpu(), .item(), .numpy() "
                    "or printing GPU tensors every step.",
                    "DataLoader(pin_memory=True) and .to(device, non_blocking=True) make "
                    "copies faster and overlap them with compute.",
                    "Check for CPU offload (optimizer / parameter offload, unified memory "
                    "paging) that streams weights every step.",
                ),
                evidence=(*evidence, *_shared_link_note(procs, active)),
                evidence_scope=Scope.DEVICE,
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=PcieThrash,
    title="PCIe thrash",
    sentence=(
        "The PCIe link is busy a large share of the time while SM is low: host<->device copies, "
        "not kernels, set the pace."
    ),
    subject="process",
    needs=(METRIC_PCIE, METRIC_SM, METRIC_PROCESSES),
    explains_low_utilization=True,
)
