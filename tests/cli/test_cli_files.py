"""record -> report -> replay through the installed command line, as a user runs them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.ci import IN_CI
from tests.support.cli import run_cli
from tests.support.paths import TRACES


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=timeout)


@pytest.fixture(scope="module")
def starved_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """16 s of the starved-loader demo recorded 4 times a second (gzip)."""
    path = tmp_path_factory.mktemp("rec") / "starved.jsonl.gz"
    result = cli(
        "record",
        "-o",
        str(path),
        "--demo",
        "starved-loader",
        "--interval",
        "0.25",
        "--duration",
        "16",
    )
    assert result.returncode == 0, result.stderr
    assert str(path) in result.stderr  # the one-line summary names the file
    return path


def _report(*args: str) -> dict[str, Any]:
    """The JSON report of a readable file: without --fail-on it always exits 0."""
    result = cli("report", *args, "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_record_then_report_finds_the_starved_loader(starved_recording: Path) -> None:
    doc = _report(str(starved_recording))
    assert doc["worst_severity"] == "warning"
    text = json.dumps(doc)
    assert "input-starved" in text
    assert "num-workers-0" in text


def test_report_fail_on_sets_the_exit_code(starved_recording: Path) -> None:
    failed = cli("report", str(starved_recording), "--fail-on", "warning")
    assert failed.returncode == 1
    # It says which finding met it (issue 44): an epilog's log should not need a re-run.
    [line] = [x for x in failed.stderr.splitlines() if "--fail-on warning: met by" in x]
    assert "input-starved" in line and "GPU" in line
    # The starved loader is a warning, never critical.
    assert cli("report", str(starved_recording), "--fail-on", "critical").returncode == 0
    assert cli("report", str(starved_recording)).returncode == 0


def test_sigterm_closes_the_recording_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gputop_hints",
            "record",
            "-o",
            str(path),
            "--demo",
            "--interval",
            "0.25",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["format"] == "gputop-hints-recording"
    for line in lines[1:]:
        json.loads(line)  # every line complete
    result = cli("report", str(path))
    assert result.returncode == 0, result.stderr
    assert "samples" in result.stdout


def test_report_of_an_unknown_file_says_what_was_tried(tmp_path: Path) -> None:
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\nworld\n")
    result = cli("report", str(junk))
    assert result.returncode == 2
    assert "nvidia-smi" in result.stderr and "wandb" in result.stderr
    assert result.stdout == ""


def test_replay_without_a_terminal_points_to_report(starved_recording: Path) -> None:
    result = cli("replay", str(starved_recording))
    assert result.returncode == 2
    assert "report" in result.stderr


@pytest.fixture
def traces() -> Path:
    if not TRACES.is_dir():
        if IN_CI:
            pytest.fail(f"shared traces missing at {TRACES} (CI must have them)")
        pytest.skip(f"shared traces not found at {TRACES}")
    return TRACES


@pytest.mark.parametrize(
    ("name", "gpus", "interval", "rule"),
    [
        ("openad_gpu_usage.csv", 2, 1.0, "compute-bound"),
        ("machine_translation_gpu_usage.csv", 1, 0.52, "low-utilization"),
        ("rectified_point_flow_gpu_usage.csv", 1, 60.0, None),
        ("spaceinvaders_wandb-events.jsonl", 1, 30.0, "low-utilization"),
    ],
)
def test_every_shared_trace_gets_a_sensible_post_mortem(
    traces: Path, name: str, gpus: int, interval: float, rule: str | None
) -> None:
    result = cli("report", str(traces / name))
    assert result.returncode == 0, result.stderr
    assert "not evaluated: input-starved" in result.stdout  # no per-process data in any
    doc = _report(str(traces / name))
    assert len(doc["gpus"]) == gpus
    assert doc["sampling"]["interval_s"] == pytest.approx(interval, rel=0.05)
    if rule is not None:
        assert rule in {f["rule"] for f in doc["findings"]}
    if interval >= 30:
        assert "too coarse" in result.stdout
