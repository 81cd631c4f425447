"""``--notify-cmd``: a real script gets each alert as JSON on standard input.

``record`` on the demo runs the hints on every tick, so a bounded demo recording
(simulated time, recorded as fast as it goes) drives the alerts end to end."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.support.cli import run_cli

SINK = """\
import sys
with open(sys.argv[1], "a", encoding="utf-8") as f:
    f.write(sys.stdin.read())
"""


def sink(tmp_path: Path) -> tuple[str, Path]:
    """A command that appends its standard input to a file, and that file."""
    script = tmp_path / "sink.py"
    script.write_text(SINK, encoding="utf-8")
    out = tmp_path / "events.jsonl"
    return shlex.join([sys.executable, str(script), str(out)]), out


def events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def record(tmp_path: Path, *args: str, scenario: str = "starved-loader", duration: str = "300"):
    return run_cli(
        "record",
        "-o",
        str(tmp_path / "run.jsonl"),
        "--demo",
        scenario,
        "--duration",
        duration,
        *args,
    )


def test_the_command_gets_the_finding_as_json_on_stdin(tmp_path: Path) -> None:
    command, out = sink(tmp_path)
    result = record(tmp_path, "--notify-cmd", command)
    assert result.returncode == 0, result.stderr
    (event,) = events(out)
    assert event["event"] == "raised"
    assert event["rule"] == "input-starved"
    assert event["severity"] == "warning"
    assert event["label"] == "starved: num_workers=0?"
    assert event["gpu_index"] == 0
    assert event["pid"] == 4000
    assert event["process"] == "python"
    assert str(event["advice"]).startswith("Set DataLoader(num_workers=")
    assert event["host"] == "demo-node"
    assert event["title"] == "gputop-hints: warning on GPU 0"
    # The demo's clock: the 13th simulated second, however fast it was recorded.
    assert event["time"] == 1_700_000_013.0
    # Not a terminal: the bell and OSC are not asked for, so nothing is said of them.
    assert "not a terminal" not in result.stderr


def test_the_config_section_alone_turns_the_command_on(tmp_path: Path) -> None:
    command, out = sink(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(
        "general:\n  window_s: 10\nnotify:\n  channels: [cmd]\n"
        f"  command: {json.dumps(command)}\n  max_per_minute: 2\n",
        encoding="utf-8",
    )
    result = record(tmp_path, "--config", str(config), scenario="mixed", duration="120")
    assert result.returncode == 0, result.stderr
    # mixed raises three within 15 s; the config's cap lets two through.
    assert [e["rule"] for e in events(out)] == ["small-batch", "idle-holding-vram"]


def test_a_failing_command_is_reported_once(tmp_path: Path) -> None:
    script = tmp_path / "fail.py"
    script.write_text("import sys\nsys.stdin.read()\nsys.exit('no route to ntfy')\n")
    result = record(
        tmp_path,
        "--notify-cmd",
        shlex.join([sys.executable, str(script)]),
        scenario="mixed",
        duration="120",
    )
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "--notify-cmd" in line]
    assert len(said) == 1, result.stderr
    assert "exited with status 1: no route to ntfy" in said[0]


def test_a_command_that_is_not_there_is_reported_once(tmp_path: Path) -> None:
    result = record(
        tmp_path,
        "--notify-cmd",
        str(tmp_path / "no-such-notifier"),
        scenario="mixed",
        duration="120",
    )
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "--notify-cmd" in line]
    assert len(said) == 1, result.stderr
    assert "cannot run" in said[0] and "No such file" in said[0]


def test_bell_and_osc_with_stdout_not_a_terminal_say_so(tmp_path: Path) -> None:
    command, out = sink(tmp_path)
    result = record(tmp_path, "--notify", "bell,osc,cmd", "--notify-cmd", command)
    assert result.returncode == 0, result.stderr
    assert "standard output is not a terminal" in result.stderr
    assert "\x07" not in result.stdout and "\x1b" not in result.stdout
    assert len(events(out)) == 1
