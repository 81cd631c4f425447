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


def _shared_link_note(procs: list[GpuProcess]) -> list[Evidence]:
    """With several processes on the GPU, say that the one named is a guess."""
    if len(procs) == 1:
        return []
    return [
        Evidence(
            f"PCIe is per GPU: {len(procs)} processes share it; shown on the "
            "one holding the most VRAM",
            None,
            "device evidence",
            "",
            Scope.DEVICE,
            met=None,
        )
    ]


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Heavy PCIe traffic while SM is low: copies, not compute, set the pace."""
    out: list[Finding] = []
    min_vram = t.general.min_vram_gib * GIB
    for gpu in win.latest.gpus:
        hit, evidence = link_thrashing(win, t, gpu.index)
        if not hit:
            continue
        procs = win.significant_processes_on(gpu.index, min_vram)
        # PCIe traffic is counted per GPU: with several processes on it, name the one
        # holding the most memory (the training job, usually) and say that it is a guess.
        if not procs:
            continue
        proc = max(procs, key=lambda p: p.vram_bytes or 0)
        out.append(
            Finding(
                rule=ID,
                subject=Subject(gpu.index, proc.pid),
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
                evidence=(*evidence, *_shared_link_note(procs)),
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
