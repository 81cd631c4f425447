"""Reading one utilization trace: idle gaps, how long a GPU has idled, how VRAM rose.

Pure functions of a sequence of readings, shared by :class:`~gputop_hints.hints.window.Window`
(which applies them to the window's slice of history) and the engine (which keeps
records longer than the history ring).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gputop_hints.history import GpuHistory

GIB = 2**30

VRAM_STEADY_SHARE = 0.005
"""A process's VRAM that moves by less than this share of the card holds its level. A
framework's reserved pool does not move at all; a caching allocator's reserve moves with
fragmentation and batch shapes by more than this (400 MiB of an 80 GiB card)."""

VRAM_JUMP_S = 5.0
"""How quickly a pre-allocation takes its share: one reservation (vLLM's KV cache after
profiling, TensorFlow's and JAX's pool at start) lands within a few seconds, where a
caching allocator grows with the first training steps over tens of seconds."""


def vram_rise(values: Sequence[float | None], end: int, interval_s: float) -> float:
    """How much VRAM rose in the ``VRAM_JUMP_S`` before index ``end`` (to ``values[end]``)."""
    level = values[end]
    if level is None:
        return 0.0
    back = max(1, math.ceil(VRAM_JUMP_S / interval_s))
    before = [v for v in values[max(0, end - back) : end] if v is not None]
    return max(0.0, level - min(before)) if before else 0.0


@dataclass(frozen=True, slots=True)
class Gaps:
    """Idle stretches in a utilization trace."""

    fraction: float
    """Share of the traced time spent in idle runs at least ``min_gap_s`` long."""
    count: int
    """How many such idle runs (a sawtooth has several; a checkpoint pause has one)."""
    peak_percent: float
    fine: bool
    """True when computed from NVML's sub-second samples, False from 1-per-tick values."""


def idle_gaps(
    values: Sequence[float],
    period_s: float,
    below: float,
    min_gap_s: float,
    fine: bool,
) -> Gaps | None:
    """Find idle stretches: runs of samples below ``below``, each standing for ``period_s``.

    A sample only partly covered by an idle stretch reads in between (a 1/6 s
    sample that is half idle reads ~50 %), so the samples on either side of a
    run add their idle share ``(100 - value) / 100`` of a period to its length.
    Without that, a 0.5 s gap sampled every 1/6 s would often measure 0.33 s.
    """
    if not values:
        return None
    total = len(values) * period_s
    # The idle readings' positions (a comprehension, in C's loop), then their runs: a
    # busy trace has few, and every reading is looked at once instead of twice.
    idle_at = [i for i, v in enumerate(values) if v < below]
    if not idle_at:
        # No reading idle: no gap (the common busy case).
        return Gaps(fraction=0.0, count=0, peak_percent=max(values), fine=fine)
    n = len(values)
    idle = 0.0
    count = 0
    start = prev = idle_at[0]
    for i in [*idle_at[1:], n + 1]:
        if i == prev + 1:
            prev = i
            continue
        end = prev + 1
        length = (end - start) * period_s
        # max(0.0, idle) without its call (a run's two edges, every run of every trace):
        # adding nothing where the edge is not idle at all is adding max's 0.0.
        if start > 0 and (edge := 100.0 - values[start - 1]) > 0.0:
            length += edge / 100.0 * period_s
        if end < n and (edge := 100.0 - values[end]) > 0.0:
            length += edge / 100.0 * period_s
        if length >= min_gap_s - 1e-9:
            idle += length
            count += 1
        start = prev = i
    return Gaps(
        fraction=min(1.0, idle / total) if total > 0 else 0.0,
        count=count,
        peak_percent=max(values),
        fine=fine,
    )


def ring_idle_for_s(gh: GpuHistory, now: float, interval_s: float, below: float) -> float:
    """How long a GPU's SM % has stayed below ``below``, as far back as its ring reaches."""
    run = 0
    for v in reversed(gh.sm_percent.last()):
        if v is None or v >= below:
            break
        run += 1
    if run == 0:
        return 0.0
    # A burst between two ticks shows in the fine samples even when both ticks read idle.
    fine_start = now - run * interval_s
    for s in reversed(gh.sm_samples):
        if s.timestamp <= fine_start:
            break
        if s.percent >= below:
            return max(0.0, now - s.timestamp)
    return run * interval_s
