"""vram-preallocated: VRAM at a framework's pre-allocation share, flat from the start.

Several frameworks take a fixed share of device memory at start-up and keep
it: vLLM ``--gpu-memory-utilization`` (default 0.9), SGLang
``--mem-fraction-static``, TGI (KV cache sized to the free memory), TensorFlow
(maps nearly all memory unless memory growth is set), JAX (75 % by default,
``XLA_PYTHON_CLIENT_MEM_FRACTION``). Such a level is reached within the first
minute or two and never moves; it says nothing about how close the work is to
running out of memory; this note says what it is and how to change it.
vram-near-limit is not silenced: a job filling the card in seconds looks the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.kinds import server_name
from gputop_hints.hints.rules.shared import gib_text
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import VRAM_STEADY_SHARE, Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_VRAM, GpuProcess

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "vram-preallocated"


@dataclass(frozen=True)
class VramPreallocated:
    """vram-preallocated's thresholds: the ``vram_preallocated:`` section of defaults.yaml."""

    min_share: float = field(
        metadata=threshold(0, 1, "", "a process holding at least this share ...")
    )
    reached_within_s: float = field(
        metadata=threshold(0, 3600, "s", "... reached within this long of its start ...")
    )
    steady_for_s: float = field(
        metadata=threshold(0, 3600, "s", "... and flat for at least this long")
    )
    min_jump_share: float = field(
        metadata=threshold(0, 1, "", "taken in one step: a rise of at least this share within 5 s")
    )
    hysteresis: Hysteresis


def preallocated(win: Window, t: Thresholds, proc: GpuProcess) -> float | None:
    """The share of the card ``proc`` pre-allocated, or None when its VRAM is not that."""
    c = t.vram_preallocated
    gpu = win.gpu(proc.gpu_index)
    if gpu is None or not gpu.vram_total_bytes:
        return None
    if proc.create_time is None or (proc.vram_bytes or 0) < c.min_share * gpu.vram_total_bytes:
        return None  # the cheap tests first: this runs for every process every tick
    steady = win.vram_steady(proc, VRAM_STEADY_SHARE * gpu.vram_total_bytes)
    if steady is None:
        return None
    level, since, rise = steady
    share = level / gpu.vram_total_bytes
    if rise < c.min_jump_share * gpu.vram_total_bytes:
        return None  # grown into over the first steps: a caching allocator, not a reservation
    started = proc.create_time  # when a log begins is not when its process started
    if started is None or share < c.min_share:
        return None
    if since - started > c.reached_within_s or win.now - since < c.steady_for_s:
        return None
    return share


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A process whose VRAM reached a large share early and has held it since."""
    c = t.vram_preallocated
    out: list[Finding] = []
    for proc in win.processes():
        share = preallocated(win, t, proc)
        if share is None:
            continue
        server = server_name(proc)
        how = (
            f"{server} reserves it at start-up (vLLM --gpu-memory-utilization, SGLang "
            "--mem-fraction-static, TGI sizes its KV cache to the free memory)"
            if server
            else "TensorFlow maps nearly all memory and JAX 75 % by default"
        )
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.INFO,
                label=f"VRAM {share * 100:.0f}% pre-allocated",
                summary=(
                    f"This process took {gib_text(proc.vram_bytes)} ({share * 100:.0f} % of the "
                    "card) early and has held it flat since: pre-allocation by design "
                    f"({how}), not a job about to run out of memory."
                ),
                advice=(
                    "To share the GPU or leave room: vLLM --gpu-memory-utilization 0.5, SGLang "
                    "--mem-fraction-static; TensorFlow tf.config.experimental."
                    "set_memory_growth(gpu, True); JAX XLA_PYTHON_CLIENT_MEM_FRACTION=.5 or "
                    "XLA_PYTHON_CLIENT_PREALLOCATE=false.",
                ),
                evidence=(
                    Evidence(
                        "VRAM share of the card",
                        share * 100,
                        f">= {c.min_share * 100:g}",
                        "%",
                        Scope.PROCESS,
                    ),
                    Evidence(
                        "level reached after start",
                        None,
                        f"within {c.reached_within_s:g} s, flat since",
                        "s",
                        Scope.PROCESS,
                        met=None,
                    ),
                ),
                evidence_scope=Scope.PROCESS,
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=VramPreallocated,
    title="VRAM pre-allocated",
    sentence=(
        "A framework reserved a fixed share of device memory at start-up and holds it flat "
        "(vLLM, SGLang, TGI, TensorFlow, JAX): by design, not an out-of-memory risk."
    ),
    subject="process",
    needs=(METRIC_VRAM, METRIC_PROCESSES),
)
