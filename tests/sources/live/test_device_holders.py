"""``fuser -v`` on the GPU device files, as ``h`` runs it: with the real fuser (psmisc)
on temporary files that real child processes hold open -- the device glob is a
parameter, so no GPU is needed to see a holder listed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputop_hints.sources.live.device_holders import list_holders, refusal

pytestmark = pytest.mark.skipif(shutil.which("fuser") is None, reason="needs fuser (psmisc)")

HOLD = "import sys, time; fs = [open(p) for p in sys.argv[1:]]; time.sleep(60)"


def holding(*paths: Path) -> subprocess.Popen[bytes]:
    """A real child that opens ``paths`` and sleeps; returned once it has them open."""
    child = subprocess.Popen([sys.executable, "-c", HOLD, *map(str, paths)])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        held = {p.resolve() for p in Path(f"/proc/{child.pid}/fd").iterdir() if p.is_symlink()}
        if all(path.resolve() in held for path in paths):
            return child
        time.sleep(0.02)
    child.kill()
    raise AssertionError("the child did not open its files")


@pytest.fixture
def devices(tmp_path: Path) -> Iterator[list[Path]]:
    files = [tmp_path / "nvidia0", tmp_path / "nvidiactl", tmp_path / "other"]
    for f in files:
        f.write_bytes(b"")
    yield files


def test_every_holder_of_the_matching_files_is_listed_with_its_pid(devices: list[Path]) -> None:
    gpu0, ctl, other = devices
    a, b, c = holding(gpu0), holding(gpu0, ctl), holding(other)
    try:
        got = list_holders(str(gpu0.parent / "nvidia*"))
    finally:
        for child in (a, b, c):
            child.kill()
            child.wait()
    assert got.ran
    assert got.command == f"fuser -v {gpu0.parent}/nvidia*"
    assert "USER" in got.lines[0] and "PID" in got.lines[0]  # fuser's own table
    pids = {int(w) for line in got.lines for w in line.split() if w.isdigit()}
    assert {a.pid, b.pid} <= pids
    assert c.pid not in pids  # holds only a file the glob does not match
    assert str(ctl) in got.text and str(other) not in got.text
    assert not any(line.startswith("Cannot stat") for line in got.lines)


def test_files_nobody_holds_say_so(devices: list[Path]) -> None:
    got = list_holders(str(devices[0].parent / "nvidia*"))
    assert got.ran
    assert got.text.startswith(f"No process holds {devices[0].parent}/nvidia*")


def test_no_matching_file_says_the_device_files_are_not_here(tmp_path: Path) -> None:
    got = list_holders(str(tmp_path / "nvidia*"))
    assert not got.ran
    assert got.text.startswith(f"No file matches {tmp_path}/nvidia*")


def test_a_missing_fuser_names_the_package(devices: list[Path]) -> None:
    got = list_holders(str(devices[0].parent / "nvidia*"), fuser="fuser-not-installed")
    assert not got.ran
    assert got.text.startswith("fuser not found (psmisc)")


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("demo", "simulated"),
        ("replay", "a recording"),
        ("prometheus", "other machines"),
    ],
)
def test_only_the_live_source_runs_it(kind: str, why: str) -> None:
    assert refusal("live") is None
    said = refusal(kind)
    assert said is not None and why in said and "fuser -v /dev/nvidia*" in said
