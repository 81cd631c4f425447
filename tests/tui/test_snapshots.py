"""What a person sees: SVG snapshots of the demo with time frozen.

Nothing moves between runs: no sampler (``autostart=False``), a fixed seed, a
fixed number of ticks, clocks read from snapshot timestamps shown in UTC.
Regenerate after an intended change with ``pytest tests/test_snapshots.py
--snapshot-update`` and look at the SVGs before committing them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from textual.pilot import Pilot

from gputop_hints.sources.demo import DemoSource
from gputop_hints.tui.app import GputopApp

TICKS = 45
SnapCompare = Callable[..., bool]


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.delenv("NO_COLOR", raising=False)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def demo_app(gpus: int | None = 8, processes: int | None = 64) -> tuple[GputopApp, DemoSource]:
    source = DemoSource("mixed", gpus=gpus, processes=processes, seed=0)
    return GputopApp(source, autostart=False, theme="dark"), source


def feed(app: GputopApp, source: DemoSource) -> Callable[[Pilot[None]], object]:
    async def run_before(pilot: Pilot[None]) -> None:
        for _ in range(TICKS):
            app.ingest(source.sample())
        await pilot.pause()

    return run_before


def test_demo_160x50(snap_compare: SnapCompare) -> None:
    app, source = demo_app()
    assert snap_compare(app, terminal_size=(160, 50), run_before=feed(app, source))


def test_demo_80x24(snap_compare: SnapCompare) -> None:
    app, source = demo_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed(app, source))


def test_demo_default_machine_80x24(snap_compare: SnapCompare) -> None:
    app, source = demo_app(gpus=None, processes=None)
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed(app, source))


def test_process_detail_160x50(snap_compare: SnapCompare) -> None:
    app, source = demo_app()
    assert snap_compare(app, terminal_size=(160, 50), run_before=feed(app, source), press=["enter"])


def test_demo_sorted_by_hint_160x50(snap_compare: SnapCompare) -> None:
    """``s`` once: the worst hints first, so the HINT column shows its colours and marks."""
    app, source = demo_app()
    assert snap_compare(app, terminal_size=(160, 50), run_before=feed(app, source), press=["s"])


def test_starved_loader_detail_80x24(snap_compare: SnapCompare) -> None:
    """Enter on a starved process: why, evidence with scopes, advice, since when, docs."""
    source = DemoSource("starved-loader", seed=0)
    app = GputopApp(source, autostart=False, theme="dark")
    assert snap_compare(app, terminal_size=(80, 24), run_before=feed(app, source), press=["enter"])


def test_straggler_tree_160x50(snap_compare: SnapCompare) -> None:
    """``t`` on a DDP job: torchrun, its four ranks, the straggler's hints rolled up on it;
    ``right`` on the first rank unfolds its DataLoader workers."""
    source = DemoSource("straggler", seed=0)
    app = GputopApp(source, autostart=False, theme="dark")
    assert snap_compare(
        app,
        terminal_size=(160, 50),
        run_before=feed(app, source),
        press=["t", "home", "down", "right"],
    )
