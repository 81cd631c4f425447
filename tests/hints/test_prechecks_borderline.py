"""The hint engine's shortcuts never drop a finding: processes just meeting a rule.

To cost less a tick, the rules skip work a verdict cannot need: small-batch reads the
host side (main process pegged, no busy worker) before it builds a gap trace;
input-starved does not ask twice whether a process's own samples leave room for a
burst, and reads its ``filled`` path's VRAM share before any mean; idle-holding-vram
skips a process idle for less than both of its waits before reading its CPU; the
sub-second trace of a process on a shared GPU is built without the intermediate
per-tick lists, and its idle gaps are worked out once a window for both rules. A
shortcut that skipped a process the rule would have flagged shows here: each case is a
process exactly at the rule's bounds (the main process at the pegged threshold, the
busy-worker mean just under its bound, exactly the fewest gaps, a burst exactly at its
floor, idle exactly the shorter wait, exactly the VRAM share), flagged, beside the same
process just past one bound, not.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from gputop_hints.hints.attribution import others_sm_per_tick, process_fine_sm
from gputop_hints.hints.findings import Scope
from gputop_hints.hints.rules import RuleSpec, idle_holding_vram, input_starved, small_batch
from gputop_hints.hints.rules.shared import gaps_seen_by, own_burst_ruled_out
from gputop_hints.hints.window import Window
from gputop_hints.history import History
from gputop_hints.model import GpuProcess
from tests.hints.windows import THRESHOLDS, G, H, P, Run, Tick, W, evidence, window

OTHER = P(pid=6100, vram_gib=30.0, sm=30.0, cpu=13.0)
"""A tenant on the same GPU with its own per-process samples: the process under test
is judged on its own evidence (its sub-second share of the device's samples)."""


def _shared(own: list[float | None], cpu: list[float], workers: list[tuple[W, ...]]) -> History:
    """Process 4100 beside :data:`OTHER` on GPU 0, one tick per entry of ``own`` (its own
    SM %, None: no sample, ran nothing), the device's six sub-second samples a tick the
    sum of both shares."""
    run = Run()
    for sm, main, ws in zip(own, cpu, workers, strict=True):
        device = (sm or 0.0) + (OTHER.sm or 0.0)
        job = P(pid=4100, vram_gib=4.0, sm=sm, cpu=main, workers=ws)
        run.tick(Tick((G(0, device, samples=(device,) * 6),), (job, OTHER), H()))
    return run.history


def _small_batch_job(main: float, busy_ticks: int) -> History:
    """A steady 35 % of its own, little VRAM, main process at ``main`` % of a core, and
    one DataLoader worker busy (above worker_busy_percent) in ``busy_ticks`` of the
    window's six ticks."""
    n = 8
    busy = THRESHOLDS.general.worker_busy_percent
    workers: list[tuple[W, ...]] = [
        (W(busy + 1.0 if i >= n - busy_ticks else 1.0),) for i in range(n)
    ]
    return _shared([35.0] * n, [main] * n, workers)


def _flagged(spec: RuleSpec, history: History) -> bool:
    return any(f.subject.pid == 4100 for f in spec.check(window(history), THRESHOLDS))


def test_small_batch_at_the_pegged_threshold_with_a_worker_busy_under_half_is_flagged() -> None:
    pegged = THRESHOLDS.general.main_pegged_percent
    # Busy-worker mean 2/6: under the 0.5 bound; main exactly at the pegged threshold.
    history = _small_batch_job(pegged, busy_ticks=2)
    (f,) = [f for f in small_batch.SPEC.check(window(history), THRESHOLDS) if f.subject.pid]
    assert f.evidence_scope is Scope.PROCESS
    assert evidence(f, "main process CPU (mean)") == pytest.approx(pegged)
    assert evidence(f, "busy workers") == pytest.approx(2 / 6)
    assert evidence(f, "time in idle gaps") == 0


@pytest.mark.parametrize(
    ("main", "busy_ticks", "why"),
    [
        (THRESHOLDS.general.main_pegged_percent - 0.1, 2, "main just under pegged"),
        (THRESHOLDS.general.main_pegged_percent, 3, "busy-worker mean exactly 0.5"),
    ],
)
def test_small_batch_just_past_a_host_bound_is_not_flagged(
    main: float, busy_ticks: int, why: str
) -> None:
    assert not _flagged(small_batch.SPEC, _small_batch_job(main, busy_ticks)), why


def _sawtooth_job(own: list[float | None]) -> History:
    """Process 4100 loading its own batches (main pegged, no workers) beside OTHER."""
    return _shared(own, [99.0] * len(own), [()] * len(own))


# The fast window's six ticks: two idle ticks of its own between bursts of exactly the
# burst floor (busy_sm_above_percent, 40 %): exactly min_gaps (2) gaps.
FLOOR = THRESHOLDS.input_starved.busy_sm_above_percent
JUST_STARVED: list[float | None] = [FLOOR, FLOOR, FLOOR, None, FLOOR, None, FLOOR, FLOOR]


def test_input_starved_with_exactly_the_fewest_gaps_and_the_burst_floor_is_flagged() -> None:
    history = _sawtooth_job(JUST_STARVED)
    (f,) = [f for f in input_starved.SPEC.check(window(history), THRESHOLDS) if f.subject.pid]
    assert f.subtype == "num-workers-0"
    assert f.evidence_scope is Scope.PROCESS
    assert evidence(f, "separate idle gaps") == THRESHOLDS.input_starved.min_gaps
    assert evidence(f, "SM % (mean)") == pytest.approx(4 * FLOOR / 6)


@pytest.mark.parametrize(
    ("own", "why"),
    [
        ([FLOOR, FLOOR, FLOOR, FLOOR, FLOOR, None, FLOOR, FLOOR], "one gap: no sawtooth"),
        ([v if v is None else FLOOR - 1.0 for v in JUST_STARVED], "bursts under the floor"),
    ],
)
def test_input_starved_just_past_a_bound_is_not_flagged(own: list[float | None], why: str) -> None:
    assert not _flagged(input_starved.SPEC, _sawtooth_job(own)), why


def test_the_gap_trace_both_rules_share_leaves_each_verdict_as_alone() -> None:
    """small-batch and input-starved ask the same window for the same process's gaps
    (worked out once): each rule finds what it finds on a window no other rule asked."""
    for history in (_sawtooth_job(JUST_STARVED), _small_batch_job(99.0, busy_ticks=0)):
        shared = window(history)
        together = [
            *small_batch.SPEC.check(shared, THRESHOLDS),
            *input_starved.SPEC.check(shared, THRESHOLDS),
        ]
        apart = [
            *small_batch.SPEC.check(window(history), THRESHOLDS),
            *input_starved.SPEC.check(window(history), THRESHOLDS),
        ]
        assert together == apart
        assert together  # one of the two rules flags each


def _wave_node(ticks: int) -> History:
    """2 GPUs, 6 processes with their own SM waves (some ticks without a sample), the
    device's sub-second samples uneven inside each tick, iowait and D states moving."""
    run = Run()
    for k in range(ticks):
        procs = []
        totals = [0.0, 0.0]
        for i in range(6):
            sm = round(50 + 45 * math.sin(2 * math.pi * k / (7 + i) + i))
            own = None if sm < 12 else float(sm)
            totals[i % 2] += own or 0.0
            state = "D" if (k + i) % 3 == 0 else "S"
            procs.append(
                P(
                    pid=5000 + i,
                    gpu=i % 2,
                    vram_gib=4.0,
                    sm=own,
                    cpu=float(40 + 11 * i),
                    state=state,
                )
            )
        gpus = tuple(
            G(
                index=g,
                sm=min(100.0, totals[g]),
                # Bursty inside the tick (idle, then twice the mean): a process's part of
                # a burst can pass 100 % before the cap.
                samples=tuple(min(100.0, totals[g] * (0.0 if j < 3 else 2.0)) for j in range(6)),
            )
            for g in range(2)
        )
        run.tick(Tick(gpus, tuple(procs), H(cores=8, busy=30.0, iowait=float(k % 25))))
    return run.history


def test_a_process_fine_trace_is_the_device_less_the_others_own_share() -> None:
    """The sub-second trace as process_fine_sm's documentation defines it, from
    others_sm_per_tick, equal to the value in every window of a moving node."""
    history = History(window_s=120.0, interval_s=1.0)
    node = _wave_node(40)
    capped = 0
    for snap in node.snapshots:
        history.append(snap)
        win = Window(history, THRESHOLDS.general.window_s)
        for proc in win.processes():
            got = process_fine_sm(win, proc)
            fine = win.gpu_fine_sm(proc.gpu_index)
            if fine is None or not win.process_samples_reported(proc.gpu_index):
                assert got is None
                continue
            assert got is not None
            assert got == (_fine_by_definition(win, proc, fine), fine[2])
            capped += got[0].count(100.0)
    assert capped  # the cap at 100 % was exercised


def _fine_by_definition(
    win: Window, proc: GpuProcess, fine: tuple[list[float], list[float], float]
) -> list[float]:
    times, values, _ = fine
    others = others_sm_per_tick(win, proc)
    ph = win.process_history(proc)
    own = ph.sm_percent.last(len(others)) if ph else []
    own = [*([None] * (len(others) - len(own))), *own]
    out: list[float] = []
    for i in range(len(others)):
        lo = win.now - (len(others) - i) * win.interval_s + 1e-6
        hi = win.now - (len(others) - 1 - i) * win.interval_s + 1e-6
        tick = [v for t, v in zip(times, values, strict=True) if (i == 0 or t > lo) and t <= hi]
        if i == len(others) - 1:
            tick = [v for t, v in zip(times, values, strict=True) if t > lo or (i == 0)]
        rest = [v - others[i] if v > others[i] else 0.0 for v in tick]
        total = sum(rest)
        target = own[i] or 0.0
        if total > 0:
            scale = target * len(rest) / total
            out.extend(min(r * scale, 100.0) for r in rest)
        else:
            out.extend([target] * len(rest))
    return out


def test_a_burst_not_asked_again_gives_the_gaps_asking_gives() -> None:
    """input-starved asks own_burst_ruled_out once, then tells gaps_seen_by it was
    False: wherever it is False, the answer without asking again is the same."""
    history = History(window_s=120.0, interval_s=1.0)
    for snap in _wave_node(40).snapshots:
        history.append(snap)
        for length in (THRESHOLDS.general.window_s, THRESHOLDS.general.slow_window_s):
            win = Window(history, length)
            for proc in win.processes():
                if own_burst_ruled_out(win, proc, THRESHOLDS):
                    continue
                asked = gaps_seen_by(win, proc, THRESHOLDS, Scope.PROCESS, need_burst=True)
                fresh = Window(history, length)
                told = gaps_seen_by(
                    fresh,
                    proc,
                    THRESHOLDS,
                    Scope.PROCESS,
                    need_burst=True,
                    burst_not_ruled_out=True,
                )
                assert told == asked


def test_idle_holding_vram_at_the_shorter_of_its_two_waits_is_flagged() -> None:
    """The rule skips a process idle for less than both of its waits before reading its
    CPU. With the wait without host data the shorter one, a process without host data
    idle for exactly that long is flagged, and one second less is not."""
    c = replace(THRESHOLDS.idle_holding_vram, idle_for_s=30.0, idle_for_s_without_host=10.0)
    t = replace(THRESHOLDS, idle_holding_vram=c)
    proc = (P(vram_gib=40.0, cpu=None),)
    run = Run().feed([Tick((G(sm=95.0),), proc)] * 5)
    run.feed([Tick((G(sm=0.0),), proc)] * 9)
    assert not idle_holding_vram.SPEC.check(window(run.history), t)
    run.tick(Tick((G(sm=0.0),), proc))
    (f,) = idle_holding_vram.SPEC.check(window(run.history), t)
    assert evidence(f, "no kernel of its own for") == 10


def _filled_job(vram_gib: float) -> History:
    """A num_workers=0 job at 31 % of its own beside a tenant at 62 %: the device full
    (93 %), its gaps filled by the other (input-starved's ``filled`` path)."""
    job = P(pid=4100, vram_gib=vram_gib, sm=31.0, cpu=92.0)
    other = P(pid=6100, vram_gib=30.0, sm=62.0, cpu=13.0, workers=(W(30.0), W(30.0)))
    return Run().feed([Tick((G(0, 93.0, samples=(93.0,) * 6),), (job, other), H())] * 8).history


def test_starved_beside_a_tenant_at_exactly_the_small_batch_vram_share_is_flagged() -> None:
    """input-starved's ``filled`` path reads the VRAM share off the newest snapshot
    before any mean: a process holding exactly small_batch.vram_share_below of the card
    is still judged (and flagged), one holding a little less is small-batch's."""
    share = THRESHOLDS.small_batch.vram_share_below
    (f,) = [
        f
        for f in input_starved.SPEC.check(window(_filled_job(80.0 * share)), THRESHOLDS)
        if f.subject.pid == 4100
    ]
    assert f.subtype == "num-workers-0"
    assert evidence(f, "other tenants' own SM %") == pytest.approx(62.0)
    assert not _flagged(input_starved.SPEC, _filled_job(80.0 * share - 0.1))
