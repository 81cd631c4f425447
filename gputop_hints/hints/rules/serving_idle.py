"""serving-idle: an inference server idle between request bursts -- by design, not a problem.

A server (vLLM, TGI, SGLang, Triton, Ollama, llama.cpp; recognised from its
command line, see ``hints.kinds``) runs decode steps back to back while
requests are in flight (continuous batching) and nothing in between. Its idle
share is how much of the time no request was being served: information for
capacity planning, never notebook or DataLoader advice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.kinds import server_name
from gputop_hints.hints.rules.shared import gib_text
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_SM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "serving-idle"


@dataclass(frozen=True)
class ServingIdle:
    """serving-idle's thresholds: the ``serving_idle:`` section of defaults.yaml."""

    idle_below_percent: float = field(
        metadata=threshold(0, 100, "%", "a tick with the server's own SM below this is idle")
    )
    min_idle_share: float = field(
        metadata=threshold(0, 1, "", "say so when idle at least this share")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A recognised inference server idle for part of the history the monitor holds."""
    c = t.serving_idle
    out: list[Finding] = []
    for proc in win.processes():
        name = server_name(proc)
        if name is None or (proc.vram_bytes or 0) < t.general.min_vram_gib * GIB:
            continue
        values = win.process_sm_values(proc, ticks=len(win.history))
        scope = Scope.PROCESS
        if values is None:
            gh = win.history.gpus.get(proc.gpu_index)
            values = gh.sm_percent.known() if gh else []
            scope = Scope.DEVICE
        if not values:
            continue
        idle = sum(1 for v in values if v < c.idle_below_percent) / len(values)
        if idle < c.min_idle_share:
            continue
        span = len(values) * win.interval_s
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.INFO,
                label=f"serving, idle {idle * 100:.0f}%",
                summary=(
                    f"{name} server: serving, idle {idle * 100:.0f} % of the last {span:.0f} s "
                    f"between request bursts, holding {gib_text(proc.vram_bytes)} (its weights "
                    "and KV cache stay loaded to answer the next request at once)."
                ),
                advice=(
                    "Nothing to fix: a server waits for requests. If it is idle most of the "
                    "day, serve from a smaller or shared GPU (MIG), or unload idle models "
                    "(Ollama keep_alive, scale-to-zero).",
                    "Under load, throughput comes from batching: raise max concurrent "
                    "sequences (vLLM --max-num-seqs) before adding GPUs.",
                ),
                evidence=(
                    Evidence(
                        "ticks with no kernel of its own",
                        idle * 100,
                        f">= {c.min_idle_share * 100:g} (below {c.idle_below_percent:g} %)",
                        "%",
                        scope,
                    ),
                    Evidence("server", None, name, "", Scope.PROCESS, met=None),
                ),
                evidence_scope=scope,
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=ServingIdle,
    title="Serving, idle between requests",
    sentence=(
        "An inference server (recognised from its command line) is idle between request "
        "bursts: by design, shown as its idle share, never as a stalled training job."
    ),
    subject="process",
    needs=(METRIC_SM, METRIC_PROCESSES),
    explains_low_utilization=True,
)
