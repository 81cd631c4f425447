"""The detail view's WHERE IT WAITS: a real process's stacks, sampled by a real py-spy.

The GPU is the fake NVML (at nvitop's libnvml boundary); the process it lists is a real
Python program blocked on its next batch. Opening its detail view samples it; the
section then says where its main thread waits and names the frame.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.stacks import find_py_spy
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.screens.detail import ProcessDetailScreen
from gputop_hints.tui.widgets.process_table import ProcessTable
from gputop_hints.tui.widgets.where_it_waits import WhereItWaits
from tests.stacks.programs import WAITING_FOR_BATCH, running
from tests.support.fake_nvml import FakeNvml, make_gpus


@pytest.mark.skipif(find_py_spy().path is None, reason="py-spy is not installed")
async def test_opening_a_process_shows_where_its_main_thread_waits(tmp_path: Path) -> None:
    with running(tmp_path / "train.py", WAITING_FOR_BATCH) as child:
        with FakeNvml(make_gpus(1, [[child.pid]])):
            live = LiveSource(detect_job=False)
            app = GputopApp(live, autostart=False)
            async with app.run_test(size=(160, 50)) as pilot:
                app.ingest(live.sample())
                app.post_message(ProcessTable.Opened(child.pid, 0))
                await pilot.pause()
                assert isinstance(app.screen, ProcessDetailScreen)
                where = app.screen.query_one(WhereItWaits)
                for _ in range(300):  # py-spy takes ~3 s; bounded, not timed
                    if where.state.reading is not None:
                        break
                    await asyncio.sleep(0.1)
                    app.ingest(live.sample())
                await pilot.pause()
                lines = where.text_lines()
        live.close()
    assert lines[0].startswith(" WHERE IT WAITS  (py-spy, 15 samples")
    assert any(
        "waiting for the next batch" in line and "Batches.__next__" in line for line in lines
    )
    assert any("100 %" in line for line in lines)


async def test_stacks_are_not_sampled_where_the_processes_are_not_here() -> None:
    """A demo's pids are made up: the section says so, and w only says so too."""
    source = DemoSource("mixed", gpus=1, processes=2, seed=0)
    app = GputopApp(source, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        snap = source.sample()
        app.ingest(snap)
        app.post_message(ProcessTable.Opened(snap.processes[0].pid, 0))
        await pilot.pause()
        where = app.screen.query_one(WhereItWaits)
        assert "no stacks here" in " ".join(where.text_lines())
        assert app.request_stacks(snap.processes[0].pid, manual=True) is False


async def test_no_stacks_turns_it_off() -> None:
    with FakeNvml(make_gpus(1, [[]])):
        live = LiveSource(detect_job=False)
        app = GputopApp(live, autostart=False, stacks=False)
        assert app.stacks_off == "stack sampling is off (--no-stacks)"
        live.close()
