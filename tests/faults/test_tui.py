"""Fault matrix: the monitor's TUI under key floods, signals and a lost terminal.

Keys that arrive in one read (SSH batching, a double press, a paste) are posted
to the app together here, exactly as Textual's input thread posts them; the
terminal cases run the installed console script in a private tmux server.
"""

from __future__ import annotations

import gc
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual import events
from textual.widget import Widget

from gputop_hints.sources.demo import DemoSource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.input_decoding import coalesce_flood
from gputop_hints.tui.screens.detail import ProcessDetailScreen
from gputop_hints.tui.screens.help import HelpScreen
from gputop_hints.tui.screens.main import MainScreen
from tests.support.tmux_harness import SCRIPT, Tmux, process_state, tmux_session

SIZE = (120, 40)
DEMO = [str(SCRIPT), "--demo"]


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    yield from tmux_session()


def wait_for_state(pid: int, wanted: str, timeout: float = 10.0) -> str:
    end = time.monotonic() + timeout
    state = process_state(pid)
    while state != wanted and time.monotonic() < end:
        time.sleep(0.1)
        state = process_state(pid)
    return state


def demo_app(**kwargs: object) -> tuple[GputopApp, DemoSource]:
    source = DemoSource("mixed", gpus=2, processes=4, seed=0)
    app = GputopApp(source, autostart=False, **kwargs)  # type: ignore[arg-type]
    return app, source


def keys_in_one_read(app: GputopApp, *keys: str) -> None:
    """Post ``keys`` back to back, as the input thread does for one read of the tty."""
    for key in keys:
        character = "\r" if key == "enter" else ("?" if key == "question_mark" else None)
        app.post_message(events.Key(key, character))


def screen_types(app: GputopApp) -> list[type[object]]:
    return [type(screen) for screen in app.screen_stack]


def live_widgets() -> int:
    gc.collect()
    return sum(isinstance(thing, Widget) for thing in gc.get_objects())


async def test_two_enters_in_one_read_open_one_detail_screen() -> None:
    """Enter Enter in one read: one detail screen opens, no DuplicateIds crash."""
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(3):
            app.ingest(source.sample())
        await pilot.pause()
        keys_in_one_read(app, "enter", "enter")
        await pilot.pause()
        await pilot.pause()
        assert screen_types(app) == [MainScreen, ProcessDetailScreen]
        # Esc and Enter together: back, and straight into a fresh detail screen.
        keys_in_one_read(app, "escape", "enter")
        await pilot.pause()
        await pilot.pause()
        assert screen_types(app) == [MainScreen, ProcessDetailScreen]
    assert app.return_code in (None, 0)


async def test_help_toggled_in_one_read_never_crashes() -> None:
    """? and Esc mixed in one read (a paste with ESC): help opens/closes, no NoMatches crash."""
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        app.ingest(source.sample())
        await pilot.pause()
        keys_in_one_read(app, *(["question_mark", "escape", "question_mark", "question_mark"] * 4))
        keys_in_one_read(app, "question_mark")
        await pilot.pause()
        await pilot.pause()
        assert screen_types(app) == [MainScreen, HelpScreen]
        assert app.screen.focused is not None  # the guide scrolls with the keys
    assert app.return_code in (None, 0)


async def test_help_opened_and_closed_50_times_keeps_no_extra_widgets() -> None:
    """Help opened and closed 50 times: screen stack and widget count unchanged (no leak)."""
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        app.ingest(source.sample())
        for _ in range(3):  # the guide's Markdown finishes mounting
            await pilot.press("question_mark", "escape")
            await pilot.pause(0.2)
        before = live_widgets()
        for _ in range(50):
            await pilot.press("question_mark", "escape")
        await pilot.pause(0.2)
        assert screen_types(app) == [MainScreen]
        assert live_widgets() <= before


async def test_key_flood_is_dropped_and_the_app_stays_responsive() -> None:
    """10 KB of keys in one read (a paste): most are dropped, the app answers the next key."""
    app, source = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        app.ingest(source.sample())
        await pilot.pause()
        flood = ["c", "s", "question_mark", "p", "enter", "escape", "x", "n"] * 1280
        keys_in_one_read(app, *flood)
        await pilot.pause()
        await pilot.pause()
        # A bounded share got through, not 1280 theme changes (each one a toast).
        assert len(app._notifications) < 128
        await pilot.press("escape", "escape")
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert screen_types(app) == [MainScreen, HelpScreen]
    assert app.return_code in (None, 0)


def _suspend_and_resume(tmux: Tmux) -> str:
    """Ctrl-Z, then SIGCONT (what ``fg`` sends) once stopped; the screen after resuming,
    once the labels that never change (the header's host) are drawn again."""
    tmux.wait_for("of time busy")
    pid = tmux.pid()
    tmux.keys("C-z")
    assert wait_for_state(pid, "T") == "T"
    os.kill(pid, signal.SIGCONT)
    return tmux.wait_for("host demo-node")


def test_ctrl_z_stops_and_resume_repaints_every_label(tmux: Tmux) -> None:
    """Ctrl-Z then SIGCONT (fg): the monitor stops, and on resume every label is drawn again."""
    tmux.start(DEMO, 120, 40)
    # Labels that never change (the header's host, the rows' names) are back,
    # not only the numbers that moved since.
    screen = _suspend_and_resume(tmux)
    assert "of time busy" in screen
    assert " SM " in screen
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


def test_ctrl_z_and_fg_with_standard_error_redirected_still_draw_and_answer(
    tmux: Tmux, tmp_path: Path
) -> None:
    """``gputop-hints 2>err.log``: the monitor draws on /dev/tty. Textual closes its
    driver on every Ctrl-Z; the terminal must stay open for the drawing after ``fg``
    (it was closed: a blank screen that no longer answered keys)."""
    log = tmp_path / "err.log"
    tmux.start(["sh", "-c", 'exec "$0" --demo 2>"$1"', str(SCRIPT), str(log)], 120, 40)
    assert "of time busy" in _suspend_and_resume(tmux)
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0
    assert "Traceback" not in log.read_text()


def test_escape_garbage_a_mouse_flood_and_a_stray_0xff_byte_never_crash(tmux: Tmux) -> None:
    """Escape junk, 50 mouse reports and bytes 0xff 0xfe typed into the demo: it keeps running."""
    tmux.start([str(SCRIPT), "--demo"], width=120, height=40)
    tmux.wait_for("PID")
    junk = bytes.fromhex("1b5b3c303b31303b31304d fffe 1b5b4d20 ffff")
    tmux.run("send-keys", "-t", "t", "-H", *(f"{b:02x}" for b in junk))
    mouse = [f"{b:02x}" for b in b"\x1b[<35;99;99M"]  # SGR mouse motion at 99,99
    for _ in range(50):
        tmux.run("send-keys", "-t", "t", "-H", *mouse)
    tmux.keys("?")  # still reading keys: help opens
    screen = tmux.wait_for("esc Back")
    assert "UnicodeDecodeError" not in screen and "Traceback" not in screen
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


def test_a_100_kb_paste_of_toggles_leaves_q_working(tmux: Tmux, tmp_path: Path) -> None:
    """100 KB of ?, c and s pasted (no bracketed paste): the app stays small and q quits."""
    tmux.start([str(SCRIPT), "--demo"], width=120, height=40)
    tmux.wait_for("PID")
    pid = tmux.pid()
    paste = tmp_path / "paste.txt"
    paste.write_text(("?cs" * 34000)[:100_000])
    tmux.run("load-buffer", str(paste))
    tmux.run("paste-buffer", "-t", "t")  # without -p: the bytes arrive as typed keys
    tmux.wait_for("Theme:")  # the pasted c's were read (one theme change)
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        rss_mb = int(f.read().split("VmRSS:")[1].split()[0]) / 1024
    assert rss_mb < 100
    tmux.keys("q")
    assert tmux.wait_until_exited(timeout=10) == 0


def test_typing_passes_and_a_flood_is_cut_to_one_of_each_key() -> None:
    """Decoded terminal input: typing untouched; a flood keeps one of each key, q and escapes."""
    assert coalesce_flood("?ts") == "?ts"
    typed = "jjjjkkkk\x1b[A\x1b[B" * 10
    assert coalesce_flood(typed) == typed
    flood = "?ts" * 200 + "\x1b[<35;10;10M" + "st" * 200 + "q"
    assert coalesce_flood(flood) == "?ts\x1b[<35;10;10Mq"
    assert coalesce_flood("?ts" * 200 + "q", only_quit=True) == "q"
    # Arrows in application cursor mode (SS3: ESC O A) stay whole, never cut to "ESC O".
    arrows = "\x1bOA\x1bOB" * 150
    assert coalesce_flood(arrows) == arrows
