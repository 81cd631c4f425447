"""Where the lab's trainer waits, read from its own stacks by py-spy (issue 45): each
scenario's stack evidence matches what its configuration makes the loop do.

Real trainer and worker processes (bench/pipelab), sampled by ``gputop_hints.stacks``
near the end of an 8 s run (bench/lab.py's "where it waits" column, docs/lab.md):
loading in the main process with ``num_workers=0``, waiting for the one slow worker's
batch, and blocked in ``loss.item()`` on the trainer's own line. About 30 s in all.
Skipped (with the reason) only where py-spy is absent; CI installs it ([test] extra).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from lab import where_it_waits
from pipelab.monitor import Lab, Run
from pipelab.scenarios import BY_NAME

from gputop_hints.stacks import StackReading, find_py_spy
from tests.bench.test_lab import HOST_BUSY_MAX

pytestmark = pytest.mark.skipif(find_py_spy().path is None, reason="py-spy is not installed")

DURATION_S = 8.0
TRAINER = Path(__file__).resolve().parents[2] / "bench" / "pipelab" / "trainer.py"


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with Lab() as lab:
        yield lab


def _run(lab: Lab, name: str) -> Run:
    config = replace(lab.config(**BY_NAME[name].settings), duration_s=DURATION_S)
    run = lab.run(config, stacks=True)
    assert run.stacks is not None
    assert run.stacks.samples, run.stacks.reason
    return run


def _stacks(lab: Lab, name: str) -> StackReading:
    reading = _run(lab, name).stacks
    assert reading is not None
    return reading


def _dominant(reading: StackReading) -> str:
    return reading.categories[0].name


def test_num_workers_0_loads_in_the_main_process(lab: Lab) -> None:
    reading = _stacks(lab, "num-workers-0")
    assert _dominant(reading) == "loading-in-main", where_it_waits(reading)
    top = reading.categories[0].top_frames[0].frame
    assert top.file == str(TRAINER), top
    assert any(name in top.function for name in ("load_sample", "load_batch")), top


def _top_frames(reading: StackReading) -> list[str]:
    """Each category's share and top frame: what a failure names."""
    out = []
    for c in reading.categories:
        top = c.top_frames[0].frame.function if c.top_frames else "-"
        out.append(f"{c.name} {c.share * 100:.0f} % at {top}")
    return out


def _waits_for_a_workers_batch(lab: Lab, name: str) -> StackReading:
    """Run scenario ``name``, whose main thread waits for one worker's batch
    (``Loader.next_batch``), and check that it does. On a host whose cores other work held
    before the run, the launches themselves run late and can outweigh the wait
    (docs/lab.md): skipped then, with the figures."""
    run = _run(lab, name)
    reading = run.stacks
    assert reading is not None
    if _dominant(reading) != "waiting-for-batch" and run.host_busy_before > HOST_BUSY_MAX:
        pytest.skip(
            f"the host was {run.host_busy_before:.0f} % busy before the run "
            f"(> {HOST_BUSY_MAX:g} %): {_top_frames(reading)}"
        )
    assert _dominant(reading) == "waiting-for-batch", _top_frames(reading)
    waiting = reading.categories[0].top_frames[0].frame
    assert waiting.function.endswith("Loader.next_batch"), waiting
    return reading


def test_too_few_workers_waits_for_the_next_batch(lab: Lab) -> None:
    """The one worker is slower than the step: the main thread waits for its batch."""
    reading = _waits_for_a_workers_batch(lab, "too-few-workers")
    # The one worker is the busy one, in its transform.
    assert len(reading.workers) == 1
    worker = reading.workers[0]
    assert worker.busy_samples > 0, worker
    assert "load_sample" in worker.top_frames[0].frame.function, worker


def test_sync_every_step_waits_on_the_trainers_item_line(lab: Lab) -> None:
    run = _run(lab, "sync-every-step")
    reading = run.stacks
    assert reading is not None
    assert _dominant(reading) == "host-device-sync", where_it_waits(reading)
    line = reading.categories[0].top_frames[0].frame
    assert line.file == str(TRAINER)
    assert TRAINER.read_text().splitlines()[line.line - 1].strip() == "loss_value = loss.item()"
    assert where_it_waits(reading).endswith(f"(trainer.py:{line.line})")
    # The monitor is handed the reading, as the live one is: the host-device-sync finding
    # on the trainer names the line (info while the GPU it waits for stays busy).
    found = [f for t in run.ticks for f in t.findings if f.rule == "host-device-sync"]
    assert found, [[f.rule for f in t.findings] for t in run.ticks]
    assert f"trainer.py:{line.line}" in found[0].summary


def test_small_batch_launches_from_python(lab: Lab) -> None:
    """Two samples a step: the host issues the step's kernels (``Model.forward``, as
    PyTorch does under ``nn.Module.forward``) for most of its time -- small-batch's cause."""
    reading = _stacks(lab, "small-batch")
    assert _dominant(reading) == "python-launch", where_it_waits(reading)


def test_pageable_copies_copy_on_the_trainers_to_device_line(lab: Lab) -> None:
    """Copies from pageable memory: the host stages each one itself in the line that asks
    for it (``Pageable(batch).to(device, ...)``) -- pcie-thrash's cause, named by its line."""
    reading = _stacks(lab, "pageable-copies")
    assert _dominant(reading) == "copying-to-gpu", where_it_waits(reading)
    line = reading.categories[0].top_frames[0].frame
    assert line.file == str(TRAINER)
    assert ".to(device" in TRAINER.read_text().splitlines()[line.line - 1]


def test_slow_storage_waits_for_the_workers_batch(lab: Lab) -> None:
    """One worker reading past the page cache: the main thread waits for its batch --
    what input-starved/storage-bound says. On a host whose cores other work holds, the
    launches themselves run late and can outweigh the wait (docs/lab.md): skipped then,
    with the figures."""
    _waits_for_a_workers_batch(lab, "slow-storage")
