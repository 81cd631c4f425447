"""The phase model and the per-GPU verdict (hints.phases; docs/hints.md, "Phases").

Traces are built as a log would give them -- one reading per interval -- and the
figures each assertion checks are counted from the trace itself, not from the model.
"""

from __future__ import annotations

import pytest

from gputop_hints.hints.phases import Kind, PhaseTracker, start_up_end

GIB = 2**30
T0 = 1_700_000_000.0


def track(
    sm: list[float],
    interval_s: float = 1.0,
    vram_gib: float | list[float] = 10.0,
    power: list[float] | None = None,
    limit: float | None = None,
    temperature: list[float] | None = None,
) -> PhaseTracker:
    tracker = PhaseTracker(0, interval_s)
    vram = vram_gib if isinstance(vram_gib, list) else [vram_gib] * len(sm)
    for i, value in enumerate(sm):
        tracker.add(
            T0 + i * interval_s,
            value,
            vram[i] * GIB,
            None if power is None else power[i],
            limit,
            None if temperature is None else temperature[i],
            80 * GIB,
        )
    return tracker


def test_compile_bursts_then_the_loop_are_start_up_then_run() -> None:
    # nanoGPT's shape: 20 s of loading, a 4 s compile burst, 5 s of pause, then the loop.
    sm = [0.0] * 20 + [90.0] * 4 + [0.0] * 5 + [100.0] * 120
    phases = track(sm).phases()
    assert phases.start_up_s == pytest.approx(29.0)
    assert phases.run_start == T0 + 29
    assert phases.teardown_s == 0.0
    # Judged as it comes: before the loop has sustained, the run is taken from the burst.
    times = [T0 + i for i in range(len(sm))]
    assert start_up_end(times[:15], sm[:15], 1.0) is None  # nothing ran yet
    assert start_up_end(times[:32], sm[:32], 1.0) == 20  # the burst, for now
    assert start_up_end(times, sm, 1.0) == 29  # the loop, once it sustained


def test_a_loop_that_never_sustains_runs_from_its_first_burst() -> None:
    sm = [0.0] * 10 + [100.0, 0.0, 0.0] * 100  # a starved loop: 1 s bursts
    phases = track(sm).phases()
    assert phases.run_start == T0 + 10
    assert phases.start_up_s == pytest.approx(10.0)
    verdict = track(sm).verdict()
    assert verdict.kind is Kind.UNDER_USED_BURSTY and verdict.severity == "warning"
    assert verdict.sm_mean == pytest.approx(sum(sm[10:299]) / 289, abs=0.5)


def test_the_idle_after_the_last_activity_is_teardown_with_its_memory() -> None:
    sm = [95.0] * 100 + [0.0] * 40
    tracker = track(sm, interval_s=5.0)
    phases = tracker.phases()
    assert phases.teardown_s == pytest.approx(40 * 5.0)
    verdict = tracker.verdict()
    assert verdict.kind is Kind.BUSY
    assert verdict.sm_mean == pytest.approx(95.0)  # the teardown is not averaged in
    assert "still holding 10.0 GiB at the end" in verdict.summary


def test_a_pause_inside_the_run_is_an_idle_stretch_and_a_gap_is_not() -> None:
    sm = [95.0] * 60 + [0.0] * 90 + [95.0] * 60 + [0.0] * 5 + [95.0] * 60
    phases = track(sm).phases()
    assert phases.idle_stretches == 1
    assert phases.idle_stretch_s == pytest.approx(90.0)


def test_nothing_loaded_and_no_kernel_is_unused_not_idle() -> None:
    verdict = track([0.0] * 300, vram_gib=0.001).verdict()
    assert verdict.kind is Kind.UNUSED and verdict.severity == "info"


def test_held_idle_is_a_warning_only_with_enough_readings() -> None:
    assert track([0.0] * 300).verdict().kind is Kind.HELD_IDLE
    assert track([0.0] * 300).verdict().severity == "warning"
    few = track([0.0] * 4).verdict()
    assert few.kind is Kind.HELD_IDLE and few.severity == "info"
    assert "too few readings" in few.summary
    # 30 readings a minute apart are 30 draws of the duty cycle: not enough (60 needed).
    coarse = track([0.0] * 30, interval_s=60.0).verdict()
    assert coarse.severity == "info"


def test_steady_under_use_and_its_bands() -> None:
    steady = track([26.0, 24.0, 28.0, 25.0] * 90, interval_s=10.0, vram_gib=0.46).verdict()
    assert steady.kind is Kind.UNDER_USED_STEADY and steady.severity == "warning"
    assert steady.sm_mean == pytest.approx(25.75)
    partly = track([65.0] * 300).verdict()
    assert partly.kind is Kind.UNDER_USED_STEADY and partly.severity == "info"


def test_busy_at_the_power_cap_is_information() -> None:
    n = 200
    verdict = track([90.0] * n, power=[171.0] * n, limit=175.0).verdict()
    assert verdict.kind is Kind.BUSY_POWER_CAPPED and verdict.severity == "info"


def test_busy_at_a_fraction_of_the_power_limit_is_not_working() -> None:
    n = 200
    verdict = track([100.0] * n, power=[60.0] * n, limit=230.0).verdict()
    assert verdict.kind is Kind.BUSY_NOT_WORKING and verdict.severity == "warning"


def test_busy_with_frozen_memory_on_a_cooling_card_is_a_hang_suspect() -> None:
    # A surviving rank after its peer died: 100 % for 20 min, memory to the MiB, cooling.
    n = 20 * 6
    cooling = [75.0 - 20.0 * i / n for i in range(n)]
    hung = track([100.0] * n, interval_s=10.0, vram_gib=12.0, temperature=cooling).verdict()
    assert hung.kind is Kind.BUSY_NOT_WORKING
    assert "hang" in hung.label and "frozen" in hung.summary
    # The same 20 min with the memory moving as a job's does: busy.
    moving = [12.0 + (i % 7) * 0.01 for i in range(n)]
    working = track([100.0] * n, interval_s=10.0, vram_gib=moving, temperature=cooling)
    assert working.verdict().kind is Kind.BUSY
    # ... or holding its temperature: busy.
    warm = track([100.0] * n, interval_s=10.0, vram_gib=12.0, temperature=[75.0] * n)
    assert warm.verdict().kind is Kind.BUSY


def test_busy_at_the_thermal_target_for_most_of_the_run_is_a_throttling_suspect() -> None:
    n = 200
    hot = track([98.0] * n, temperature=[85.0] * n).verdict()
    assert hot.kind is Kind.BUSY_HOT and hot.severity == "warning"
    assert "200 of its 200 busy readings" in hot.summary
    cool = track([98.0] * n, temperature=[60.0] * n).verdict()
    assert cool.kind is Kind.BUSY
    # Hot in a third of the run: a warm afternoon, not a card held at its ceiling.
    mixed = [85.0 if i % 3 == 0 else 70.0 for i in range(n)]
    assert track([98.0] * n, temperature=mixed).verdict().kind is Kind.BUSY


def test_time_with_nothing_loaded_between_jobs_is_no_jobs_idleness() -> None:
    # Three short runs at 90 % on an H100, nothing loaded (0 MiB) between them.
    sm = ([0.0] * 60 + [90.0] * 60) * 3
    vram = ([0.0] * 60 + [10.0] * 60) * 3
    verdict = track(sm, interval_s=2.0, vram_gib=vram).verdict()
    assert verdict.kind is Kind.BUSY and verdict.sm_mean == pytest.approx(90.0)
    assert verdict.phases.free_s == pytest.approx(2 * 60 * 2.0)
    assert "with nothing loaded (no job on it)" in verdict.summary
    # The same idle readings with the memory still held are the job's: under-used.
    held = track(sm, interval_s=2.0, vram_gib=10.0).verdict()
    assert held.kind is Kind.UNDER_USED_BURSTY
