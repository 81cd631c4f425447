"""The engine's running host-side tallies never drift from the window counted afresh.

The engine counts each process's busy workers and D states once, as a snapshot enters
the ring, and reads a window's sums off running totals (``hints.running``). Fed tick by
tick -- processes coming and going, workers changing state, the ring dropping its
oldest snapshot every tick, a history replaced mid-run -- every window's host side, and
every rule's findings, must be exactly those of a window counted from its snapshots.
"""

from __future__ import annotations

import math

from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.rules import ALL_RULES
from gputop_hints.hints.window import Window
from gputop_hints.history import History
from tests.hints.windows import T0, THRESHOLDS, G, H, P, Tick, W, snapshot


def _tick(k: int, shape: str) -> Tick:
    """Tick ``k`` of a generated node: 2 GPUs, up to 6 processes with waves of SM and
    workers whose CPU and state change, some processes leaving and coming back."""
    procs = []
    for i in range(6):
        pid = 5000 + i
        if shape == "churn" and (k // (5 + i)) % 3 == 2:
            continue  # gone for a while, then back
        phase = 2 * math.pi * k / (7 + i) + i
        sm = round(50 + 45 * math.sin(phase))
        workers = tuple(
            W(cpu=float((k * (j + 3) + i * 7) % 60), state="D" if (k + j + i) % 4 == 0 else "S")
            for j in range(i % 4)
        )
        state = "D" if shape == "blocked" and k % 3 == 0 else ("R" if k % 2 else "S")
        procs.append(
            P(pid=pid, gpu=i % 2, sm=sm, cpu=float(40 + k % 50), workers=workers, state=state)
        )
    gpus = tuple(G(index=g, sm=50.0, mem=20.0, samples=(50.0,) * 6) for g in range(2))
    return Tick(gpus=gpus, procs=tuple(procs), host=H(cores=8, busy=30.0, iowait=k % 20))


def _run(shape: str, ticks: int, replace_at: int | None = None) -> None:
    engine = HintEngine(THRESHOLDS)
    history = History(window_s=130.0, interval_s=1.0)
    busy = THRESHOLDS.general.worker_busy_percent
    for k in range(ticks):
        if k == replace_at:
            history = History(window_s=130.0, interval_s=1.0)  # as a Diagnoser does
        history.append(snapshot(_tick(k, shape), T0 + k, 1.0))
        engine.update(history)
        tallies = engine._host_tallies
        for length in (1.0, 6.0, 15.0, 120.0):
            kept = Window(history, length, worker_busy_percent=busy, host_tallies=tallies)
            fresh = Window(history, length, worker_busy_percent=busy)
            assert kept.host_tallies is tallies and fresh.host_tallies is None
            # Every process of the ring, those gone from the window's newest ticks too.
            ring = {p.key: p for snap in history.snapshots for p in snap.processes}
            for (pid, _), probe in sorted(ring.items()):
                assert kept.process_busy_workers_mean(probe) == fresh.process_busy_workers_mean(
                    probe
                ), (shape, k, length, pid)
                assert kept.process_d_state_fraction(probe) == fresh.process_d_state_fraction(
                    probe
                ), (shape, k, length, pid)
            for spec in ALL_RULES:
                assert spec.check(kept, THRESHOLDS) == spec.check(fresh, THRESHOLDS), (
                    shape,
                    k,
                    length,
                    spec.id,
                )


def test_tallies_match_a_fresh_count_as_processes_come_and_go() -> None:
    _run("churn", 60)


def test_tallies_match_a_fresh_count_with_workers_blocked_on_reads() -> None:
    _run("blocked", 45)


def test_tallies_start_over_on_a_new_history() -> None:
    _run("churn", 40, replace_at=25)


def test_tallies_hold_no_more_than_the_ring() -> None:
    """Bounded by the ring, whatever the uptime: after many ticks of processes coming
    and going, only the ring's snapshots (and, per process, one entry before them)
    are kept."""
    engine = HintEngine(THRESHOLDS)
    history = History(window_s=130.0, interval_s=1.0)
    for k in range(200):
        history.append(snapshot(_tick(k, "churn"), T0 + k, 1.0))
        engine.update(history)
    tallies = engine._host_tallies
    assert len(tallies._ring) == len(history.snapshots)
    live = {p.key for snap in history.snapshots for p in snap.processes}
    assert set(tallies._by_key) == live
    for entries in tallies._by_key.values():
        assert len(entries) <= len(history.snapshots) + 1
