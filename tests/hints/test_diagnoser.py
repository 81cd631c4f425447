"""The Diagnoser: the one owner of history + engine that every output feeds ticks through.

What a user would notice if it went wrong: the TUI, ``report`` and ``--once``
disagreeing about the same data; a custom slow window that the report cannot
see; findings surviving a replay seek; a log whose spacing changes reading a
different span of time.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import gputop_hints
from gputop_hints.hints.diagnoser import Diagnoser, history_window_s
from gputop_hints.history import DEFAULT_WINDOW_S
from tests.hints.windows import THRESHOLDS, G, Tick, snapshot

VRAM_HIGH = Tick((G(sm=95.0, vram_gib=77.0),))
"""96 % of VRAM: vram-near-limit holds (shows after 2 s)."""


def _feed(diag: Diagnoser, ticks: int, interval_s: float = 1.0, t0: float = 1000.0) -> float:
    t = t0
    for _ in range(ticks):
        diag.feed(snapshot(VRAM_HIGH, t, interval_s))
        t += interval_s
    return t


def test_the_history_covers_what_the_rules_read_even_when_the_user_widens_a_window() -> None:
    assert history_window_s(THRESHOLDS) == DEFAULT_WINDOW_S
    wide = dataclasses.replace(
        THRESHOLDS, general=dataclasses.replace(THRESHOLDS.general, slow_window_s=600.0)
    )
    assert Diagnoser(wide).window_s == 600.0
    assert Diagnoser(wide).history.window_s == 600.0
    assert Diagnoser(wide, window_s=30.0).window_s == 30.0  # the TUI's --window, as asked


def test_findings_show_after_hysteresis_and_a_restart_forgets_them() -> None:
    diag = Diagnoser(THRESHOLDS)
    _feed(diag, 1)
    assert "vram-near-limit" not in {f.rule for f in diag.findings}
    _feed(diag, 4, t0=1001.0)
    assert "vram-near-limit" in {f.rule for f in diag.findings}
    diag.restart()
    assert diag.findings == ()
    assert diag.history.latest is None


def test_a_change_of_spacing_restarts_the_history_but_not_the_findings() -> None:
    diag = Diagnoser(THRESHOLDS, interval_s=1.0)
    t = _feed(diag, 5)
    [before] = [f for f in diag.findings if f.rule == "vram-near-limit"]
    _feed(diag, 1, interval_s=5.0, t0=t + 4.0)
    assert diag.interval_s == 5.0
    assert diag.history.ticks == 1  # a 1 s ring would hold a different span of 5 s ticks
    [after] = [f for f in diag.findings if f.rule == "vram-near-limit"]
    assert after.started_at == before.started_at  # hysteresis and "since" carry on


def test_one_off_shows_a_condition_at_once() -> None:
    snaps = [snapshot(VRAM_HIGH, 1000.0, 1.0)]
    findings = Diagnoser.one_off(snaps, THRESHOLDS).feed_all(snaps)
    assert "vram-near-limit" in {f.rule for f in findings}


def test_nothing_outside_the_hints_builds_its_own_engine_or_hint_history() -> None:
    """Every consumer goes through the Diagnoser: one place decides the window."""
    root = Path(gputop_hints.__file__).parent
    bench = root.parent / "bench"
    offenders = []
    for path in [*root.rglob("*.py"), *bench.rglob("*.py")]:
        if path.parent.name == "hints" and path.name in ("diagnoser.py", "engine.py"):
            continue
        calls = [
            node
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "HintEngine"
        ]
        if calls:
            offenders.append(str(path.relative_to(root.parent)))
    assert offenders == []


def test_a_gpu_that_stops_answering_loses_its_findings_at_once() -> None:
    """Its values are unknown now: what was said of it is stale (as for a lost GPU)."""
    diag = Diagnoser(THRESHOLDS)
    t = _feed(diag, 5)
    assert "vram-near-limit" in {f.rule for f in diag.findings}
    snap = snapshot(VRAM_HIGH, t, 1.0)
    silent = tuple(
        dataclasses.replace(g, sm_percent=None, vram_used_bytes=None, not_answering_s=2.0)
        for g in snap.gpus
    )
    diag.feed(dataclasses.replace(snap, gpus=silent, processes=()))
    assert diag.findings == ()
