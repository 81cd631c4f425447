"""cpu-offload: the optimizer runs on the host and the GPU waits -- offload by design.

DeepSpeed ZeRO-Offload (and ZeRO-Infinity) keep the optimizer states in host memory
and step them on the CPU (DeepSpeedCPUAdam: OpenMP threads with AVX over every core
it may use); every step the GPU streams its fp16 gradients to the host as backward
fills each bucket and receives the updated fp16 parameters back (ZeRO-Offload paper,
Ren et al. 2021, section 4: 2 bytes per parameter each way per step). So, together:

* the main process uses several cores at once -- a Python loop that loads batches
  itself is bound to one by the GIL; a threaded optimizer is not;
* PCIe carries traffic both ways in comparable amounts, where a training step
  that only feeds batches sends nearly everything host -> device;
* the GPU idles while the host steps (idle gaps): the cost of offload.

Not input starvation (no DataLoader advice): the finding says what the design costs
and how to pay less. input-starved leaves such a process to this rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.shared import gaps_evidence
from gputop_hints.hints.rules.signals import Offload, offloading
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_HOST_CPU, METRIC_PCIE, METRIC_PROCESSES, METRIC_SM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "cpu-offload"


@dataclass(frozen=True)
class CpuOffload:
    """cpu-offload's thresholds: the ``cpu_offload:`` section of defaults.yaml."""

    main_cpu_above_percent: float = field(
        metadata=threshold(0, 100000, "%", "the main process on more cores than this ...")
    )
    min_direction_gb_per_s: float = field(
        metadata=threshold(0, 1000, "GB/s", "... PCIe at least this much in each direction ...")
    )
    min_direction_ratio: float = field(
        metadata=threshold(0, 1, "", "... the smaller direction at least this share of the larger")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A process stepping its optimizer on many host threads with the GPU waiting."""
    out: list[Finding] = []
    for proc in win.processes():
        seen = offloading(win, t, proc)
        if seen is not None:
            out.append(_finding(t, proc.gpu_index, proc.pid, seen))
    return out


def _finding(t: Thresholds, gpu: int, pid: int, o: Offload) -> Finding:
    c = t.cpu_offload
    cores = o.main_cpu / 100.0
    named = " (DeepSpeed offload, by its command line)" if o.named else ""
    return Finding(
        rule=ID,
        subject=Subject(gpu, pid),
        severity=Severity.WARNING,
        label="CPU optimizer: offload" + ("" if o.named else "?"),
        summary=(
            f"The main process runs on {cores:.1f} cores while the GPU idles "
            f"{o.gaps.fraction * 100:.0f} % of the time, and PCIe carries "
            f"{o.rx / 1e9:.2f} GB/s in and {o.tx / 1e9:.2f} GB/s out: the optimizer steps "
            f"on the host and gradients and parameters cross the bus every step{named}. "
            "Offload by design -- it saves VRAM and costs GPU time; not a DataLoader problem."
        ),
        advice=(
            "If the optimizer states fit in VRAM, drop offload (ZeRO-2/3 without "
            "offload_optimizer) or offload only parameters; bf16 and a smaller model shard "
            "help them fit.",
            "Otherwise give the CPU step more: more cores per GPU (SLURM --cpus-per-task), "
            "pin_memory in offload_optimizer, overlap_comm: true, and a larger "
            "gradient_accumulation_steps so the host steps less often per sample.",
        ),
        evidence=(
            Evidence(
                "main process CPU (mean)",
                o.main_cpu,
                f">= {c.main_cpu_above_percent:g} (more than a GIL-bound loop can use)",
                "%",
                Scope.PROCESS,
            ),
            Evidence(
                "PCIe host -> device (mean)",
                o.rx,
                f">= {c.min_direction_gb_per_s:g} GB/s",
                "B/s",
                Scope.DEVICE,
            ),
            Evidence(
                "PCIe device -> host (mean)",
                o.tx,
                f">= {c.min_direction_gb_per_s:g} GB/s, within "
                f"1:{1 / c.min_direction_ratio:g} of the other way",
                "B/s",
                Scope.DEVICE,
            ),
            gaps_evidence(
                o.gaps,
                f">= {t.input_starved.min_gap_fraction * 100:g} % of the window",
                Scope.DEVICE,
            ),
            Evidence(
                f"seen over the last {o.window_s:.0f} s",
                None,
                "a step or more",
                "",
                Scope.DEVICE,
                met=None,
            ),
        ),
        evidence_scope=Scope.PROCESS,
    )


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=CpuOffload,
    title="Optimizer offloaded to the CPU",
    sentence=(
        "The optimizer steps on many host threads (DeepSpeed ZeRO-Offload) while the GPU "
        "waits and PCIe carries gradients out and parameters in every step: offload by "
        "design, with its cost."
    ),
    subject="process",
    needs=(METRIC_SM, METRIC_PCIE, METRIC_PROCESSES, METRIC_HOST_CPU),
    explains_low_utilization=True,
)
