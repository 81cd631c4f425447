"""idle-holding-vram: a process holds device memory while its GPU runs no kernel."""

from __future__ import annotations

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.shared import gib_text, percent_text
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_SM

ID = "idle-holding-vram"


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A process holding VRAM on a GPU that has run no kernel for ``idle_for_s``."""
    c = t.idle_holding_vram
    out: list[Finding] = []
    for proc in win.processes():
        vram = proc.vram_bytes or 0
        if vram < c.min_vram_gib * GIB:
            continue
        idle_s = win.gpu_idle_for_s(proc.gpu_index, c.sm_below_percent)
        if idle_s < c.idle_for_s:
            continue
        own = win.process_sm_mean(proc)
        if own is not None and own >= c.sm_below_percent:
            continue
        cpu = win.process_cpu_mean(proc)
        critical = idle_s >= c.critical_after_s
        minutes = idle_s / 60
        age = f"{idle_s:.0f} s" if idle_s < 120 else f"{minutes:.0f} min"
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.CRITICAL if critical else Severity.WARNING,
                label=f"idle {age}, holds {vram / GIB:.0f}G",
                summary=(
                    f"GPU {proc.gpu_index} has run no kernel for {age} while this process holds "
                    f"{gib_text(vram)} of its memory (main process CPU {percent_text(cpu)})."
                ),
                advice=(
                    "A notebook or interactive session you are done with? Free the GPU: "
                    "del the model and call torch.cuda.empty_cache(), or restart the kernel.",
                    "A distributed job? One rank may be stuck in a collective: check the other "
                    f"ranks, NCCL_DEBUG=INFO, and py-spy dump --pid {proc.pid}.",
                ),
                evidence=(
                    Evidence(
                        "device SM idle for",
                        idle_s,
                        f">= {c.idle_for_s:g} s below {c.sm_below_percent:g} %",
                        "s",
                        Scope.DEVICE,
                    ),
                    Evidence(
                        "VRAM held", float(vram), f">= {c.min_vram_gib:g} GiB", "B", Scope.PROCESS
                    ),
                    Evidence(
                        "main process CPU (mean)", cpu, "for context", "%", Scope.HOST, met=None
                    ),
                ),
                evidence_scope=Scope.DEVICE if own is None else Scope.PROCESS,
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds="idle_holding_vram",
    title="Idle, holding VRAM",
    sentence=(
        "The process holds device memory but the GPU has run no kernel for a while: a "
        "forgotten notebook, a finished job that did not exit, or a rank stuck in a collective."
    ),
    subject="process",
    needs=(METRIC_SM, METRIC_PROCESSES),
    explains_low_utilization=True,
)
