"""Every terminal people reach through SSH and tmux: the installed script in tmux.

TERM values seen over SSH, in tmux and on a Linux console; a dumb terminal;
NO_COLOR; a non-UTF-8 locale (ASCII glyphs); resize storms; SIGHUP (an SSH
link dropping) and SIGTERM; and keys held down. Each test starts the real
console script in a private tmux server (``tests/tmux_harness.py``). Locally
the tests skip when tmux is missing; in CI (``CI=true``) that is a failure.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator

import pytest

from tests.support.tmux_harness import SCRIPT, Tmux, tmux_session

pytestmark = pytest.mark.tmux

DEMO = [str(SCRIPT), "--demo"]


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    yield from tmux_session()


@pytest.mark.parametrize(
    "term", ["xterm", "xterm-256color", "screen-256color", "tmux-256color", "linux"]
)
def test_demo_draws_keys_work_and_q_quits(tmux: Tmux, term: str) -> None:
    tmux.start(DEMO, 100, 30, env={"TERM": term})
    screen = tmux.wait_for("python")
    assert "DEMO" in screen and "GPU" in screen
    tmux.keys("p")
    tmux.wait_for("PAUSED")
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


def test_dumb_terminal_gets_a_message_and_the_once_summary(tmux: Tmux) -> None:
    tmux.start([*DEMO, "--duration", "1"], 100, 40, env={"TERM": "dumb"})
    assert tmux.wait_until_exited(30) == 0
    screen = tmux.run("capture-pane", "-p", "-S", "-", "-t", "t")  # with the scrollback
    assert "cannot draw a full-screen interface" in screen
    assert "one-off summary" in screen
    assert tmux.pane("#{alternate_on}") == "0"


_SGR = re.compile(r"\x1b\[([0-9;:]*)m")


_GREYS_256 = {0, 7, 8, 15, 16, 231, *range(232, 256)}


def _colour_codes(screen: str) -> list[str]:
    """SGR sequences that set a hue: anything but resets, attributes and greys.

    Textual draws NO_COLOR as shades of grey (and we switch to the monochrome
    theme), so black, white and greys are allowed; red, green, blue ... are not.
    """
    coloured = []
    for match in _SGR.finditer(screen):
        params = [int(p) for p in re.split("[;:]", match.group(1)) if p]
        i = 0
        while i < len(params):
            n = params[i]
            if n in (38, 48) and i + 1 < len(params):
                if params[i + 1] == 5 and i + 2 < len(params):
                    if params[i + 2] not in _GREYS_256:
                        coloured.append(match.group(1))
                    i += 3
                    continue
                if params[i + 1] == 2 and i + 4 < len(params):
                    r, g, b = params[i + 2 : i + 5]
                    if max(r, g, b) - min(r, g, b) > 8:
                        coloured.append(match.group(1))
                    i += 5
                    continue
            if 31 <= n <= 36 or 41 <= n <= 46 or 91 <= n <= 96 or 101 <= n <= 106:
                coloured.append(match.group(1))
            i += 1
    return coloured


def test_no_color_draws_without_colour(tmux: Tmux) -> None:
    tmux.start(DEMO, 100, 30, env={"NO_COLOR": "1"})
    tmux.wait_for("python")
    time.sleep(1.5)
    screen = tmux.screen(escapes=True)
    assert _colour_codes(screen) == [], sorted(set(_colour_codes(screen)))[:5]
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


@pytest.mark.parametrize(
    "locale_env", [{"LC_ALL": "C"}, {"LANG": "C", "LC_ALL": "", "LC_CTYPE": ""}]
)
def test_non_utf8_locale_draws_plain_ascii(tmux: Tmux, locale_env: dict[str, str]) -> None:
    tmux.start(DEMO, 160, 50, env=locale_env)
    tmux.wait_for("python")
    time.sleep(3)  # a few ticks: sparklines and bars have something to draw
    screen = tmux.screen()
    odd = sorted({c for c in screen if not c.isascii()})
    assert odd == [], f"non-ASCII {odd!r} on screen:\n{screen}"
    assert "|" in screen and "#" in screen  # the VRAM bar and its limit mark, in ASCII
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


def test_utf8_locale_keeps_block_characters(tmux: Tmux) -> None:
    tmux.start(DEMO, 160, 50, env={"LANG": "C.UTF-8", "LC_ALL": "", "LC_CTYPE": ""})
    tmux.wait_for("python")
    time.sleep(2)
    assert "│" in tmux.screen()
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


def test_resize_storm(tmux: Tmux) -> None:
    tmux.start(DEMO, 80, 24)
    tmux.wait_for("python")
    for _ in range(4):
        for width, height in ((80, 24), (40, 10), (200, 60)):
            tmux.resize(width, height)
            time.sleep(0.05)
    tmux.resize(120, 40)
    # The last size wins: rich GPU panels, the CPU panel and the table at 120x40.
    deadline = time.monotonic() + 15
    screen = tmux.screen()
    while time.monotonic() < deadline:
        assert tmux.pane("#{pane_dead}") == "0", screen
        lines = screen.splitlines()
        if "GPU 0" in screen and "CPU" in screen and "python" in screen and len(lines) == 40:
            break
        time.sleep(0.3)
        screen = tmux.screen()
    else:
        size = tmux.pane("#{pane_width}x#{pane_height}")
        raise AssertionError(f"no sensible screen after the resizes ({size}):\n{screen}")
    assert screen.splitlines()[0].startswith(" gputop-hints")
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


@pytest.mark.parametrize("number", [signal.SIGHUP, signal.SIGTERM])
def test_signal_exits_promptly_and_restores_the_terminal(tmux: Tmux, number: int) -> None:
    tmux.start(DEMO, 100, 30)
    tmux.wait_for("python")
    assert tmux.pane("#{alternate_on}") == "1"
    pid = tmux.pid()
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        assert b"gputop" in f.read()
    os.kill(pid, number)
    # Exited by itself on the one signal (a status, not killed by it), with the signal's
    # conventional code; the wait only bounds a hang.
    assert tmux.wait_until_exited(10) == 128 + number
    assert tmux.pane("#{alternate_on}") == "0"  # back on the main screen


def test_keys_held_down_are_all_taken_and_the_monitor_keeps_up(tmux: Tmux) -> None:
    """200 Down/j keys as fast as tmux sends them: none is lost or left queued -- the
    next key is answered, and the monitor still quits cleanly. (What the burst costs
    in CPU is a figure, not a test: ``bench/overhead.py --keys 200``.)"""
    tmux.start(DEMO, 120, 40)
    tmux.wait_for("python")
    for _ in range(20):
        tmux.keys(*(["Down"] * 5 + ["j"] * 5))
    tmux.keys("p")
    assert "PAUSED" in tmux.wait_for("PAUSED")
    assert tmux.pane("#{pane_dead}") == "0"
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0
