"""ghost-memory: device memory held with nothing to show for it (issue 48).

"nvidia-smi shows 30 GB used but no process" and "kill -9: no such process": memory
in use on a GPU that the listed processes do not account for, or a listed process
that is not there. The causes differ and so does the way back; each has its evidence:

* the monitor runs in a PID namespace of its own (a container without
  ``--pid=host``): the holders are processes of the host or of other containers,
  which NVML does not list here, or lists under pids /proc does not have;
* a process that has exited but whose parent has not reaped it (state Z or X in
  /proc): its threads or the children that inherited its /dev/nvidia* descriptors
  keep the context alive -- the parent is named, to be signalled;
* a pid NVML lists that this host's /proc does not have, with the monitor in the
  host's namespace: the process is gone and the driver still holds its context;
* an MPS server: the memory is the server's shared pool, by design (info);
* the driver's own reservation only (NVML's ``used`` includes ``reserved``, the
  memory the driver and firmware set aside): under the threshold, not a finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.shared import gib_text
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_VRAM, GpuProcess, Snapshot

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "ghost-memory"

FUSER = "fuser -v /dev/nvidia*"
"""Lists every process that holds a GPU device file open, in any namespace the caller
can see (psmisc's fuser; run it as root to see other users' processes)."""

MPS_NAMES = ("nvidia-cuda-mps-server", "nvidia-cuda-mps-control")
"""The MPS daemon's process names: its server holds one context for all its clients."""


@dataclass(frozen=True)
class GhostMemory:
    """ghost-memory's thresholds: the ``ghost_memory:`` section of defaults.yaml."""

    unaccounted_above_gib: float = field(
        metadata=threshold(
            0, 1024, "GiB", "memory used beyond what the listed processes hold, above this"
        )
    )
    defunct_min_vram_gib: float = field(
        metadata=threshold(0, 1024, "GiB", "a zombie process listed with at least this much")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Zombie or missing processes listed on a GPU, then GPUs whose memory in use is
    far above the sum of what their listed processes hold."""
    snap = win.latest
    if not snap.processes and snap.imported:
        return []  # a log without per-process rows cannot account for anything
    c = t.ghost_memory
    out: list[Finding] = []
    unseen = snap.unseen_processes()
    for proc in snap.processes:
        vram = proc.vram_bytes or 0
        if proc.defunct and vram >= c.defunct_min_vram_gib * GIB:
            out.append(_defunct(proc))
        elif proc.key in unseen:
            out.append(_missing(proc, snap))
    on_gpu: dict[int, list[GpuProcess]] = {}
    for proc in snap.processes:  # once a tick, not once per GPU
        on_gpu.setdefault(proc.gpu_index, []).append(proc)
    for gpu in snap.gpus:
        used = gpu.vram_used_bytes
        if used is None or gpu.mig_mode or gpu.lost:
            continue
        procs = on_gpu.get(gpu.index, [])
        if any(p.vram_bytes is None for p in procs):
            continue  # per-process memory not reported (MIG, WDDM): nothing to sum
        listed = sum(p.vram_bytes or 0 for p in procs)
        unaccounted = used - listed
        if unaccounted <= c.unaccounted_above_gib * GIB:
            continue
        out.append(_unaccounted(gpu.index, used, listed, unaccounted, procs, snap, t))
    return out


def _defunct(proc: GpuProcess) -> Finding:
    parent = (
        f"its parent {proc.parent_pid}"
        + (f" ({proc.parent_name})" if proc.parent_name else "")
        + (" -- itself a zombie, a launcher that died" if proc.parent_state == "Z" else "")
        if proc.parent_pid is not None
        else "its parent (not known)"
    )
    signal_line = (
        f"Make {proc.parent_pid} reap it: kill -CHLD {proc.parent_pid}; if it still does "
        f"not, end the parent (kill {proc.parent_pid}) -- init then reaps the zombie."
        if proc.parent_pid is not None and proc.parent_pid > 1
        else "Its parent is init: the zombie goes once its last thread and every "
        "process holding its device files exit."
    )
    return Finding(
        rule=ID,
        subject=Subject(proc.gpu_index, proc.pid),
        severity=Severity.WARNING,
        label=f"defunct, holds {(proc.vram_bytes or 0) / GIB:.0f}G",
        summary=(
            f"Process {proc.pid} has exited (state {proc.state}, defunct) but NVML still "
            f"lists it with {gib_text(proc.vram_bytes)} on GPU {proc.gpu_index}: {parent} "
            "has not reaped it, and its CUDA context stays while any of its threads or the "
            "children that inherited its /dev/nvidia* descriptors (DataLoader workers) live. "
            "kill -9 on it does nothing: it is already dead."
        ),
        advice=(
            signal_line,
            f"List every holder of the GPU's device files: {FUSER} (as root), and end the "
            "leftover children it names.",
        ),
        evidence=(
            Evidence("process state", None, f"{proc.state}: Z or X", "", Scope.PROCESS, met=None),
            Evidence(
                "VRAM held", float(proc.vram_bytes or 0), "listed by NVML", "B", Scope.PROCESS
            ),
            Evidence(
                "parent pid",
                None if proc.parent_pid is None else float(proc.parent_pid),
                "to signal",
                "",
                Scope.HOST,
                met=None,
            ),
        ),
        evidence_scope=Scope.PROCESS,
        subtype="defunct",
    )


def _missing(proc: GpuProcess, snap: Snapshot) -> Finding:
    nested = snap.pid_namespace_nested
    if nested:
        why = (
            "this monitor runs in a PID namespace of its own (a container without "
            "--pid=host): the process lives on the host or in another container, whose "
            "pids this one cannot see -- kill here answers 'No such process'."
        )
        advice: tuple[str, ...] = (
            "See it from the host: run nvidia-smi or gputop-hints there, or start this "
            "container with --pid=host (Kubernetes: hostPID: true).",
            "On the host, ps -p <pid> names it; docker top <container> lists a container's.",
        )
        subtype = "other-namespace"
    else:
        why = (
            "this monitor sees the host's processes, so it has exited: the driver still "
            "holds its context while a child that inherited its device files lives, or "
            "while the driver tears it down (seconds; longer means a stuck teardown)."
        )
        advice = (
            f"List every holder of the GPU's device files: {FUSER} (as root); end the "
            "leftover processes it names.",
            "If nothing holds them and the memory stays, the driver is stuck on it: "
            "nvidia-smi -q shows the GPU's state; a GPU reset (nvidia-smi -r) or a reboot "
            "frees it.",
        )
        subtype = "exited"
    return Finding(
        rule=ID,
        subject=Subject(proc.gpu_index, proc.pid),
        severity=Severity.INFO if nested else Severity.WARNING,
        label="other PID namespace" if nested else "no such process",
        summary=(
            f"NVML lists pid {proc.pid} on GPU {proc.gpu_index} with "
            f"{gib_text(proc.vram_bytes)}, and /proc here has no such process: {why}"
        ),
        advice=advice,
        evidence=(
            Evidence(
                "VRAM held", float(proc.vram_bytes or 0), "listed by NVML", "B", Scope.PROCESS
            ),
            Evidence(
                "monitor in a nested PID namespace",
                None if nested is None else float(nested),
                "1: another namespace",
                "",
                Scope.HOST,
                met=None,
            ),
        ),
        evidence_scope=Scope.PROCESS,
        subtype=subtype,
    )


def _unaccounted(
    index: int,
    used: int,
    listed: int,
    unaccounted: int,
    procs: list[GpuProcess],
    snap: Snapshot,
    t: Thresholds,
) -> Finding:
    c = t.ghost_memory
    mps = [p for p in procs if (p.name or "") in MPS_NAMES]
    who = f"{len(procs)} listed process{'es' if len(procs) != 1 else ''}"
    if mps:
        subtype, severity = "mps", Severity.INFO
        cause = (
            f"An MPS server (pid {mps[0].pid}) runs on it: its clients' memory is held in "
            "the server's context, which NVML may count once for the server."
        )
        advice: tuple[str, ...] = (
            "Expected under MPS; echo get_server_list | nvidia-cuda-mps-control lists the "
            "servers, and quitting the control daemon (echo quit | ...) frees the pool.",
        )
    elif snap.pid_namespace_nested:
        subtype, severity = "other-namespace", Severity.WARNING
        cause = (
            "This monitor runs in a PID namespace of its own (a container without "
            "--pid=host): processes of the host and of other containers hold the rest, "
            "and NVML does not list them here."
        )
        advice = (
            "See them from the host: nvidia-smi or gputop-hints there, or start this "
            "container with --pid=host (Kubernetes: hostPID: true).",
        )
    elif snap.source in ("live", "demo"):  # a process view of the whole node (the demo's simulated)
        subtype, severity = "unlisted", Severity.WARNING
        cause = (
            "This monitor sees the host's processes, yet none is listed for the rest: a "
            "process that exited while a child kept its device files open, a zombie whose "
            "parent has not reaped it, or a context the driver has not torn down."
        )
        advice = (
            f"List every holder of the GPU's device files: {FUSER} (as root); end the "
            "leftover processes, or signal the parent of a <defunct> one (ps -eo "
            "pid,ppid,stat,cmd | grep -w Z).",
            "If nothing holds them and the memory stays, a GPU reset (nvidia-smi -r) or a "
            "reboot frees it.",
        )
    else:
        subtype, severity = "unlisted", Severity.WARNING
        cause = (
            "The log's process rows do not account for it: processes in other containers "
            "(a log taken inside one), or memory held after its process exited."
        )
        advice = (f"On the node: {FUSER} (as root) lists every holder of the GPU's device files.",)
    return Finding(
        rule=ID,
        subject=Subject(index),
        severity=severity,
        label=f"{unaccounted / GIB:.0f}G unaccounted",
        summary=(
            f"GPU {index} has {gib_text(used)} in use, of which its {who} hold "
            f"{gib_text(listed)}: {gib_text(unaccounted)} is held by nothing listed, more "
            f"than the driver's own reservation ({c.unaccounted_above_gib:g} GiB allowed). " + cause
        ),
        advice=advice,
        evidence=(
            Evidence(
                "VRAM unaccounted",
                float(unaccounted),
                f"> {c.unaccounted_above_gib:g} GiB",
                "B",
                Scope.DEVICE,
            ),
            Evidence("VRAM in use", float(used), "for context", "B", Scope.DEVICE, met=None),
            Evidence(
                "VRAM of listed processes",
                float(listed),
                "for context",
                "B",
                Scope.DEVICE,
                met=None,
            ),
        ),
        evidence_scope=Scope.DEVICE,
        subtype=subtype,
    )


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=GhostMemory,
    title="Ghost memory",
    sentence=(
        "Device memory held with nothing to show for it: used far beyond what the listed "
        "processes hold, a listed pid with no such process, or a zombie holding memory -- "
        "with the cause (another PID namespace, an unreaped zombie and its parent, MPS) "
        "and the way back."
    ),
    subject="gpu",
    needs=(METRIC_VRAM,),
    cause_needs=(METRIC_PROCESSES,),
)
