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

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.kinds import is_server
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_HOST_CPU, METRIC_PROCESSES, METRIC_SM, GpuProcess

ID = "warm-up"


def warming_up(win: Window, t: Thresholds, proc: GpuProcess) -> tuple[float, float] | None:
    """(age s, mean SM % since start) when ``proc`` is warming up, else None.

    input-starved and low-utilization defer to it: a job starting up looks starved.
    """
    c = t.warm_up
    if is_server(proc) or (proc.vram_bytes or 0) < t.general.min_vram_gib * GIB:
        return None
    ph = win.process_history(proc)
    if ph is None:
        return None
    if proc.create_time is None:
        return None  # when a log begins is not when its process started
    age = win.now - proc.create_time
    if age > c.max_age_s:
        return None
    values = win.process_sm_values(proc, ticks=len(win.history))
    if values is None:
        gh = win.history.gpus.get(proc.gpu_index)
        values = gh.sm_percent.known(len(values or []) or None) if gh else []
    if not values or len(values) * win.interval_s < t.general.window_s:
        return None  # less than a window since first seen says nothing about "since start"
    mean = sum(values) / len(values)
    if mean >= c.sm_since_start_below_percent:
        return None
    # Before its first step a job's GPU runs nothing most of the time; an RL learner's
    # small policy batches run kernels in nearly every tick (simulation, not start-up).
    below = t.idle_holding_vram.sm_below_percent
    active = sum(1 for v in values if v >= below) / len(values)
    if active >= c.active_ticks_below_share:
        return None
    cpu = win.process_cpu_mean(proc)
    working = (
        (cpu is not None and cpu >= t.idle_holding_vram.host_busy_cpu_percent)
        or (win.process_busy_workers_mean(proc) or 0.0) >= 0.5
        or win.process_d_state_fraction(proc) > 0.0
    )
    return (age, mean) if working else None


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A young process, busy on the host, whose GPU has run almost nothing since it started."""
    c = t.warm_up
    out: list[Finding] = []
    for proc in win.processes():
        state = warming_up(win, t, proc)
        if state is None:
            continue
        age, mean = state
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.INFO,
                label=f"warm-up ({age:.0f} s)",
                summary=(
                    f"Started {age:.0f} s ago and busy on the host while its GPU ran {mean:.0f} % "
                    "of the time since: start-up (torch.compile, cuDNN autotuning, dataset "
                    "loading). The other hints wait until it ends."
                ),
                advice=(
                    "Expected once per run. If it is long: cache compiled kernels "
                    "(TORCHINDUCTOR_FX_GRAPH_CACHE=1, torch.compile(dynamic=False)), and index "
                    "or pre-shard the dataset once instead of at every start.",
                ),
                evidence=(
                    Evidence("age", age, f"<= {c.max_age_s:g} s", "s", Scope.PROCESS),
                    Evidence(
                        "SM % since start (mean)",
                        mean,
                        f"< {c.sm_since_start_below_percent:g}",
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
    thresholds="warm_up",
    title="Warm-up",
    sentence=(
        "A job in its first minutes works on the host (compiling, autotuning, loading data) "
        "while its GPU waits: labelled, not warned on; the other hints follow once it ends."
    ),
    subject="process",
    needs=(METRIC_SM, METRIC_PROCESSES, METRIC_HOST_CPU),
    explains_low_utilization=True,
)
