"""warm-up: the first minutes of a job, before its first steady step -- labelled, not warned.

At start a training job works on the CPU while its GPU, with the model already
loaded, runs almost nothing: ``torch.compile`` traces and compiles (main thread
and compile workers busy; short autotuning bursts), cuDNN autotunes its first
iterations, datasets are indexed or loaded (D state, iowait). That is expected
for tens of seconds to a couple of minutes (PyTorch torch.compile tutorial,
"compile times"; ``torch.backends.cudnn.benchmark``). A job that has run
almost nothing on its GPU since it started, while busy on the host, is warming
up; the normal rules take over once it ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.signals import (
    COMPILE_FRESH_S,
    compiling,
    compiling_by_toolchain,
    warming_up,
)
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_HOST_CPU, METRIC_PROCESSES, METRIC_SM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds
    from gputop_hints.model import GpuProcess

ID = "warm-up"


@dataclass(frozen=True)
class WarmUp:
    """warm-up's thresholds: the ``warm_up:`` section of defaults.yaml."""

    max_age_s: float = field(metadata=threshold(0, 3600, "s", "a process younger than this ..."))
    sm_since_start_below_percent: float = field(
        metadata=threshold(0, 100, "%", "... whose GPU ran less than this since it started")
    )
    active_ticks_below_share: float = field(
        metadata=threshold(0, 1, "", "... and ran any kernel in less than this share of its ticks")
    )
    hysteresis: Hysteresis


def _compile_evidence(win: Window, proc: GpuProcess) -> str:
    """What says ``proc`` compiles: the compiler running under it now, one that ran
    minutes ago, or its busy torch.compile workers."""
    now = sorted({w.name for w in proc.workers if w.is_toolchain and w.name})
    if now:
        return f"{', '.join(now[:3])} running under it"
    if compiling_by_toolchain(win, proc):
        return f"a compiler ran under it in the last {COMPILE_FRESH_S / 60:g} minutes"
    return "its torch.compile workers are busy"


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A young process, busy on the host, whose GPU has run almost nothing since it started."""
    c = t.warm_up
    out: list[Finding] = []
    for proc in win.processes():
        state = warming_up(win, t, proc)
        if state is None:
            continue
        age, mean = state
        compile_busy = compiling(win, t, proc) is not None
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.INFO,
                label=f"warm-up ({age:.0f} s)",
                summary=(
                    f"It is compiling ({_compile_evidence(win, proc)}) while its GPU runs "
                    f"short autotuning bursts ({mean:.0f} % over the window): warm-up, not a "
                    "slow DataLoader. The other hints wait until it ends."
                    if compile_busy
                    else f"Started {age:.0f} s ago and busy on the host while its GPU ran "
                    f"{mean:.0f} % of the time since: start-up (torch.compile, cuDNN "
                    "autotuning, dataset loading). The other hints wait until it ends."
                ),
                advice=(
                    "Expected once per run. If it is long: cache compiled kernels "
                    "(TORCHINDUCTOR_FX_GRAPH_CACHE=1, torch.compile(dynamic=False)), and index "
                    "or pre-shard the dataset once instead of at every start.",
                ),
                evidence=(
                    Evidence(
                        "age",
                        age,
                        "any, compile workers busy" if compile_busy else f"<= {c.max_age_s:g} s",
                        "s",
                        Scope.PROCESS,
                    ),
                    Evidence(
                        f"SM % {'over the window' if compile_busy else 'since start'} (mean)",
                        mean,
                        f"< {t.input_starved.sm_mean_below_percent:g}"
                        if compile_busy
                        else f"< {c.sm_since_start_below_percent:g}",
                        "%",
                        Scope.PROCESS,
                    ),
                ),
                evidence_scope=Scope.PROCESS,
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=WarmUp,
    title="Warm-up",
    sentence=(
        "A job in its first minutes works on the host (compiling, autotuning, loading data) "
        "while its GPU waits: labelled, not warned on; the other hints follow once it ends."
    ),
    subject="process",
    needs=(METRIC_SM, METRIC_PROCESSES, METRIC_HOST_CPU),
    explains_low_utilization=True,
)
