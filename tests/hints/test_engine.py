"""The engine: a condition must hold raise_after_s to show and fail clear_after_s to go.

Windows are built with the shared builder (tests/hints/windows.py) on simulated
time; the rule under test is mostly vram-near-limit, whose condition depends on
the newest tick only, so each tick turns it on or off exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import compute_bound, vram_near_limit
from tests.hints.windows import (
    PEGGED,
    SAWTOOTH,
    T0,
    THRESHOLDS,
    G,
    P,
    Run,
    Tick,
    W,
)

VRAM_HIGH = Tick((G(sm=95.0, vram_gib=77.0),))
"""96 % of VRAM: vram-near-limit holds (raise after 2 s, clear after 10 s)."""
VRAM_OK = Tick((G(sm=95.0, vram_gib=60.0),))


def _only_vram_rule() -> HintEngine:
    return HintEngine(THRESHOLDS, rules=(vram_near_limit.SPEC,))


def _visible(engine: HintEngine, run: Run, ticks: Sequence[Tick]) -> list[bool]:
    out = []
    for tick in ticks:
        run.tick(tick)
        out.append(bool(engine.update(run.history)))
    return out


def test_hysteresis_defaults_for_the_rule_under_test() -> None:
    h = THRESHOLDS.vram_near_limit.hysteresis
    assert (h.raise_after_s, h.clear_after_s) == (2, 10)


def test_a_condition_must_hold_raise_after_s_before_it_shows() -> None:
    engine, run = _only_vram_rule(), Run()
    run.feed([VRAM_OK] * 5)
    start = run.t
    assert _visible(engine, run, [VRAM_HIGH] * 4) == [False, False, True, True]
    assert engine.active[0].started_at == start  # when it began, not when it showed


def test_a_condition_must_fail_clear_after_s_before_it_goes() -> None:
    engine, run = _only_vram_rule(), Run()
    _visible(engine, run, [VRAM_HIGH] * 5)
    last_true = run.now
    seen = _visible(engine, run, [VRAM_OK] * 12)
    # ticks at last_true + 1 ... + 12: still shown until 10 s have passed
    assert seen == [True] * 9 + [False] * 3
    assert last_true + 10 == T0 + 4 + 10


def test_a_flickering_condition_gives_one_stable_finding() -> None:
    engine, run = _only_vram_rule(), Run()
    start = run.t
    pattern = ([VRAM_HIGH] * 3 + [VRAM_OK] * 2) * 12  # on 3 s, off 2 s, for a minute
    seen = _visible(engine, run, pattern)
    assert seen[:2] == [False, False]
    assert all(seen[2:])  # shown from the raise on, never flipping
    flips = sum(a != b for a, b in pairwise(seen))
    assert flips == 1  # the raise itself, and nothing after
    assert engine.active[0].started_at == start


def test_flicker_faster_than_raise_after_never_shows() -> None:
    # Holding for 1 s at a time never holds for the 2 s raise_after_s: nothing shows.
    engine, run = _only_vram_rule(), Run()
    assert not any(_visible(engine, run, [VRAM_HIGH, VRAM_OK] * 30))


def test_hysteresis_false_shows_at_once_and_clears_at_once() -> None:
    engine, run = HintEngine(THRESHOLDS, hysteresis=False), Run()
    run.tick(VRAM_HIGH)
    [f] = [f for f in engine.update(run.history) if f.rule == "vram-near-limit"]
    assert f.started_at == T0
    run.tick(VRAM_OK)
    assert all(f.rule != "vram-near-limit" for f in engine.update(run.history))


def test_starved_shows_raise_after_s_after_its_window_condition_began() -> None:
    # Healthy, then a num_workers=0 sawtooth: the raw condition starts once the 6 s
    # window holds two gaps and a low mean; the engine shows it 3 s later, dated then.
    ticks = [Tick((G(sm=95.0),), (PEGGED,))] * 10 + [
        Tick((G(sm=sm),), (PEGGED,)) for sm in SAWTOOTH * 2
    ]
    raw_run, run = Run(), Run()
    raw, engine = HintEngine(THRESHOLDS, hysteresis=False), HintEngine(THRESHOLDS)
    began = shown_at = None
    for tick in ticks:
        raw_run.tick(tick)
        run.tick(tick)
        if began is None and any(f.rule == "input-starved" for f in raw.update(raw_run.history)):
            began = run.now
        starved = [f for f in engine.update(run.history) if f.rule == "input-starved"]
        if starved and shown_at is None:
            shown_at = run.now
            assert starved[0].started_at == began
    assert began is not None and shown_at is not None
    assert began > T0 + 10  # not before the sawtooth
    assert shown_at - began == THRESHOLDS.input_starved.hysteresis.raise_after_s == 3


def test_a_checkpoint_pause_neither_starves_nor_hides_compute_bound() -> None:
    engine, run = HintEngine(THRESHOLDS), Run()
    busy = Tick((G(sm=95.0),), (P(vram_gib=40.0, cpu=60.0, workers=(W(60.0),) * 4),))
    pause = Tick((G(sm=0.0),), busy.procs)
    rules_seen: list[set[str]] = []
    for tick in [busy] * 30 + [pause] * 5 + [busy] * 30:
        run.tick(tick)
        rules_seen.append({f.rule for f in engine.update(run.history)})
    assert all(s == {"compute-bound"} for s in rules_seen[10:])


# --- real-trace-modelled windows (/work/shared/traces/README.md) -------------------------


def test_a_finding_the_data_now_contradicts_goes_at_once() -> None:
    # Healthy training, then every rank spins in a collective: 100 % "busy" at 5 % of the
    # power limit. compute-bound ("healthy") must not outlive the truth by its 20 s
    # clear_after_s: the spin contradicts it, and it goes once the window shows the spin.
    engine, run = HintEngine(THRESHOLDS, rules=(compute_bound.SPEC,)), Run()
    working = Tick((G(sm=98.0, power=320.0),))
    spinning = Tick((G(sm=100.0, power=20.0),))
    assert _visible(engine, run, [working] * 10)[-1]
    after = _visible(engine, run, [spinning] * 12)
    assert THRESHOLDS.compute_bound.hysteresis.clear_after_s == 20
    assert not any(after[int(THRESHOLDS.general.window_s) :])  # gone within one window
    # without the contradiction (a GPU that merely dips) it waits out clear_after_s
    engine, run = HintEngine(THRESHOLDS, rules=(compute_bound.SPEC,)), Run()
    _visible(engine, run, [working] * 10)
    assert all(_visible(engine, run, [Tick((G(sm=50.0, power=320.0),))] * 12))


def test_a_gpu_is_not_called_healthy_beside_its_process_warning() -> None:
    """Issue 44: a GPU header said "compute-bound: healthy" while its only process said
    "! tensor cores idle". On the gpm demo, GPU 1 runs FP32 with idle tensor cores: its
    compute-bound names the process instead; GPU 0 (bf16, nothing to warn) stays healthy."""
    from gputop_hints.hints.diagnoser import Diagnoser
    from gputop_hints.sources.demo import DemoSource

    source = DemoSource("gpm", seed=0)
    diagnoser = Diagnoser(interval_s=1.0)
    for _ in range(40):
        found = diagnoser.feed(source.sample())
    by = {(f.rule, f.subject.gpu_index, f.subject.pid): f for f in found}
    warned = by[("tensor-cores-idle", 1, 4200)]
    assert warned.severity >= Severity.WARNING
    gpu1 = by[("compute-bound", 1, None)]
    assert gpu1.label == "busy; see pid 4200"
    assert "tensor cores idle" in gpu1.summary
    assert by[("compute-bound", 0, None)].label == "compute-bound: healthy"


def test_a_visible_finding_keeps_everything_its_rule_said_and_gains_its_start() -> None:
    """``Finding.with_start`` builds the finding field by field (not with
    ``dataclasses.replace``): a field added to Finding and missed there would vanish
    from every visible finding."""
    import dataclasses

    from gputop_hints.hints.findings import Evidence, Finding, Scope, Subject

    said = Finding(
        rule="input-starved",
        subject=Subject(3, 4242),
        severity=Severity.CRITICAL,
        label="starved: num_workers=0?",
        summary="the GPU waits for input",
        advice=("raise num_workers",),
        evidence=(Evidence("SM % (mean)", 12.0, "< 50"),),
        subtype="num-workers-0",
        evidence_scope=Scope.PROCESS,
    )
    shown = said.with_start(1_700_000_000.0)
    for field in dataclasses.fields(Finding):
        if field.name != "started_at":
            assert getattr(shown, field.name) == getattr(said, field.name), field.name
    assert shown.started_at == 1_700_000_000.0
