"""A process's stack reading as evidence on the findings about it (issue 45)."""

from __future__ import annotations

from gputop_hints.hints.findings import Finding
from gputop_hints.history import History
from gputop_hints.stacks import Category, Frame, FrameCount, StackReading, WorkerReading
from tests.hints.windows import PID, SAWTOOTH, G, P, Run, Tick, W, one_gpu, shown

NEXT = Frame("Loader.next_batch", "/home/me/train.py", 88)
AUG = Frame("augment", "/home/me/data.py", 12)


def starved_history() -> History:
    """A DataLoader with a busy worker, the GPU in a sawtooth: input-starved."""
    return one_gpu(SAWTOOTH, [P(cpu=10.0, workers=(W(90.0, "R"),))])


def reading(
    name: str, share: float, frame: Frame, workers: tuple[WorkerReading, ...] = ()
) -> StackReading:
    n = 20
    hit = round(share * n)
    cats = [Category(name, hit, hit / n, (FrameCount(frame, hit, True),))]
    if hit < n:
        cats.append(Category("other", n - hit, (n - hit) / n, ()))
    return StackReading(PID, n, tuple(cats), workers)


def starved(stacks: list[StackReading]) -> Finding:
    [f] = [f for f in shown(starved_history(), stacks) if f.rule == "input-starved"]
    return f


def test_a_main_thread_waiting_for_batches_confirms_starvation_and_names_the_frames() -> None:
    worker = WorkerReading(5001, 20, 20, (FrameCount(AUG, 18, True),))
    f = starved([reading("waiting-for-batch", 0.85, NEXT, (worker,))])
    [row] = [e for e in f.evidence if e.metric.startswith("main thread")]
    assert row.met is True and row.value == 85.0
    assert "waiting for the next batch" in row.metric and "train.py:88" in row.metric
    assert "train.py:88" in f.advice[0]
    assert "augment (/home/me/data.py:12)" in f.advice[1]


def test_a_stack_elsewhere_is_shown_as_context_and_changes_no_advice() -> None:
    plain = starved([])
    f = starved([reading("python-launch", 0.9, Frame("forward", "/home/me/model.py", 3))])
    [row] = [e for e in f.evidence if e.metric.startswith("main thread")]
    assert row.met is None
    assert f.advice == plain.advice
    assert (f.rule, f.severity, f.label) == (plain.rule, plain.severity, plain.label)


def test_without_a_reading_nothing_is_added() -> None:
    f = starved([])
    assert not any(e.metric.startswith("main thread") for e in f.evidence)


def test_a_main_thread_copying_to_the_device_confirms_pcie_thrash() -> None:
    """Pageable copies: the host stages each ``.to(device)`` itself, so its main thread's
    time in that line confirms a link busy with copies while SM is low."""
    history = (
        Run()
        .feed(
            [
                Tick((G(sm=12.0, rx=(20e9 if i % 2 else 0.0), tx=(10e9 if i % 2 else 0.0)),))
                for i in range(12)
            ]
        )
        .history
    )
    copy = Frame("train", "/home/me/train.py", 41)
    [f] = [
        f for f in shown(history, [reading("copying-to-gpu", 0.7, copy)]) if f.rule == "pcie-thrash"
    ]
    [row] = [e for e in f.evidence if e.metric.startswith("main thread")]
    assert row.met is True and "copying to the GPU" in row.metric
    assert "train.py:41" in f.advice[0]


def test_a_stack_elsewhere_says_what_would_have_confirmed_it() -> None:
    """A reading that does not show the finding's cause is context: its row names the
    categories that would confirm it, never the bare ">= 50 confirms" beside its 100 %."""
    f = starved([reading("host-device-sync", 1.0, Frame("train", "/home/me/train.py", 9))])
    [row] = [e for e in f.evidence if e.metric.startswith("main thread")]
    assert row.met is None and row.value == 100.0
    assert row.threshold.startswith("confirms at >= 50 in waiting for the next batch")
    assert "loading batches itself" in row.threshold
