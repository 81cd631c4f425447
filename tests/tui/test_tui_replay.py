"""``gputop-hints replay FILE``: the monitor on a recording, driven through Pilot.

The replay thread really runs (it owns the file); tests open paused
(``start_paused=True``: the first tick is shown, nothing moves) and step or
seek, or play a short recording at 64x to its end. Waits poll what is drawn,
never the wall clock. Times are shown in UTC.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from gputop_hints.model import Snapshot
from gputop_hints.recording import RecordingWriter
from gputop_hints.sampling.replay_player import MIN_REFRESH_S, refresh_plan
from gputop_hints.sampling.replay_time import SeekError, date_time_text, parse_seek, span_text
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.replay import ReplaySource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.screens.help import help_text, hints_help, replay_help
from gputop_hints.tui.screens.seek_prompt import SeekPrompt
from gputop_hints.tui.widgets.header import END_OF_RECORDING
from gputop_hints.tui.widgets.process_columns import HINT_WIDTH
from tests.support.screen import screen_text

START = 1_732_363_200.0
"""2024-11-23 12:00:00 UTC."""
TICKS = 240
WINDOW_S = 30.0


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.delenv("NO_COLOR", raising=False)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def write_recording(
    path: Path, ticks: int = TICKS, scenario: str = "mixed", **demo: Any
) -> list[Snapshot]:
    source = DemoSource(scenario, seed=0, start_time=START, **demo)
    snaps = [source.sample() for _ in range(ticks)]
    with RecordingWriter(path) as writer:
        for snap in snaps:
            writer.write(snap)
    return snaps


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    write_recording(path, gpus=2, processes=6)
    return path


def replay_app(path: Path, speed: float = 1.0, paused: bool = True) -> GputopApp:
    source = ReplaySource(path, speed=speed)
    return GputopApp(source, interval_s=source.interval_s, window_s=WINDOW_S, start_paused=paused)


def header_text(app: GputopApp) -> str:
    return app.header.text_lines()[0]


def position(app: GputopApp) -> float | None:
    return app.snapshot.timestamp if app.snapshot is not None else None


async def wait_for(pilot: Pilot[None], ready: Callable[[], bool], what: str) -> None:
    """Let the replay thread and the app run until ``ready()`` (or fail after 10 s)."""
    for _ in range(1000):
        if ready():
            await pilot.pause()
            return
        await pilot.pause(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def settle(pilot: Pilot[None], app: GputopApp) -> None:
    """Wait until the replay thread has nothing in flight (after a command while paused)."""
    player = app.player
    assert player is not None
    seen = -1
    while seen != player.batches:
        seen = player.batches
        await pilot.pause(0.05)
    await pilot.pause()


def ingested(app: GputopApp, ticks: int) -> Callable[[], bool]:
    return lambda: app.ticks_ingested == ticks


def ended(app: GputopApp) -> bool:
    return app.replay_ended


def hint_cells(app: GputopApp) -> list[str]:
    header, *rows = app.process_table.text_lines()
    start = header.index("HINT")
    return [row[start : start + HINT_WIDTH].strip() for row in rows]


# --- what is shown ------------------------------------------------------------------


async def test_replay_badge_recorded_date_and_time_and_span(recording: Path) -> None:
    app = replay_app(recording, speed=8)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None, "the first tick")
        header = header_text(app)
        assert "REPLAY ×8" in header and "PAUSED" in header
        assert "2024-11-23 12:00:01" in header  # the demo's first tick is one interval in
        assert f"/ 12:00:01 → {time.strftime('%H:%M:%S', time.gmtime(START + TICKS))}" in header
        footer = screen_text(app).splitlines()[-1]
        for key in ("n Step", "+/- Speed", "g/G Start/End", "/ Seek"):
            assert key in footer


async def test_live_and_demo_have_no_replay_keys() -> None:
    app = GputopApp(DemoSource("mixed", seed=0), autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        app.ingest(app.source.sample())
        await pilot.pause()
        assert "Seek" not in screen_text(app).splitlines()[-1]
        assert "REPLAY" not in header_text(app)
        await pilot.press("g", "slash")
        assert not isinstance(app.screen, SeekPrompt)


async def test_plus_doubles_speed_to_64_and_minus_halves_to_1(recording: Path) -> None:
    app = replay_app(recording)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None, "the first tick")
        seen = []
        for _ in range(7):
            await pilot.press("plus")
            seen.append(app.replay.speed if app.replay else None)
        assert seen == [2, 4, 8, 16, 32, 64, 64]
        assert "REPLAY ×64" in header_text(app)
        for _ in range(7):
            await pilot.press("minus")
        assert app.replay is not None and app.replay.speed == 1
        assert "REPLAY ×1 " in header_text(app)


# --- pause and step -------------------------------------------------------------------


async def test_paused_replay_stands_still_and_n_steps_one_tick(recording: Path) -> None:
    app = replay_app(recording, speed=64)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None, "the first tick")
        await settle(pilot, app)
        first = position(app)
        await pilot.pause(0.6)  # more than two refreshes at 64x
        assert position(app) == first and app.ticks_ingested == 1
        for expected in (1, 2, 3):
            await pilot.press("n")
            await wait_for(pilot, ingested(app, 1 + expected), "a step")
            await settle(pilot, app)
            assert position(app) == first + expected  # type: ignore[operator]
        assert "12:00:04" in header_text(app)


async def test_space_plays_and_pauses(recording: Path) -> None:
    app = replay_app(recording, speed=64)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None, "the first tick")
        await pilot.press("space")
        assert not app.paused and "PAUSED" not in header_text(app)
        await wait_for(pilot, lambda: app.ticks_ingested > 20, "playback")
        await pilot.press("space")
        await settle(pilot, app)
        stopped = position(app)
        await pilot.pause(0.6)
        assert position(app) == stopped and "PAUSED" in header_text(app)


async def test_fast_replay_takes_several_ticks_per_refresh(recording: Path) -> None:
    assert refresh_plan(1.0, 64) == (16, 0.25)
    assert refresh_plan(1.0, 4) == (1, 0.25) and refresh_plan(1.0, 1) == (1, 1.0)
    assert refresh_plan(0.5, 8) == (4, 0.25)
    app = replay_app(recording, speed=64, paused=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.ticks_ingested >= 64, "four refreshes")
        player = app.player
        assert player is not None
        # 16 recorded ticks per repaint: every tick reached history, few repaints.
        assert app.history.ticks == app.ticks_ingested
        assert player.batches <= app.ticks_ingested // 16 + 1
        assert MIN_REFRESH_S == 0.25


# --- jumps and seeks ------------------------------------------------------------------


async def test_end_then_start_jump_and_history_restarts_with_a_full_window(
    recording: Path,
) -> None:
    app = replay_app(recording)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None, "the first tick")
        await pilot.press("G")
        await wait_for(pilot, lambda: position(app) == START + TICKS, "the end")
        # Pre-rolled: the window before the end is in history at once.
        assert len(app.history) == WINDOW_S + 1
        assert ended(app) and END_OF_RECORDING in header_text(app)
        await pilot.press("g")
        await wait_for(pilot, lambda: position(app) == START + 1, "the start")
        assert len(app.history) == 1 and not ended(app)
        assert END_OF_RECORDING not in header_text(app)


async def test_seek_prompt_moves_to_a_time_and_garbage_keeps_the_position(
    recording: Path,
) -> None:
    app = replay_app(recording)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None, "the first tick")
        await pilot.press("slash")
        assert isinstance(app.screen, SeekPrompt)
        await pilot.press(*"12:02:00", "enter")
        await wait_for(pilot, lambda: position(app) == START + 120, "the seek")
        assert "2024-11-23 12:02:00" in header_text(app)
        assert len(app.history) == WINDOW_S + 1

        await pilot.press("colon", *"+10s", "enter")
        await wait_for(pilot, lambda: position(app) == START + 130, "the offset")

        await pilot.press("slash", *"half past", "enter")
        await settle(pilot, app)
        assert position(app) == START + 130
        notes = [n.message for n in app._notifications]
        assert any("Not a time: 'half past'" in note for note in notes)

        await pilot.press("slash", *"2024-11-24 12:00:00", "enter")
        await settle(pilot, app)
        assert position(app) == START + 130
        assert any("outside the recording" in n.message for n in app._notifications)

        await pilot.press("slash", "escape")
        assert not isinstance(app.screen, SeekPrompt)


# --- hints and the end ------------------------------------------------------------------


async def test_hints_in_replay_match_feeding_the_demo_live(tmp_path: Path) -> None:
    path = tmp_path / "starved.jsonl"
    snaps = write_recording(path, ticks=60, scenario="starved-loader")

    live = GputopApp(DemoSource("starved-loader", seed=0, start_time=START), autostart=False)
    async with live.run_test(size=(160, 40)) as pilot:
        for snap in snaps:
            live.ingest(snap)
        await pilot.pause()
        expected = hint_cells(live)
        expected_findings = [(f.rule, f.subject) for f in live.findings]
    assert any("num_workers" in cell for cell in expected)

    app = replay_app(path, speed=64, paused=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: ended(app), "the end of the recording")
        assert app.ticks_ingested == len(snaps)
        assert hint_cells(app) == expected
        assert [(f.rule, f.subject) for f in app.findings] == expected_findings


async def test_end_of_file_pauses_says_so_and_stays_open(tmp_path: Path) -> None:
    path = tmp_path / "short.jsonl"
    write_recording(path, ticks=40, gpus=2, processes=6)
    app = replay_app(path, speed=64, paused=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: ended(app), "the end of the recording")
        assert app.is_running and app.paused
        assert app.ticks_ingested == 40
        header = header_text(app)
        assert END_OF_RECORDING in header and "PAUSED" in header
        assert any("End of recording" in n.message for n in app._notifications)
        await pilot.press("space")  # cannot resume past the end
        await pilot.press("n")
        await settle(pilot, app)
        assert app.paused and app.ticks_ingested == 40 and app.is_running


def test_replay_snapshot_120x30(snap_compare: Callable[..., bool], recording: Path) -> None:
    """What a paused replay looks like: badge, speed, date and time, span, replay keys.

    No thread (``autostart=False``): the ticks are read here, so nothing moves.
    """
    source = ReplaySource(recording, speed=8)
    app = GputopApp(
        source, interval_s=source.interval_s, autostart=False, theme="dark", start_paused=True
    )

    async def run_before(pilot: Pilot[None]) -> None:
        app.ingest_many([source.sample() for _ in range(45)])
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)


# --- help and parsing ---------------------------------------------------------------------


def test_help_documents_the_replay_keys() -> None:
    text = replay_help()
    for key in ("`space` / `p`", "`n`", "`+` / `-`", "`g` / `G`", "`/` or `:`", "+10m"):
        assert key in text
    assert help_text(replay=True).startswith(text)
    assert text in help_text() and help_text().endswith(hints_help())


def test_seek_text_parsing() -> None:
    start, end = START + 1, START + 2 * 86400  # 2024-11-23 12:00:01 -> 2024-11-25 12:00:00
    here = START + 86400 + 3600  # 2024-11-24 13:00:00

    def parse(text: str, at: float = here) -> float:
        return parse_seek(text, position=at, start=start, end=end)

    assert parse("+10m") == here + 600
    assert parse("-30s") == here - 30
    assert parse("+1h30m") == here + 5400
    assert parse("+90") == here + 90
    assert parse("+100h") == end and parse("-100h") == start  # offsets clamp
    assert parse("2024-11-23 12:30:00") == START + 1800
    assert parse("2024-11-23T12:30") == START + 1800
    assert parse("12:00:00") == START + 86400  # the day nearest the position
    assert parse("12:00:01", at=start) == start
    assert parse("12:00:00", at=start) == START + 86400  # a second before the start: next day
    assert parse("11:00") == START + 86400 - 3600
    for bad, why in [
        ("", "Type a time"),
        ("soon", "Not a time"),
        ("25:00", "Not a time"),
        ("2024-13-01 10:00", "Not a time"),
        ("2024-11-22 12:00:00", "outside the recording"),
        ("2024-11-26 12:00:00", "outside the recording"),
    ]:
        with pytest.raises(SeekError, match=why):
            parse(bad)


def test_times_show_the_date_and_a_span_over_midnight() -> None:
    assert date_time_text(START + 3) == "2024-11-23 12:00:03"
    assert span_text(START, START + 3600) == "12:00:00 → 13:00:00"
    assert span_text(START, START + 86400, START) == "12:00:00 → 2024-11-24 12:00:00"
    # A log timed from its start (no timestamps, an elapsed column): no 1970 dates.
    assert date_time_text(7.0) == "+0:00:07"
    assert span_text(0.0, 3725.0, 7.0) == "+0:00:00 → +1:02:05"
    assert span_text(START, None) == "12:00:00 → ?"


async def test_a_compressed_replay_says_how_far_into_the_file_it_has_read(
    tmp_path: Path,
) -> None:
    """Issue 24: while a gzip recording's end is unknown the header shows how much of
    the file is read; once the end is reached it shows the span's end instead."""
    path = tmp_path / "run.jsonl.gz"
    write_recording(path, ticks=3000, gpus=2, processes=6)
    app = replay_app(path)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None, "the first tick")
        app.show_replay_status()
        await pilot.pause()
        header = header_text(app)
        assert "→ ? (read " in header, header
        shown = int(header.split("(read ")[1].split(" %")[0])
        assert 0 <= shown < 100
        await pilot.press("G")
        await wait_for(pilot, lambda: "(read " not in header_text(app), "the end to be known")
        assert "→ ?" not in header_text(app)


async def test_after_a_jump_an_old_idle_spell_reads_as_the_report_reads_it(
    tmp_path: Path,
) -> None:
    """Issue 44: after G (or a / seek) a process idle for an hour read "idle 2 min" --
    the pre-roll window was all the hints had -- while report said 1 h and critical. The
    hints' long-lived records are rebuilt from the recording before the pre-roll."""
    from gputop_hints.outputs.report import build_report
    from gputop_hints.recording.reader import open_recording

    path = tmp_path / "idle.jsonl"
    ticks = 900  # 15 minutes of a forgotten notebook holding 40 GiB
    write_recording(path, ticks=ticks, scenario="idle-vram", gpus=1, processes=1)
    report = build_report(open_recording(path), hint_stride=1)
    [reported] = [f for f in report.findings if f.finding.rule == "idle-holding-vram"]
    assert reported.worst.label == "critical"
    app = replay_app(path)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None, "the first tick")
        await pilot.press("G")
        await wait_for(pilot, lambda: position(app) == START + ticks, "the end")
        [shown] = [f for f in app.findings if f.rule == "idle-holding-vram"]
        idle = next(e.value for e in shown.evidence if e.metric.startswith("no kernel"))
        # The whole spell, not the 30 s pre-roll: the report's figure at its last tick.
        assert idle is not None and idle > 10 * WINDOW_S
        last = reported.evidence["no kernel of its own for"].high
        assert idle == pytest.approx(last, abs=5)
        assert shown.severity.label == "critical"
