"""The sampling behind a one-off summary (``--once``, ``--json``): :func:`collect`.

Live sources are sampled in real time; simulated ones advance their own clock
and return at once. A simulated source first runs past its warm-up
(:func:`preroll`), so a one-off demo summary shows the jobs it simulates rather
than their start. No Textual here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gputop_hints.model import Snapshot
from gputop_hints.sources import Source


def collect(
    source: Source,
    duration_s: float,
    interval_s: float,
    meanwhile: Callable[[], None] | None = None,
) -> list[Snapshot]:
    """Take samples for ``duration_s`` (at least two), for ``--once``/``--json``.

    Live sources are sampled in real time; simulated ones advance their own clock
    and return at once. ``meanwhile`` runs once after the first sample, in the time
    the second is waited for (what the summary needs next: its imports).
    """
    count = max(2, round(duration_s / interval_s) + 1)
    out: list[Snapshot] = []
    start = time.monotonic()
    for i in range(count):
        if i == 1 and meanwhile is not None:
            meanwhile()
        if i and not source.simulated:
            wait = start + i * interval_s - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        out.append(source.sample())
    return out


def preroll(source: Source, interval_s: float, window_s: float) -> list[Snapshot]:
    """The ticks of a simulated source's warm-up that a hint window still holds.

    The hints read them as context before the summary's own ticks. A live source
    has no warm-up to skip: nothing is sampled and the list is empty.
    """
    if not source.simulated:
        return []
    keep = round(window_s / interval_s) + 1
    context: list[Snapshot] = []
    for _ in range(round(_warm_up_s(source) / interval_s)):
        context = [*context[-keep:], source.sample()]
    return context


def _warm_up_s(source: Source) -> float:
    """Simulated seconds until every simulated job is past its warm-up, plus a margin."""
    onsets = getattr(source, "label_onsets", None)
    start = getattr(source, "start_time", None)
    if not onsets or start is None:
        return 0.0
    return float(max(t - start for t in onsets.values())) + 20.0
