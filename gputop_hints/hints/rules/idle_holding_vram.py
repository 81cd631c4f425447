"""idle-holding-vram: a process holds device memory while its GPU runs no kernel."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.kinds import is_server
from gputop_hints.hints.rules.shared import gib_text, percent_text
from gputop_hints.hints.rules.signals import (
    INDEPENDENT_INTERVAL_S,
    device_pool,
    hangs,
    no_process_data,
)
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_SM, GpuProcess
from gputop_hints.units import duration_text

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "idle-holding-vram"


@dataclass(frozen=True)
class IdleHoldingVram:
    """idle-holding-vram's thresholds: the ``idle_holding_vram:`` section of defaults.yaml."""

    sm_below_percent: float = field(metadata=threshold(0, 100, "%", "device SM below this is idle"))
    min_vram_gib: float = field(
        metadata=threshold(0, 1024, "GiB", "only processes holding at least this")
    )
    idle_for_s: float = field(metadata=threshold(1, 86400, "s", "idle for at least this long"))
    idle_for_s_without_host: float = field(
        metadata=threshold(
            1, 86400, "s", "... this long where no host CPU is known (a checkpoint save is unseen)"
        )
    )
    critical_after_s: float = field(
        metadata=threshold(1, 604800, "s", "escalate to critical after this long")
    )
    host_busy_cpu_percent: float = field(
        metadata=threshold(0, 10000, "%", "a main process at or above this is working, not idle")
    )
    hysteresis: Hysteresis


IDLE_READINGS = 5
"""In a log, the fewest readings at idle in a row that count."""
COARSE_DUTY_BOUND = 0.05
"""In a log read every INDEPENDENT_INTERVAL_S or more, each reading is the GPU's last
second or so, an independent draw of its duty cycle: k readings in a row at idle bound
the share of time its kernels ran under 3/k (95 %, the "rule of three" for k draws with
no success). From 3 / 0.05 = 60 such readings it ran under 5 % of the time: next to
nothing, as a process holding the memory and running nothing does."""


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A process holding VRAM that has run no kernel of its own for ``idle_for_s``, and
    is not busy on the host either (a checkpoint save, a warm-up, a loader at work).
    In a log without per-process rows: the GPU itself, idle with memory in use."""
    if no_process_data(win):
        return _idle_gpus(win, t)
    c = t.idle_holding_vram
    out: list[Finding] = []
    hung = {h.proc.key for h in hangs(win, t)}
    for proc in win.processes():
        vram = proc.vram_bytes or 0
        if vram < c.min_vram_gib * GIB or proc.key in hung or is_server(proc):
            continue  # a hung rank is collective-hang's; a server's idling is serving-idle's
        if proc.defunct:
            continue  # a zombie runs nothing and never will: ghost-memory names its parent
        idle_s = win.process_idle_for_s(proc, c.sm_below_percent)
        if idle_s < c.idle_for_s and idle_s < c.idle_for_s_without_host:
            # ``needed`` below is at least one of the two whatever the host side says:
            # idle for less than both, the process cannot qualify (a process running
            # kernels, nearly every one, stops here without reading its CPU).
            continue
        cpu = win.process_cpu_mean(proc)
        # Without the host side, a checkpoint save, an evaluation on the CPU or a dataset
        # load (tens of seconds to minutes) cannot be told from idleness: wait longer.
        needed = max(
            c.idle_for_s if cpu is not None else c.idle_for_s_without_host,
            _least_idle_s(win, named=True),
        )
        if idle_s < needed:
            continue
        if _working_on_host(win, t, proc):
            continue
        own = win.process_sm_mean(proc)
        # Critical when the whole GPU has been idle that long: nobody gets any use of it.
        # Beside a co-tenant that runs kernels, only the memory is held back: a warning.
        critical = (
            idle_s >= c.critical_after_s
            and win.gpu_idle_for_s(proc.gpu_index, c.sm_below_percent) >= c.critical_after_s
        )
        age = duration_text(idle_s)
        short_age = duration_text(idle_s if idle_s < 120 else round(idle_s / 60) * 60)
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.CRITICAL if critical else Severity.WARNING,
                label=f"idle {short_age}, holds {vram / GIB:.0f}G",
                summary=(
                    f"This process has run no kernel on GPU {proc.gpu_index} for {age} while it "
                    f"holds {gib_text(vram)} of its memory (main process CPU {percent_text(cpu)})."
                ),
                advice=(
                    "A notebook or interactive session you are done with? Free the GPU: "
                    "del the model and call torch.cuda.empty_cache(), or restart the kernel.",
                    "A distributed job? One rank may be stuck in a collective: check the other "
                    f"ranks, NCCL_DEBUG=INFO, and py-spy dump --pid {proc.pid}.",
                ),
                evidence=(
                    Evidence(
                        "no kernel of its own for",
                        idle_s,
                        f">= {needed:g} s below {c.sm_below_percent:g} %",
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


def _idle_gpus(win: Window, t: Thresholds) -> list[Finding]:
    """GPUs of a log without process rows (nvidia-smi CSVs and tables without their
    Processes box, W&B, dmon) that have run no kernel for ``idle_for_s_without_host``
    -- and for :data:`IDLE_READINGS` readings in a row -- while memory stays in use:
    somebody holds it, the log cannot say who."""
    c = t.idle_holding_vram
    out: list[Finding] = []
    coarse = win.interval_s >= INDEPENDENT_INTERVAL_S
    needed = max(c.idle_for_s_without_host, _least_idle_s(win))
    for gpu in win.latest.gpus:
        used = gpu.vram_used_bytes
        if used is None or used < c.min_vram_gib * GIB:
            continue
        idle_s = win.gpu_idle_for_s(gpu.index, c.sm_below_percent)
        if idle_s < needed:
            continue
        age = duration_text(idle_s)
        short_age = duration_text(idle_s if idle_s < 120 else round(idle_s / 60) * 60)
        readings = round(idle_s / win.interval_s)  # since the last busy one
        pool = device_pool(win, t, gpu.index)
        out.append(
            Finding(
                rule=ID,
                subject=Subject(gpu.index),
                severity=Severity.CRITICAL if idle_s >= c.critical_after_s else Severity.WARNING,
                label=f"idle {short_age}, {used / GIB:.0f}G in use",
                summary=(
                    f"GPU {gpu.index} has read under {c.sm_below_percent:g} % utilization in "
                    f"every reading for {age} ({readings} readings) while {gib_text(used)} of "
                    "its memory stays in use: a process holds it and runs nothing"
                    + (
                        f" (each reading is the GPU's last second or so: {readings} at idle "
                        f"bound its kernels under {300.0 / readings:.1f} % of the time)"
                        if coarse
                        else ""
                    )
                    + ". This log has no per-process rows to say which."
                    + (
                        f" Its {pool * 100:.0f} % of the card has not moved since the first "
                        "reading: a pool taken at start -- an inference server's (vLLM "
                        "reserves 90 % by default for its KV cache) idle between requests, "
                        "or TensorFlow's or JAX's -- held by design while the process runs."
                        if pool is not None
                        else ""
                    )
                ),
                advice=(
                    *(
                        (
                            "A serving engine idle this long is capacity nobody uses: stop it "
                            "when not needed, or give it less (vLLM --gpu-memory-utilization "
                            "0.5, SGLang --mem-fraction-static) so the card can be shared.",
                        )
                        if pool is not None
                        else ()
                    ),
                    "Find the holder: nvidia-smi --query-compute-apps=pid,process_name,"
                    "used_memory --format=csv (or gputop-hints on the node).",
                    *(
                        (
                            "A notebook or interactive session you are done with? del the model "
                            "and call torch.cuda.empty_cache(), or restart the kernel; a "
                            "finished job that did not exit: stop it.",
                            "A distributed job? One rank may be stuck in a collective: check the "
                            "other ranks, NCCL_DEBUG=INFO, and py-spy dump on each rank's main "
                            "process.",
                        )
                        if pool is None
                        else ()
                    ),
                ),
                evidence=(
                    Evidence(
                        "no kernel for",
                        idle_s,
                        f">= {needed:g} s below {c.sm_below_percent:g} %",
                        "s",
                        Scope.DEVICE,
                    ),
                    Evidence(
                        "VRAM in use", float(used), f">= {c.min_vram_gib:g} GiB", "B", Scope.DEVICE
                    ),
                ),
                evidence_scope=Scope.DEVICE,
                subtype="holder-unknown",
            )
        )
    return out


def _least_idle_s(win: Window, named: bool = False) -> float:
    """The shortest idle stretch a log's readings can show. Each reading of a coarse log
    (INDEPENDENT_INTERVAL_S or more apart) is one draw of the duty cycle: two zeros a
    minute apart in a run at 25 % are chance, not two idle minutes, so a log needs
    IDLE_READINGS in a row whatever its spacing. Where the log names the process
    (``named``: the same holder in every reading) that is enough to say it held the
    memory through them without running; with no process named, zeros in a row bound
    the GPU's duty cycle (COARSE_DUTY_BOUND) only from 60 of them."""
    if not win.latest.imported and win.interval_s < INDEPENDENT_INTERVAL_S:
        return 0.0
    if win.interval_s >= INDEPENDENT_INTERVAL_S and not named:
        return math.ceil(3.0 / COARSE_DUTY_BOUND) * win.interval_s
    return IDLE_READINGS * win.interval_s


def _working_on_host(win: Window, t: Thresholds, proc: GpuProcess) -> bool:
    """Whether the process works on the CPU or waits on I/O: its GPU idles for a reason.

    A forgotten notebook's kernel sleeps (a few % of a core); a job saving a
    checkpoint, compiling, loading a dataset or waiting on storage does not.
    """
    c = t.idle_holding_vram
    cpu = win.process_cpu_mean(proc)
    busy_workers = win.process_busy_workers_mean(proc) or 0.0
    return (
        (cpu is not None and cpu >= c.host_busy_cpu_percent)
        or busy_workers >= 0.5
        or win.process_d_state_fraction(proc) > 0.0
    )


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=IdleHoldingVram,
    title="Idle, holding VRAM",
    sentence=(
        "The process holds device memory but the GPU has run no kernel for a while: a "
        "forgotten notebook, a finished job that did not exit, or a rank stuck in a collective."
    ),
    subject="process",
    # Without processes only the GPU-level case (holder-unknown) is looked for.
    needs=(METRIC_SM,),
    cause_needs=(METRIC_PROCESSES,),
    explains_low_utilization=True,
)
