"""Whose is it? Splitting a shared GPU's readings between the processes on it.

NVML's device readings (utilization, its buffered sub-second samples, PCIe) are
per GPU; its per-process utilization samples (``nvmlDeviceGetProcessUtilization``)
are one a tick and exist only for a process that ran kernels in the period.
Without MPS the contexts of different processes time-slice, so their shares add up
to the device's (CUDA Programming Guide, "Compute modes"). What one process did is
read from its own evidence: its own samples, the device's less the others' own
share, and its host side (main process CPU, workers, D state) in its own idle ticks.
Computed once per window (``Window.derived``).
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import compress
from typing import cast

from gputop_hints.hints.window import Window
from gputop_hints.model import GpuProcess


def others_sm_per_tick(win: Window, proc: GpuProcess) -> list[float]:
    """Per window tick (oldest first): the summed own SM % of every *other* process on
    ``proc``'s GPU (no sample = ran nothing). Without MPS contexts time-slice, so
    their shares add up to the device's; this is the others' part of it."""
    index = proc.gpu_index
    totals = win.derived(("gpu-process-sm", index), lambda: _gpu_sm_sums(win, index))
    ph = win.process_history(proc)
    own = ph.sm_percent.last(win.ticks) if ph else []
    if len(own) < len(totals):
        own = [*([None] * (len(totals) - len(own))), *own]
    return [max(0.0, t - (o or 0.0)) for t, o in zip(totals, own, strict=True)]


def _gpu_sm_sums(win: Window, index: int) -> list[float]:
    sums = [0.0] * win.ticks
    for ph in win.history.processes.values():
        if ph.gpu_index != index:
            continue
        values = ph.sm_percent.last(win.ticks)
        offset = win.ticks - len(values)
        for i, v in enumerate(values):
            if v:
                sums[offset + i] += v
    return sums


def process_fine_sm(win: Window, proc: GpuProcess) -> tuple[list[float], float] | None:
    """A sub-second trace of ``proc``'s own activity on a shared GPU: (values, period).

    NVML's buffered samples are per device and its per-process samples one a tick
    (``nvmlDeviceGetProcessUtilization``); each buffered sample minus the other
    processes' own share in its tick leaves this process's part of it. None where the
    device has no buffered samples or reports no per-process samples at all.
    """
    # Window.derived's cache read and filled here (~32 asks a tick at 8 x 64): no lambda.
    memo = win.memo
    key = ("process-fine", proc.pid, proc.gpu_index)
    if key in memo:
        found: tuple[list[float], float] | None = memo[key]
        return found
    value = memo[key] = _process_fine_sm(win, proc)
    return value


def _process_fine_sm(win: Window, proc: GpuProcess) -> tuple[list[float], float] | None:
    fine = win.gpu_fine_sm(proc.gpu_index)
    if fine is None or not win.process_samples_reported(proc.gpu_index):
        return None
    period = fine[2]
    # What others_sm_per_tick gives, without building it: per tick, the GPU's summed own
    # SM % less this process's own sample (none = ran nothing = 0), never below 0.
    index = proc.gpu_index
    # Once per window and GPU, read off Window.derived's cache with no lambda.
    memo = win.memo
    key = ("gpu-process-sm", index)
    if key in memo:
        totals: list[float] = memo[key]
    else:
        totals = memo[key] = _gpu_sm_sums(win, index)
    key = ("gpu-fine-ticks", index)
    if key in memo:
        ticks: list[tuple[int, list[float]]] = memo[key]
    else:
        ticks = memo[key] = _fine_ticks(win, index, len(totals))
    n_ticks = len(totals)
    ph = win.process_history(proc)
    own = ph.sm_percent.last(n_ticks) if ph else []
    pad = n_ticks - len(own)
    out: list[float] = []
    extend = out.extend
    for i, tick in ticks:
        mine = own[i - pad] if i >= pad else None
        floor = totals[i] - (mine or 0.0)
        if not floor > 0.0:
            floor = 0.0  # max(0.0, ...) without its call
        rest = [v - floor if v > floor else 0.0 for v in tick]
        # The others' kernels come in bursts inside a tick too: a burst of theirs must
        # not become this process's. Within each tick its part keeps the shape of what
        # is left but averages to its own sample (none = ran nothing = 0).
        target = mine or 0.0
        total = sum(rest)
        if total > 0:
            scale = target * len(rest) / total
            extend([x if (x := r * scale) < 100.0 else 100.0 for r in rest])
        else:
            extend([target] * len(rest))
    return out, period


def _fine_ticks(win: Window, index: int, n_ticks: int) -> list[tuple[int, list[float]]]:
    """GPU ``index``'s sub-second samples cut into the window's ticks: (tick, its samples)
    for each tick with any, oldest first (once per window and GPU: the cut is the same
    for every process on it)."""
    fine = win.gpu_fine_sm(index)
    assert fine is not None
    times, values, _period = fine
    out: list[tuple[int, list[float]]] = []
    now, interval = win.now, win.interval_s
    # Tick i (oldest first) covers (now - (n - i) * interval, now - (n - 1 - i) * interval];
    # samples are in time order, so each tick's are one slice.
    start = 0
    for i in range(n_ticks):
        end_t = now - (n_ticks - 1 - i) * interval + 1e-6
        end = bisect_right(times, end_t, lo=start) if i < n_ticks - 1 else len(times)
        if end == start:
            continue
        out.append((i, values[start:end]))
        start = end
    return out


def host_works_while_idle(
    win: Window, proc: GpuProcess, below: float, busy_cpu: float
) -> bool | None:
    """Whether ``proc``'s host side works in the ticks its *own* GPU share is idle
    (below ``below``): its main process at ``busy_cpu`` % of a core or more, or a busy
    worker, on average over those ticks. None: no own samples, or no idle tick."""
    own = win.process_sm_values(proc)
    ph = win.process_history(proc)
    if own is None or ph is None:
        return None
    n = len(own)
    if min(own, default=below) >= below:
        return None  # no idle tick
    # The idle ticks' mask once, then each series' readings in them picked in C
    # (compress): the same readings, in the same order, as a zip over each.
    idle = [v < below for v in own]
    cpus = list(compress(ph.cpu_percent.last(n), idle))
    known = cast("list[float]", [c for c in cpus if c is not None] if None in cpus else cpus)
    workers = list(compress(ph.busy_workers.last(n), idle))
    helpers = cast(
        "list[float]", [w for w in workers if w is not None] if None in workers else workers
    )
    return bool(
        (known and sum(known) / len(known) >= busy_cpu)
        or (helpers and sum(helpers) / len(helpers) >= 0.5)
    )
