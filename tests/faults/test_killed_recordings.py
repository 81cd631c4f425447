"""Fault matrix, killed recordings: a recorder killed with SIGKILL, and compressed files cut short.

The README promises that a killed recorder loses at most one tick. The real
recorder (``record --demo``, four ticks a second) is killed with SIGKILL -- what
the OOM killer, a job's time limit or a node going down does -- at points chosen
by what is on disk, not by the clock: after its first tick, after 4 and 16 ticks
(1 s and 4 s of a 1 s recorder), and once the file holds more than the 64 KiB the
format sniffers read at first (a long-running recorder: the 30 s case, reached
in a few seconds with 8 GPUs and 64 processes). ``report`` must read every whole
tick and say where the stream ended. Logs compressed with xz and bzip2 and cut
short read the same way.
"""

from __future__ import annotations

import bz2
import json
import lzma
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from tests.faults.test_cli import SAFETY_TIMEOUT_S, cli_env, run_cli
from tests.support.paths import REPO

HEAD_BYTES = 64 * 1024
"""What the format sniffers read first (sources/files/_text.py HEAD_BYTES)."""


def decoded(path: Path) -> bytes:
    """What zlib alone makes of a gzip file that may be cut short: every byte before the cut."""
    return zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(path.read_bytes())


def whole_ticks(text: bytes) -> int:
    """Tick lines (JSON arrays) ending in a newline."""
    return sum(1 for line in text.split(b"\n")[:-1] if line.startswith(b"["))


def start_recorder(path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
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
            "--gpus",
            "8",
            "--processes",
            "64",
        ],
        cwd=REPO,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_when(path: Path, ticks: int, min_bytes: int) -> None:
    """Run the recorder until ``path`` decodes to ``ticks`` whole ticks and ``min_bytes``
    bytes, then SIGKILL it (no handler runs, no gzip trailer is written)."""
    proc = start_recorder(path)
    try:
        deadline = time.monotonic() + SAFETY_TIMEOUT_S * 2
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            if path.exists() and path.stat().st_size:
                text = decoded(path)
                if whole_ticks(text) >= ticks and len(text) >= min_bytes:
                    return
            time.sleep(0.02)
        raise AssertionError(f"the recorder did not reach {ticks} ticks, {min_bytes} bytes")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stderr:
            proc.stderr.close()


@pytest.mark.parametrize(
    ("ticks", "min_bytes"),
    [(1, 0), (4, 0), (16, 0), (1, HEAD_BYTES + 16 * 1024)],
    ids=["first-tick", "4-ticks", "16-ticks", "past-64KiB-head"],
)
def test_a_recorder_killed_by_sigkill_leaves_a_gzip_file_report_reads(
    tmp_path: Path, ticks: int, min_bytes: int
) -> None:
    """record -o X.gz, SIGKILL: report reads each whole tick, says where gzip ends, exit 0.

    The head reader read 64 KiB in one go and threw away all it read when the
    stream ended early: a recorder killed in its first seconds left a file
    refused as 'no text in the file'."""
    path = tmp_path / "run.jsonl.gz"
    kill_when(path, ticks, min_bytes)
    on_disk = whole_ticks(decoded(path))  # read after the kill: nothing more is written
    assert on_disk >= ticks
    result = run_cli("report", "--json", str(path))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["sampling"]["samples"] == on_disk
    notes = " ".join(document["notes"])
    assert "gzip stream ends early" in notes and "read up to line" in notes, notes
    text = run_cli("report", str(path))
    assert text.returncode == 0 and "gzip stream ends early" in text.stdout, text.stderr


def recording_lines(tmp_path: Path) -> bytes:
    """A whole recording of the demo, uncompressed (the recorder's own bytes)."""
    path = tmp_path / "whole.jsonl"
    result = run_cli("record", "-o", str(path), "--demo", "--duration", "6", "--interval", "0.25")
    assert result.returncode == 0, result.stderr
    return path.read_bytes()


@pytest.mark.parametrize("kind", ["xz", "bzip2"])
def test_an_xz_or_bzip2_recording_cut_short_reads_up_to_its_cut(tmp_path: Path, kind: str) -> None:
    """A cut .xz/.bz2 recording: report reads what is whole, says where it ended, exit 0."""
    text = recording_lines(tmp_path)
    if kind == "xz":
        packed = lzma.compress(text)
    else:
        # Blocks of 100 kB, the input several blocks long: bzip2 gives back whole blocks only.
        text = text * (1 + 400_000 // len(text))
        packed = bz2.compress(text, compresslevel=1)
    cut = tmp_path / f"cut.jsonl.{'xz' if kind == 'xz' else 'bz2'}"
    cut.write_bytes(packed[: len(packed) * 3 // 4])
    result = run_cli("report", "--json", str(cut))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["sampling"]["samples"] > 0
    assert f"{kind} stream ends early" in " ".join(document["notes"])


def test_a_cut_gzip_log_that_is_not_a_recording_reads_up_to_its_cut(tmp_path: Path) -> None:
    """A cut gzip'd nvidia-smi CSV: report reads its whole lines, says where it ended, exit 0."""
    rows = ["timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    rows += [
        f"2024/03/05 14:{i // 60:02d}:{i % 60:02d}.000, {g}, {(i * 7 + g) % 100} %, "
        f"{1000 + i} MiB, 81920 MiB"
        for i in range(2000)
        for g in range(2)
    ]
    packer = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    packed = packer.compress(("\n".join(rows) + "\n").encode()) + packer.flush(zlib.Z_SYNC_FLUSH)
    path = tmp_path / "gpu.csv.gz"
    path.write_bytes(packed[: len(packed) // 2])
    result = run_cli("report", "--json", str(path))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert 0 < document["sampling"]["samples"] < 2000
    assert "gzip stream ends early" in " ".join(document["notes"])
