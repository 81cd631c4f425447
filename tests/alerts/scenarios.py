"""Demo ticks for the alert tests: a scenario's snapshots, and two scenarios one after the
other as one run (the same pids, the time carrying on) -- a problem that goes away."""

from __future__ import annotations

from collections.abc import Iterator

from gputop_hints.model import Snapshot
from gputop_hints.sources.demo import DemoSource

START = 1_700_000_000.0


def ticks(
    scenario: str, count: int, interval_s: float = 1.0, start_time: float = START
) -> Iterator[Snapshot]:
    """``count`` ticks of the demo ``scenario``, its clock starting at ``start_time``."""
    source = DemoSource(scenario, interval_s=interval_s, start_time=start_time)
    try:
        for _ in range(count):
            yield source.sample()
    finally:
        source.close()


def one_after_another(*parts: tuple[str, int], interval_s: float = 1.0) -> Iterator[Snapshot]:
    """Each (scenario, ticks) in turn, each started where the one before ended: the job
    is restarted under the same pid, its problem fixed (starved-loader, then healthy) or
    back (healthy, then starved-loader)."""
    start = START
    for scenario, count in parts:
        for snap in ticks(scenario, count, interval_s, start):
            start = snap.timestamp
            yield snap
