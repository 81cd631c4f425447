"""Windows modelled on real traces (/work/shared/traces/README.md): what the hints say.

Each test feeds a real log's utilization rows through the engine with the
process and host context the log implies, and checks the one conclusion a
person reading that log would want.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.history import History
from tests.hints.windows import (
    GIB,
    MIB,
    P0,
    THRESHOLDS,
    G,
    H,
    P,
    Run,
    Tick,
    W,
    evidence,
    shown,
)

# openad_gpu_usage.csv, GPU 0 (RTX A6000, 49140 MiB, 25073 MiB used), its first 12 rows
# as utilization.gpu / utilization.memory; GPU 1 idle with 15 MiB.
OPENAD = [
    (92, 73), (95, 80), (86, 37), (100, 100), (97, 82), (93, 69),
    (94, 80), (86, 37), (91, 58), (95, 75), (90, 57), (91, 61),
]  # fmt: skip


def openad(pairs: Sequence[tuple[float, float]]) -> History:
    a6000 = 49140 * MIB / GIB
    ticks = [
        Tick(
            (
                G(0, sm=sm, mem=mem, vram_gib=25073 * MIB / GIB, total_gib=a6000, gen=4),
                G(1, sm=0.0, mem=0.0, vram_gib=15 * MIB / GIB, total_gib=a6000, gen=4),
            ),
            (P(vram_gib=24.0, cpu=100.0, workers=(W(40.0),) * 4, command="python train.py"),),
            H(cores=16, busy=30.0),
        )
        for sm, mem in pairs
    ]
    return Run().feed(ticks).history


def test_trace_openad_overlap_is_explained_and_nothing_warns() -> None:
    findings = shown(openad(OPENAD))
    by_rule = {f.rule: f for f in findings}
    assert set(by_rule) == {"overlap-explained", "compute-bound"}
    assert all(f.severity is Severity.INFO for f in findings)
    overlap = by_rule["overlap-explained"]
    assert overlap.subject == Subject(0)
    assert evidence(overlap, "sum") == 91 + 61
    assert "overlapping" in overlap.summary
    # window mean of the last 6 rows: 91.17 % SM, memory 61.3 % (not within 10 of SM)
    assert evidence(by_rule["compute-bound"], "SM % (mean)") == pytest.approx(91.17, abs=0.01)


def test_trace_openad_the_steady_91_66_row() -> None:
    findings = shown(openad([(91, 66)] * 12))
    assert {(f.rule, f.severity) for f in findings} == {
        ("overlap-explained", Severity.INFO),
        ("compute-bound", Severity.INFO),
    }
    [overlap] = [f for f in findings if f.rule == "overlap-explained"]
    assert (evidence(overlap, "SM %"), evidence(overlap, "memory-access %")) == (91, 66)


def test_trace_openad_sm_100_mem_100() -> None:
    # Rows like "100 %, 100 %" held for the whole window: both counters saturate
    # together, which cannot tell memory-bound from compute-bound (utilization.memory
    # is a time fraction, not bandwidth). memory-bound stands back above 90 % SM, so
    # the GPU reads compute-bound with the overlap explained -- no warning.
    findings = shown(openad([(100, 100)] * 12))
    assert {(f.rule, f.severity) for f in findings} == {
        ("overlap-explained", Severity.INFO),
        ("compute-bound", Severity.INFO),
    }
    [overlap] = [f for f in findings if f.rule == "overlap-explained"]
    assert evidence(overlap, "sum") == 200


# machine_translation_gpu_usage.csv, utilization.gpu after the warm-up (about 0.5 s apart);
# memory 1070 MiB of 15360 MiB. One process; we add a pegged main process and no workers.
MACHINE_TRANSLATION = [
    40, 45, 41, 44, 41, 45, 45, 45, 43, 42, 28, 33, 32, 31, 48, 43, 40, 45, 41, 45, 41, 44,
    45, 44, 41, 44, 44, 43, 40, 45, 43, 44, 44, 37, 32, 33, 32, 28, 47, 44, 44, 10, 32, 44,
    44, 45, 45, 43, 43, 43, 43, 43, 44, 42, 43, 41, 43, 31, 9, 5, 33, 44, 44, 45, 44, 43, 44,
    42, 43, 41, 45, 41, 44, 44, 43, 43, 42, 44, 44, 44, 31, 34, 28, 29, 46, 44, 44, 45, 45,
    45, 45, 44, 44, 46, 44, 42, 44, 43, 44, 44, 46, 44, 46, 32, 34, 35, 28, 44, 44, 43, 44,
    43, 45, 42, 39, 42, 38,
]  # fmt: skip


def test_trace_machine_translation_is_small_batch_throughout() -> None:
    # An under-filled GPU: flat 40-45 % with dips, 7 % of VRAM, the main thread pegged.
    # What it should say -- and does: small batch/launch-bound, try a ~11x batch. The one
    # dip below 10 % (31, 9, 5, 33) is a single short gap: not a sawtooth, so never
    # input-starved, and hysteresis keeps small-batch up through it.
    run = Run(interval_s=0.5)
    engine = HintEngine(THRESHOLDS)
    proc = (P(vram_gib=1070 * MIB / GIB, cpu=100.0, command="python train_seq2seq.py"),)
    seen: list[set[str]] = []
    for sm in MACHINE_TRANSLATION:
        g = G(sm=float(sm), mem=None, vram_gib=1070 * MIB / GIB, total_gib=15.0, gen=3)
        run.tick(Tick((g,), proc, H(cores=8, busy=20.0)))
        seen.append({f.rule for f in engine.update(run.history)})
    first = next(i for i, s in enumerate(seen) if s)
    assert first * 0.5 <= 10  # within 10 s of the job starting
    assert all(s == {"small-batch"} for s in seen[first:])
    [f] = engine.active
    assert f.subject == P0 and f.severity is Severity.WARNING
    assert "11x" in f.advice[0]  # 80 % of 15 GiB / 1.04 GiB
    # It has no worker processes: its pegged main thread may be loading between steps,
    # in gaps too short for the samples; the finding says so and advises workers second.
    assert "no worker processes" in f.summary
    assert "num_workers" in f.advice[1]
    assert evidence(f, "worker processes") == 0


def test_small_batch_with_idle_workers_does_not_suggest_workers() -> None:
    """The same launch-bound steps with four idle DataLoader workers: loading is off the
    main thread already, so the finding is the plain small batch."""
    run = Run(interval_s=0.5)
    engine = HintEngine(THRESHOLDS)
    proc = (
        P(vram_gib=1070 * MIB / GIB, cpu=100.0, command="python train_seq2seq.py",
          workers=(W(2.0, "S"),) * 4),
    )  # fmt: skip
    for sm in MACHINE_TRANSLATION:
        g = G(sm=float(sm), mem=None, vram_gib=1070 * MIB / GIB, total_gib=15.0, gen=3)
        run.tick(Tick((g,), proc, H(cores=8, busy=20.0)))
        engine.update(run.history)
    [f] = engine.active
    assert f.rule == "small-batch"
    assert "no worker processes" not in f.summary
    assert not any("num_workers" in a for a in f.advice)


def test_trace_spaceinvaders_wandb_is_low_utilization() -> None:
    # DQN on an Atari emulator: GPU 4-7 %, 1.91 % of VRAM (~0.29 GiB of a 15 GiB card),
    # CPU ~70 %: the GPU waits on a CPU-side environment. No specific rule fits (the
    # process is under the 0.5 GiB floor; no bursts, no steady moderate SM), so the
    # GPU-level low-utilization rule says the GPU is barely used and where to look.
    sms = [4.07, 5.6, 7.13, 6.2, 5.1, 4.4, 6.8, 5.9, 4.9, 6.1, 5.5, 6.6]
    ticks = [
        Tick(
            (G(sm=sm, mem=0.0, vram_gib=0.0191 * 15.0, total_gib=15.0, gen=3),),
            (P(vram_gib=0.0191 * 15.0 - 0.01, cpu=100.0, command="python dqn_atari.py"),),
            H(cores=4, busy=70.0),
        )
        for sm in sms
    ]
    [f] = shown(Run().feed(ticks).history)
    assert (f.rule, f.severity, f.subject) == ("low-utilization", Severity.WARNING, Subject(0))
    assert f.label.startswith("GPU busy only")
    # the same job with a larger footprint (above the floor): still low-utilization.
    ticks = [
        Tick((G(sm=sm, vram_gib=2.0),), (P(vram_gib=2.0),), H(cores=4, busy=70.0)) for sm in sms
    ]
    assert [f.rule for f in shown(Run().feed(ticks).history)] == ["low-utilization"]


# --- evidence and advice quality, over every finding any table produces -----------------
