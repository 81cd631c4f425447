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
from gputop_hints.hints.rules.shared import gib_text
from gputop_hints.hints.rules.signals import SHARE_MATCH, preallocation
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_VRAM

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


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A process whose VRAM reached a large share early and has held it since."""
    c = t.vram_preallocated
    out: list[Finding] = []
    for proc in win.processes():
        pool = preallocation(win, t, proc)
        if pool is None or not pool.steady:
            continue
        share, server = pool.share, pool.framework
        sure = pool.seen or server is not None
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
                label=f"VRAM {share * 100:.0f}% pre-allocated" + ("" if sure else "?"),
                summary=(
                    (
                        f"This process took {gib_text(proc.vram_bytes)} ({share * 100:.0f} % of "
                        "the card) early and has held it flat since: pre-allocation by design "
                        f"({how}), not a job about to run out of memory."
                    )
                    if pool.seen
                    else (
                        f"This process has held {gib_text(proc.vram_bytes)} ({share * 100:.0f} % "
                        "of the card) flat since it was first seen, at the share "
                        + (f"{server} reserves" if server else "a framework reserves by default")
                        + f" ({how}): most likely a pool, not a job about to run out of memory"
                        + ("." if server else "; its start was not watched, so this is a guess.")
                    )
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
                        "level reached after start" if pool.seen else "flat since first seen",
                        None,
                        (
                            f"within {c.reached_within_s:g} s, flat since"
                            if pool.seen
                            else f"at a documented pool share (+/- {SHARE_MATCH * 100:g} %)"
                        ),
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
