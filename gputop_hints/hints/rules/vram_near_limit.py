"""vram-near-limit: device memory almost full -- the next spike is an out-of-memory error.

A card filled by a pool the framework is known to reserve (signals.preallocation:
the command line names vLLM/SGLang/TGI..., or a plateau never seen to grow sits at a
documented default share) is full by design: vram-preallocated says so instead.
In a log, TensorFlow's default pool is told by what it leaves free: its allocator maps all the
free memory it finds but ``MinSystemMemory`` (signals.tf_reserve_left), so a card
left with that reserve whose processes were never seen to grow is its pool -- also
when TensorFlow started beside another job and took the rest. A job that fills the
card by growing is seen growing and still warns, as does one leaving less than the
smallest reserve.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.shared import gib_text
from gputop_hints.hints.rules.signals import (
    TF_RESERVE_SLACK_BYTES,
    device_pool,
    no_process_data,
    preallocation,
    tf_reserve_left,
)
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import VRAM_STEADY_SHARE, Window
from gputop_hints.model import METRIC_VRAM, GpuSample

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
    settled_for_s: float = field(
        metadata=threshold(
            0, 86400, "s", "not when every process has held its level this long (peaks fit)"
        )
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
        if device_pool(win, t, gpu.index) is not None:
            continue  # no process named, the card flat from the first reading at a pool's share
        held = _held(win, gpu.index)
        never_grew = bool(held) and all(since <= first + win.interval_s for since, first in held)
        if never_grew and (
            win.interval_s >= c.settled_for_s
            or (tf_reserve_left(win, gpu) and _accounted(win, gpu))
        ):
            continue  # one snapshot of many; or TensorFlow mapped what the others left
        if held and all(win.now - since >= c.settled_for_s for since, _ in held):
            continue  # its peaks have fitted for many steps: full, not at risk
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
                    + (
                        " This log names no process: a framework that reserves the card at "
                        "start (TensorFlow, JAX, vLLM) reads the same, and then the figure "
                        "says nothing of how close its work is to running out."
                        if no_process_data(win)
                        else ""
                    )
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
        if pool is not None and (pool.framework is not None or not pool.seen or pool.reserve):
            out += float(p.vram_bytes or 0)
    return out


def _accounted(win: Window, gpu: GpuSample) -> bool:
    """Whether the processes listed on ``gpu`` hold what it has in use (a pool is a
    process's memory; VRAM no process accounts for is nobody's pool)."""
    held = sum(float(p.vram_bytes or 0) for p in win.processes() if p.gpu_index == gpu.index)
    return held >= (gpu.vram_used_bytes or 0) - TF_RESERVE_SLACK_BYTES


def _held(win: Window, index: int) -> list[tuple[float, float]]:
    """(since, first seen) of each process's VRAM level on GPU ``index``; empty when a
    process's level is unknown (or none is listed): nothing can be said of how it got
    there."""
    gpu = win.gpu(index)
    tolerance = VRAM_STEADY_SHARE * float(gpu.vram_total_bytes or 0) if gpu else 0.0
    out: list[tuple[float, float]] = []
    for p in win.processes():
        if p.gpu_index != index:
            continue
        steady = win.vram_steady(p, tolerance)
        ph = win.process_history(p)
        if steady is None or ph is None:
            return []
        out.append((steady[1], ph.first_seen))
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
