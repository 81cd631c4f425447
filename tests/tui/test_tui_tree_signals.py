"""The process tree view (``t``) and signals (``I``/``T``/``K``), through Pilot.

Signals go to real processes: a ``sleep`` started here, signalled only after the
confirmation screen is answered ``y``.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator

import psutil
import pytest

from gputop_hints.model import GpuProcess, Snapshot
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.live.signals import READONLY_TEXT
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.screens.main import MainScreen
from gputop_hints.tui.screens.signal_confirm import SignalConfirmScreen
from gputop_hints.tui.widgets.process_table import ProcessTable

SIZE = (160, 40)


def straggler_app(**kwargs: object) -> tuple[GputopApp, DemoSource]:
    source = DemoSource("straggler", seed=0)
    return GputopApp(source, autostart=False, **kwargs), source  # type: ignore[arg-type]


def in_tree(table: ProcessTable) -> bool:
    return table.tree_view


async def test_t_shows_ranks_under_torchrun_and_folds_with_left_and_right() -> None:
    app, source = straggler_app()
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(3):
            app.ingest(source.sample())
        table = app.query_one(ProcessTable)
        assert not in_tree(table)
        await pilot.press("t")
        assert in_tree(table)
        kinds = [(row.kind, row.depth) for row in table.tree_rows]
        assert kinds[0] == ("launcher", 0)
        assert kinds[1:] == [("process", 1)] * 4
        text = "\n".join(table.text_lines())
        assert "torchrun --nproc-per-node=4" in text and "4 ranks" in text
        await pilot.press("home")
        assert table.selected_row is not None and table.selected_row.kind == "launcher"
        await pilot.press("left")
        assert [row.kind for row in table.tree_rows] == ["launcher"]
        await pilot.press("right", "down", "right")  # unfold, then the first rank's workers
        assert [row.kind for row in table.tree_rows].count("worker") == 6
        app.ingest(source.sample())  # a tick keeps the folding and the selection
        assert [row.kind for row in table.tree_rows].count("worker") == 6
        assert table.selected_row is not None and table.selected_row.kind == "process"
        await pilot.press("t")
        assert not in_tree(table)
        assert table.selected is not None and table.selected.pid == 4000


async def test_enter_on_a_launcher_folds_it_instead_of_opening_a_detail_screen() -> None:
    app, source = straggler_app()
    async with app.run_test(size=SIZE) as pilot:
        app.ingest(source.sample())
        await pilot.press("t", "home", "enter")
        assert isinstance(app.screen, MainScreen)
        assert len(app.query_one(ProcessTable).tree_rows) == 1


@pytest.mark.parametrize("key", ["I", "T", "K"])
async def test_signals_are_refused_in_the_demo_without_asking(key: str) -> None:
    app, source = straggler_app()
    async with app.run_test(size=SIZE) as pilot:
        app.ingest(source.sample())
        await pilot.press(key)
        assert isinstance(app.screen, MainScreen)
        result = app.last_signal_result
        assert result is not None and not result.sent and "demo" in result.message


# --- real processes ----------------------------------------------------------------


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


class OneRealProcess(DemoSource):
    """A demo node whose one GPU process is a real process here, as live shows it."""

    kind = "live"

    def __init__(self, pid: int) -> None:
        super().__init__("healthy", gpus=1, processes=1, seed=0)
        self.real = psutil.Process(pid)

    def sample(self) -> Snapshot:
        snapshot = super().sample()
        proc = GpuProcess(
            pid=self.real.pid,
            gpu_index=0,
            user=self.real.username(),
            command=" ".join(self.real.cmdline()),
            create_time=self.real.create_time(),
        )
        return dataclasses.replace(snapshot, processes=(proc,), launchers=())


@pytest.mark.parametrize("answer", ["n", "escape"])
async def test_cancelling_the_confirmation_leaves_the_process_alive(
    sleeper: subprocess.Popen[bytes], answer: str
) -> None:
    source = OneRealProcess(sleeper.pid)
    app = GputopApp(source, autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        app.ingest(source.sample())
        await pilot.press("T")
        screen = app.screen
        assert isinstance(screen, SignalConfirmScreen)
        assert screen.target.pid == sleeper.pid
        assert "sleep 60" in screen.target.command
        await pilot.press(answer)
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
    assert sleeper.poll() is None
    assert app.last_signal_result is None


async def test_sigterm_after_y_kills_the_real_process(sleeper: subprocess.Popen[bytes]) -> None:
    source = OneRealProcess(sleeper.pid)
    app = GputopApp(source, autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        app.ingest(source.sample())
        await pilot.press("T")
        screen = app.screen
        assert isinstance(screen, SignalConfirmScreen)
        text = " ".join(str(w.render()) for w in screen.query("Static"))
        assert f"SIGTERM to pid {sleeper.pid}" in text
        assert psutil.Process(sleeper.pid).username() in text
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
    assert sleeper.wait(timeout=30) == -15
    result = app.last_signal_result
    assert result is not None and result.sent


async def test_readonly_refuses_without_asking(sleeper: subprocess.Popen[bytes]) -> None:
    source = OneRealProcess(sleeper.pid)
    app = GputopApp(source, autostart=False, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        app.ingest(source.sample())
        await pilot.press("K")
        assert isinstance(app.screen, MainScreen)
    assert sleeper.poll() is None
    result = app.last_signal_result
    assert result is not None and not result.sent and result.message == READONLY_TEXT


def test_readonly_flag_reaches_the_parser() -> None:
    from gputop_hints.cli.monitor import build_parser

    assert build_parser().parse_args(["--readonly"]).readonly
    assert not build_parser().parse_args([]).readonly

