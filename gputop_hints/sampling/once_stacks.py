"""The stack readings of a one-off summary (``--once``, ``--json``): :func:`read_warned`.

After the ticks are collected, each process the hints warn about (at most
:data:`MAX_PROCESSES`, worst first) is sampled with py-spy -- its main process and up to
:data:`MAX_WORKERS` of its workers, :data:`SAMPLES` dumps :data:`PERIOD_S` apart -- all
processes at once, each on its own thread, so the summary waits about
``SAMPLES x PERIOD_S`` (~1 s) plus one dump, whatever the number of processes. Only a
live source's processes are this machine's: the caller asks only for those. No
warned process: nothing is sampled. Never raises: a refusal or a missing py-spy comes
back as the reading's ``reason``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Finding, Severity
from gputop_hints.model import GpuProcess, Snapshot

if TYPE_CHECKING:
    from gputop_hints.stacks import StackReading

MAX_PROCESSES = 3
MAX_WORKERS = 2
"""Workers sampled beside each main process (the busiest): each adds a dump a sample."""
SAMPLES = 10
PERIOD_S = 0.1
TIMEOUT_S = 0.5
"""One dump's limit: a slow py-spy costs that sample, not the summary's time."""


def warned_processes(findings: Sequence[Finding], snapshot: Snapshot) -> list[GpuProcess]:
    """The processes of ``snapshot`` with a warning-or-worse finding, worst first (then
    as the findings are ordered), each once, at most :data:`MAX_PROCESSES`. A finding
    about a whole GPU (low utilization, a sawtooth seen only on the device) counts for
    the process when it is the only one on that GPU: its stack is the GPU's story."""
    by_pid = {p.pid: p for p in snapshot.processes}
    on_gpu: dict[int, list[GpuProcess]] = {}
    for p in snapshot.processes:
        on_gpu.setdefault(p.gpu_index, []).append(p)
    ranked = sorted(
        (f for f in findings if f.severity >= Severity.WARNING),
        key=lambda f: -f.severity,
    )
    out: dict[int, GpuProcess] = {}
    for f in ranked:
        pid = f.subject.pid
        if pid is None:
            alone = on_gpu.get(f.subject.gpu_index) if f.subject.gpu_index is not None else None
            if alone is not None and len(alone) == 1:
                out.setdefault(alone[0].pid, alone[0])
        elif pid in by_pid:
            out.setdefault(pid, by_pid[pid])
    return list(out.values())[:MAX_PROCESSES]


def _workers(proc: GpuProcess) -> tuple[int, ...]:
    busiest = sorted(proc.workers, key=lambda w: -(w.cpu_percent or 0.0))
    return tuple(w.pid for w in busiest[:MAX_WORKERS])


def read_stacks(processes: Sequence[GpuProcess]) -> tuple[StackReading, ...]:
    """Each process's reading (in the order given), sampled concurrently; one reading
    per process even when py-spy is missing (its reason says so)."""
    if not processes:
        return ()
    # Imported only now: a summary with no warned process never loads the stack reader
    # (nor its thread pool), ~5 ms of ``--once``'s start (issue 49 item 3).
    from concurrent.futures import ThreadPoolExecutor

    from gputop_hints.stacks import StackReading, classify, find_py_spy, sample

    found = find_py_spy()
    if found.path is None:
        reason = found.reason or "py-spy is not installed"
        return tuple(StackReading(p.pid, 0, (), reason=reason) for p in processes)
    py_spy = found.path

    def one(proc: GpuProcess) -> StackReading:
        try:
            got = sample(proc.pid, _workers(proc), SAMPLES, PERIOD_S, TIMEOUT_S, py_spy)
            return classify(got)
        except Exception as error:  # a reading that fails is said, never a traceback
            return StackReading(proc.pid, 0, (), reason=f"sampling failed: {error}")

    with ThreadPoolExecutor(max_workers=len(processes), thread_name_prefix="once-stacks") as pool:
        return tuple(pool.map(one, processes))


def read_warned(findings: Sequence[Finding], snapshot: Snapshot) -> tuple[StackReading, ...]:
    """The readings of ``snapshot``'s warned processes (:func:`warned_processes`)."""
    return read_stacks(warned_processes(findings, snapshot))
