"""Raised, cleared, deduplicated and rate-limited, on the demo's scenarios.

Every time here is the snapshots' own (the demo's simulated clock): nothing waits
and nothing depends on how fast the machine is."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from gputop_hints.alerts import CLEARED, RAISED, AlertEngine, AlertEvent, NotifySettings
from gputop_hints.alerts.channels import terminal_bytes
from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.model import Snapshot
from tests.alerts.scenarios import one_after_another, ticks

BELL = frozenset({"bell"})


def run(snapshots: Iterable[Snapshot], **settings: float) -> tuple[list[AlertEvent], AlertEngine]:
    engine = AlertEngine(NotifySettings(channels=BELL, **settings))  # type: ignore[arg-type]
    diagnoser = Diagnoser(interval_s=1.0)
    events: list[AlertEvent] = []
    for snap in snapshots:
        events.extend(engine.observe(diagnoser.feed(snap), snap))
    return events, engine


def test_a_starved_loader_is_raised_once_with_its_label_process_and_advice() -> None:
    events, _ = run(ticks("starved-loader", 600))
    assert [(e.kind, e.rule, e.gpu_index, e.pid) for e in events] == [
        (RAISED, "input-starved", 0, 4000)
    ]
    event = events[0]
    assert event.severity == "warning"
    assert event.label == "starved: num_workers=0?"
    assert event.process == "python"
    assert event.advice.startswith("Set DataLoader(num_workers=")
    assert event.title == "gputop-hints: warning on GPU 0"
    assert event.body.startswith("starved: num_workers=0? -- pid 4000 python: Set DataLoader")


def test_a_healthy_run_raises_nothing() -> None:
    events, engine = run(ticks("healthy", 600))
    assert events == []
    assert engine.suppressed == 0


def test_the_problem_fixed_is_cleared_after_the_hold_off_and_not_before() -> None:
    snaps = list(one_after_another(("starved-loader", 300), ("healthy", 300)))
    events, _ = run(snaps, clear_after_s=60)
    assert [(e.kind, e.rule, e.pid) for e in events] == [
        (RAISED, "input-starved", 4000),
        (CLEARED, "input-starved", 4000),
    ]
    raised, cleared = events
    assert cleared.label == raised.label
    assert cleared.body.startswith("cleared: starved: num_workers=0? -- pid 4000 python")
    # The hints stop showing it at some tick after the switch; the clear comes a
    # hold-off later, by the ticks' own clock.
    switch = snaps[299].timestamp
    assert cleared.at - switch >= 60
    shorter, _ = run(snaps, clear_after_s=10)
    assert shorter[1].at < cleared.at
    assert cleared.at - shorter[1].at == 50


def test_a_hold_off_longer_than_the_gap_means_it_never_cleared() -> None:
    events, _ = run(one_after_another(("starved-loader", 300), ("healthy", 120)), clear_after_s=600)
    assert [e.kind for e in events] == [RAISED]


def test_back_within_the_minimum_interval_it_is_not_raised_again() -> None:
    # starved, fixed (cleared), starved again: the second raise comes some 500 s after
    # the first -- inside a 3600 s minimum interval, outside a 60 s one.
    def flap() -> Iterable[Snapshot]:
        return one_after_another(("starved-loader", 300), ("healthy", 200), ("starved-loader", 300))

    often, _ = run(flap(), clear_after_s=30, min_interval_s=60)
    assert [e.kind for e in often] == [RAISED, CLEARED, RAISED]
    seldom, engine = run(flap(), clear_after_s=30, min_interval_s=3600)
    assert [e.kind for e in seldom] == [RAISED, CLEARED]
    assert engine.suppressed == 1


def test_the_cap_per_minute_keeps_the_first_and_counts_the_rest() -> None:
    # mixed: three jobs go bad within 15 s of each other (small batch, idle holding
    # VRAM, starved loader).
    every, _ = run(ticks("mixed", 120), max_per_minute=100)
    assert [e.rule for e in every] == ["small-batch", "idle-holding-vram", "input-starved"]
    capped, engine = run(ticks("mixed", 120), max_per_minute=2)
    assert [e.rule for e in capped] == ["small-batch", "idle-holding-vram"]
    assert engine.suppressed == 1


def test_an_unsafe_process_name_is_shown_visibly_everywhere() -> None:
    hostile = "\x1b]0;PWNED\x07\x1b[2J"

    def renamed() -> Iterable[Snapshot]:
        for snap in ticks("starved-loader", 120):
            procs = tuple(dataclasses.replace(p, name=hostile) for p in snap.processes)
            yield dataclasses.replace(snap, processes=procs)

    events, _ = run(renamed())
    (event,) = events
    assert event.process == "^[]0;PWNED^G^[[2J"
    written = terminal_bytes(event, frozenset({"bell", "osc"}), in_tmux=False)
    # Only the notification's own framing is control characters: OSC 9 and OSC 777,
    # each ESC ] ... BEL, then the bell.
    assert written.count("\x1b") == 2
    assert written.count("\x07") == 3
    assert "PWNED" in written and "\x1b]0;" not in written
