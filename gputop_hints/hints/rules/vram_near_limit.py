"""vram-near-limit: device memory almost full -- the next spike is an out-of-memory error.

A card filled by a pool the framework is known to reserve (signals.preallocation:
the command line names vLLM/SGLang/TGI..., or a plateau never seen to grow sits at a
documented default share) is full by design: vram-preallocated says so instead. A
one-step fill by an unnamed process still warns: TensorFlow's default pool cannot
be told from a PyTorch job that filled the card as fast from VRAM alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.shared import gib_text
from gputop_hints.hints.rules.signals import preallocation
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_VRAM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "vram-near-limit"


@dataclass(frozen=True)
class VramNearLimit:
    """vram-near-limit's thresholds: the ``vram_near_limit:`` section of defaults.yaml."""

    used_fraction_above: float = field(
        metadata=threshold(0, 1, "", "used / total at or above this")
    )
    critical_fraction_above: float = field(
        metadata=threshold(0, 1, "", "critical at or above this")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Used / total VRAM of the newest tick at or above its bar: OOM risk."""
    c = t.vram_near_limit
    out: list[Finding] = []
    for gpu in win.latest.gpus:
        frac = gpu.vram_fraction
        if frac is None or frac < c.used_fraction_above:
            continue
        pool_bar = t.vram_preallocated.min_share * (gpu.vram_total_bytes or 0)
        if pool_bar and _pooled(win, t, gpu.index) >= pool_bar:
            continue  # a framework's pool fills the card: by design (vram-preallocated)
        critical = frac >= c.critical_fraction_above
        out.append(
            Finding(
                rule=ID,
                subject=Subject(gpu.index),
                severity=Severity.CRITICAL if critical else Severity.WARNING,
                label=f"VRAM {frac * 100:.0f}%: OOM risk",
                summary=(
                    f"GPU {gpu.index} has {gib_text(gpu.vram_used_bytes)} of "
                    f"{gib_text(gpu.vram_total_bytes)} in use: one larger batch or a fragmentation "
                    "spike away from CUDA out-of-memory."
                ),
                advice=(
                    "Lower the batch size and keep the effective batch with gradient accumulation.",
                    "Activation checkpointing (torch.utils.checkpoint) trades compute for memory.",
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation; "
                    "bf16 halves activation memory.",
                ),
                evidence=(
                    Evidence(
                        "VRAM used / total", frac * 100, f">= {c.used_fraction_above * 100:g}"
                    ),
                ),
            )
        )
    return out


def _pooled(win: Window, t: Thresholds, index: int) -> float:
    """Bytes on GPU ``index`` held by processes whose VRAM is a known framework's pool."""
    out = 0.0
    for p in win.processes():
        pool = preallocation(win, t, p) if p.gpu_index == index else None
        if pool is not None and (pool.framework is not None or not pool.seen):
            out += float(p.vram_bytes or 0)
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=VramNearLimit,
    title="VRAM near its limit",
    sentence=(
        "Device memory is almost full: a larger batch or an allocator spike ends in CUDA "
        "out-of-memory."
    ),
    subject="gpu",
    needs=(METRIC_VRAM,),
)
