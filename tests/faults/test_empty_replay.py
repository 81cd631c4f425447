"""Fault matrix, an empty recording given to ``replay``: it agrees with ``report``.

A recorder stopped before its first tick leaves a 0-byte file; one stopped
between its header and its first tick leaves the header alone. ``report`` says
"no samples" and exits 0 (a design choice: nothing is wrong, there is only
nothing to show); ``replay`` exited 2 as if the file could not be read. Both run
as a user runs them, without a terminal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop_hints.recording import RecordingWriter
from gputop_hints.sources.demo import DemoSource
from tests.support.cli import run_cli


def header_only(path: Path) -> None:
    """A recording cut after its header line (the recorder stopped before its first tick)."""
    whole = path.with_suffix(".whole")
    with RecordingWriter(whole) as writer:
        writer.write(DemoSource("mixed", gpus=2, processes=2).sample())
    path.write_bytes(whole.read_bytes().split(b"\n", 1)[0] + b"\n")


@pytest.mark.parametrize("kind", ["zero-bytes", "header-only"])
def test_replay_of_an_empty_recording_agrees_with_report(tmp_path: Path, kind: str) -> None:
    """replay EMPTY (0 bytes, header only): 'no samples', exit 0, as report says."""
    path = tmp_path / "run.jsonl"
    if kind == "zero-bytes":
        path.write_bytes(b"")
    else:
        header_only(path)
    report = run_cli("report", str(path))
    replay = run_cli("replay", str(path))
    assert report.returncode == 0 and "no samples" in report.stdout, report.stderr
    assert "Traceback" not in replay.stderr, replay.stderr
    assert replay.returncode == report.returncode, replay.stderr
    assert "no samples" in replay.stdout, replay.stdout + replay.stderr
