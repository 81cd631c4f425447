"""The fault matrix of other people's strings: escape sequences in command lines, file
names and file contents are shown, never obeyed. Each test's docstring says, in its
first line, what was tried and what the user must see.

On a shared node anybody can name a process and anybody can write a log. The
processes here are real (psutil reads their command lines from /proc); only NVML
is faked, at nvitop's boundary. The terminal test runs the real program in a real
tmux and asks tmux what the pane's title became.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputop_hints.cli import main
from gputop_hints.recording import RecordingWriter
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.text import visible, visible_lines
from gputop_hints.tui.app import GputopApp
from tests.support.fake_nvml import FakeNvml, make_gpus
from tests.support.screen import screen_text
from tests.support.tmux_harness import SCRIPT, Tmux, tmux_session

TITLE = "\x1b]0;PWNED\x07"
"""OSC 0: sets the terminal's window title."""
CLEAR = "\x1b[2J"
"""CSI 2 J: clears the screen."""
CLIPBOARD = "\x1b]52;c;SGVsbG8=\x07"
"""OSC 52: writes "Hello" to the viewer's clipboard."""
HOSTILE = f"{TITLE}{CLEAR}trainer"
SHOWN = "^[]0;PWNED^G^[[2Jtrainer"
"""How the hostile command line reads on screen (caret notation, as ``cat -v``)."""


@pytest.fixture
def hostile_process() -> Iterator[int]:
    """A real process whose argv[0] holds a title change and a screen clear."""
    proc = subprocess.Popen(
        [HOSTILE, "-c", "import time; time.sleep(120)"],
        executable=sys.executable,
    )
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    yield from tmux_session()


def _no_raw_controls(text: str) -> bool:
    return not any(ch in text for ch in "\x1b\x07\x9b")


def test_the_text_filter_shows_every_control_character_and_keeps_ordinary_text() -> None:
    """C0, DEL, C1 and bidi overrides become visible; text, tabs and newlines stay."""
    assert visible(HOSTILE) == SHOWN
    assert visible("a\x7fb\x9bc\u202ed") == "a^?b\\x9bc\\u202ed"
    assert visible("python train.py --lr 3e-4 ünïcødé 训练") == (
        "python train.py --lr 3e-4 ünïcødé 训练"
    )
    assert visible_lines("one\ttwo\nthree\x1b\n") == "one\ttwo\nthree^[\n"
    assert visible("\x00\x1f") == "^@^_"


def test_once_text_shows_a_hostile_command_line_and_json_keeps_it_exact(
    hostile_process: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """--once with a process named ESC]0;PWNED BEL ESC[2J: text shows ^[]0;PWNED^G, JSON exact."""
    with FakeNvml(make_gpus(1, [[hostile_process]])):
        assert main(["--once", "--duration", "0.3"]) == 0
        text = capsys.readouterr().out
        assert main(["--once", "--duration", "0.3", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
    assert _no_raw_controls(text)
    assert "^[]0;PWNED^G" in text
    [proc] = [p for p in doc["processes"] if p["pid"] == hostile_process]
    assert proc["command"].startswith(HOSTILE)


async def test_the_monitor_draws_a_hostile_command_line_visibly(hostile_process: int) -> None:
    """The TUI with a process named ESC]0;PWNED BEL ESC[2J: the table shows it, no ESC drawn."""
    with FakeNvml(make_gpus(1, [[hostile_process]])):
        source = LiveSource()
        app = GputopApp(source, autostart=False)
        async with app.run_test(size=(160, 40)) as pilot:
            app.ingest(source.sample())
            time.sleep(0.2)  # CPU % needs two readings of the real process
            app.ingest(source.sample())
            await pilot.pause()
            screen = screen_text(app)
    assert _no_raw_controls(screen)
    assert "^[]0;PWNED" in screen


def test_report_shows_an_osc52_csv_header_and_a_hostile_file_name_visibly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report on a CSV whose header holds OSC 52, and on an ESC file name: neither obeyed.

    The refused file's header is not quoted at all (issue 43: a file's content is
    never quoted in an error); the file name is, visibly."""
    log = tmp_path / "gpu.csv"
    log.write_text(f"timestamp,{CLIPBOARD}util\n1,2\n")
    assert main(["report", str(log)]) == 2
    err = capsys.readouterr().err
    assert _no_raw_controls(err)
    assert "52;c;" not in err and "SGVsbG8=" not in err

    named = tmp_path / f"{TITLE}.csv"
    named.write_text("not a log\n")
    assert main(["report", str(named)]) == 2
    err = capsys.readouterr().err
    assert _no_raw_controls(err)
    assert "PWNED" in err  # the file is still named, so the user knows which one


def test_report_of_a_recording_from_a_hostile_host_shows_its_name_visibly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report of a recording whose host name holds ESC]0;PWNED: text shows it, JSON is exact."""
    path = _hostile_recording(tmp_path)
    assert main(["report", str(path)]) == 0
    text = capsys.readouterr().out
    assert _no_raw_controls(text)
    assert SHOWN in text
    assert main(["report", "--json", str(path)]) == 0
    doc = capsys.readouterr().out
    assert _no_raw_controls(doc)  # JSON escapes them itself: \u001b
    assert HOSTILE in _strings(json.loads(doc))


def _strings(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return set()


def test_replay_in_a_real_terminal_never_changes_its_title(tmux: Tmux, tmp_path: Path) -> None:
    """replay of a recording naming a process ESC]0;PWNED BEL in tmux: the pane title stays."""
    path = _hostile_recording(tmp_path)
    tmux.start([str(SCRIPT), "replay", str(path)], width=160, height=40)
    tmux.wait_for("^[]0;PWNED")
    assert "PWNED" not in tmux.pane("#{pane_title}")
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


def _hostile_recording(tmp_path: Path) -> Path:
    """Twenty demo ticks from a host, and with a first process, named with the hostile sequence."""
    source = DemoSource("healthy", seed=1)
    path = tmp_path / "run.jsonl"
    with RecordingWriter(path) as writer:
        for _ in range(20):
            snap = source.sample()
            first, *rest = snap.processes
            evil = dataclasses.replace(first, command=f"{HOSTILE} python train.py")
            host = dataclasses.replace(snap.host, hostname=HOSTILE)
            writer.write(dataclasses.replace(snap, host=host, processes=(evil, *rest)))
    source.close()
    return path


_COLOUR_SGR = re.compile(r"(^|;)(3[0-8]|4[0-8]|9[0-7]|10[0-7])(;|$)")
"""An SGR parameter that sets a colour: 30-38/40-48 (basic, 256, truecolour), 90-107 (bright)."""


@pytest.mark.parametrize(
    ("env", "args"),
    [({"NO_COLOR": "1"}, ()), ({}, ("--no-color",))],
    ids=["NO_COLOR", "--no-color"],
)
def test_no_color_means_no_colour_sequences_at_all(
    tmux: Tmux, env: dict[str, str], args: tuple[str, ...]
) -> None:
    """The demo under NO_COLOR or --no-color in tmux: not one colour SGR; attributes allowed."""
    tmux.start([str(SCRIPT), "--demo", *args], width=120, height=40, env=env)
    tmux.wait_for("PID")
    tmux.wait_for("4200")  # a few ticks drawn: the process rows are there
    sgr = re.findall(r"\x1b\[([0-9;]*)m", tmux.screen(escapes=True))
    assert sgr, "tmux reported no attributes at all: the check would prove nothing"
    assert [s for s in sgr if _COLOUR_SGR.search(s)] == []
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0


@pytest.mark.parametrize("target", ["file", "/dev/null"])
def test_the_monitor_draws_on_the_terminal_when_stderr_is_redirected(
    tmux: Tmux, tmp_path: Path, target: str
) -> None:
    """gputop-hints --demo 2>err.log (or 2>/dev/null): the screen is drawn in the terminal,
    none of it goes into the file, q quits."""
    err = tmp_path / "err.log" if target == "file" else Path(target)
    tmux.start(["sh", "-c", f"exec {SCRIPT} --demo 2>{err}"], width=120, height=40)
    tmux.wait_for("PID")
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0
    if target == "file":
        assert "\x1b" not in err.read_text(errors="replace")
