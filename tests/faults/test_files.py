"""Fault matrix, files: crafted recordings and special files given to ``report`` and ``replay``.

Each test runs the real command line on a real file and checks what the user
sees: a clear message and exit 2 for a file that cannot be read at all, a
counted bad line for a line that cannot be used, and never a traceback or a hang.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gputop_hints.model import Snapshot
from gputop_hints.recording import RecordingWriter
from gputop_hints.recording.reader import MAX_LINE_BYTES, count_ticks
from gputop_hints.sources.demo import DemoSource
from tests.support.cli import run_cli

TICKS = 12


def cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    """The installed command line, as a user runs it (no config from the environment)."""
    return run_cli(*args, timeout=timeout)


def report_json(path: Path) -> dict[str, Any]:
    """The ``report --json`` document of a file that must read (exit 0, no traceback)."""
    result = cli("report", "--json", str(path))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A small demo recording's lines: header, static records, then ticks."""
    path = tmp_path_factory.mktemp("rec") / "run.jsonl"
    source = DemoSource("mixed", gpus=2, processes=3)
    with RecordingWriter(path) as writer:
        for _ in range(TICKS):
            writer.write(source.sample())
    return path.read_text().splitlines()


def first_tick(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith("["))


def written(tmp_path: Path, lines: list[str], name: str = "crafted.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def replaced(lines: list[str], index: int, line: str) -> list[str]:
    out = list(lines)
    out[index] = line
    return out


DEEP = "[" * 1000 + "]" * 1000


def _deep_tick(lines: list[str]) -> list[str]:
    return replaced(lines, first_tick(lines) + 1, DEEP)


def _deep_gpu_column(lines: list[str]) -> list[str]:
    i = first_tick(lines) + 1
    tick = json.loads(lines[i])
    tick[2][0][1] = "@"
    line = json.dumps(tick, separators=(",", ":"))
    return replaced(lines, i, line.replace('"@"', DEEP[400:-400]))


def _deep_record(lines: list[str]) -> list[str]:
    return replaced(lines, 1, '{"type":"meta","labels":' + DEEP + "}")


@pytest.mark.parametrize(
    "craft", [_deep_tick, _deep_gpu_column, _deep_record], ids=["tick", "gpu-column", "record"]
)
def test_deeply_nested_json_in_a_line_is_one_counted_bad_line(
    tmp_path: Path, lines: list[str], craft: Callable[[list[str]], list[str]]
) -> None:
    """JSON nested 1000 deep in a tick, a GPU column or a static record: report reads
    the rest, one bad line counted, no traceback."""
    document = report_json(written(tmp_path, craft(lines)))
    assert document["file"]["bad_lines"] == 1
    assert document["sampling"]["samples"] >= TICKS - 1


def test_deeply_nested_json_in_the_header_is_refused_with_a_message(
    tmp_path: Path, lines: list[str]
) -> None:
    """JSON nested 1000 deep in the header line: refused with a message, exit 2, no traceback."""
    path = written(tmp_path, replaced(lines, 0, lines[0][:-1] + ',"x":' + DEEP + "}"))
    result = cli("report", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert str(path) in result.stderr


@pytest.mark.parametrize("token", ["Infinity", "-Infinity", "NaN", "1e400", "1" + "0" * 30])
def test_non_finite_and_huge_numbers_in_a_tick_are_unknown_and_counted(
    tmp_path: Path, lines: list[str], token: str
) -> None:
    """Infinity, NaN, 1e400 or a 31-digit integer as a tick's SM %: read as unknown,
    counted, text and --json reports complete, no traceback."""
    i = first_tick(lines) + 2
    tick = json.loads(lines[i])
    tick[2][0][1] = "@"
    line = json.dumps(tick, separators=(",", ":")).replace('"@"', token)
    path = written(tmp_path, replaced(lines, i, line))
    document = report_json(path)
    assert document["file"]["bad_lines"] == 1
    assert "not finite or out of range" in document["file"]["first_bad_reason"]
    assert document["sampling"]["samples"] == TICKS
    text = cli("report", str(path))
    assert text.returncode == 0 and "Traceback" not in text.stderr
    words = set(text.stdout.lower().replace("%", " ").split())
    assert not words & {"nan", "inf", "-inf", "infinity"}


def test_a_non_finite_timestamp_drops_only_that_tick(tmp_path: Path, lines: list[str]) -> None:
    """Infinity as a tick's timestamp: that tick is skipped and counted, the replay and the
    report read the rest, no traceback."""
    i = first_tick(lines) + 1
    line = "[Infinity" + lines[i][lines[i].index(",") :]
    path = written(tmp_path, replaced(lines, i, line))
    document = report_json(path)
    assert document["file"]["bad_lines"] == 1
    assert document["sampling"]["samples"] == TICKS - 1


def test_strings_where_numbers_belong_are_unknown_and_counted(
    tmp_path: Path, lines: list[str]
) -> None:
    """Strings as a tick's SM %, host iowait and a process's VRAM: read as unknown,
    counted once, every tick kept, no traceback."""
    i = first_tick(lines) + 3
    tick = json.loads(lines[i])
    tick[2][0][1] = "abc"
    tick[3][0] = "x"
    tick[4][0][2] = "lots"
    path = written(tmp_path, replaced(lines, i, json.dumps(tick, separators=(",", ":"))))
    document = report_json(path)
    assert document["file"]["bad_lines"] == 1
    assert document["file"]["first_bad_line"] == i + 1
    assert document["sampling"]["samples"] == TICKS


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("interval_s", -1, "'interval_s'"),
        ("interval_s", "abc", "'interval_s'"),
        ("interval_s", float("nan"), "not finite"),
        ("gpus", [1, "x"], "'gpus'"),
        ("gpus", "two", "'gpus'"),
        ("allowed_cores", "abc", "'allowed_cores'"),
    ],
)
def test_a_malformed_header_key_is_refused_naming_file_line_and_key(
    tmp_path: Path, lines: list[str], key: str, value: object, said: str
) -> None:
    """A header with interval_s -1, "abc" or NaN, or a malformed gpus or allowed_cores:
    refused naming the file, line 1 and the key, exit 2, no traceback."""
    header = json.loads(lines[0])
    header[key] = value
    path = written(tmp_path, replaced(lines, 0, json.dumps(header)))
    for command in ("report", "replay"):
        result = cli(command, str(path))
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert str(path) in result.stderr and "line 1" in result.stderr
        assert said in result.stderr


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
@pytest.mark.parametrize("command", ["report", "replay"])
def test_a_special_file_is_refused_without_waiting(tmp_path: Path, kind: str, command: str) -> None:
    """A FIFO with no writer, /dev/zero or a directory given to report or replay:
    refused at once with a message, exit 2, no traceback, no hang."""
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path
    else:
        path = Path(kind)
    result = cli(command, str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert str(path) in result.stderr and "not a file" in result.stderr


def test_a_recording_reserialised_with_spaces_reads_every_sample(
    tmp_path: Path, lines: list[str]
) -> None:
    """A recording re-serialised by json.dumps with its default spacing: every sample
    reads, no bad line, and --fail-on still sees its findings."""
    spaced = [json.dumps(json.loads(line)) for line in lines]
    path = written(tmp_path, spaced)
    compact = report_json(written(tmp_path, lines, "compact.jsonl"))
    document = report_json(path)
    assert document["file"]["bad_lines"] == 0
    assert document["sampling"]["samples"] == TICKS
    assert document["findings"] == compact["findings"]
    assert count_ticks(path) == TICKS


def test_a_bad_line_is_counted_once(tmp_path: Path, lines: list[str]) -> None:
    """One garbled line before the first tick: the report counts it once (it reads the
    start of the file twice), no traceback."""
    crafted = [*lines[:1], "this is not json", *lines[1:]]
    document = report_json(written(tmp_path, crafted))
    assert document["file"]["bad_lines"] == 1
    assert document["file"]["first_bad_line"] == 2


def test_an_overlong_line_is_skipped_and_counted(tmp_path: Path, lines: list[str]) -> None:
    """A line longer than the reader's bound (9 MB of digits in one tick): skipped and
    counted, the ticks after it read, no traceback."""
    i = first_tick(lines) + 1
    huge = "[1700000000.5,0.1,[[0," + "1," * (MAX_LINE_BYTES // 2 + 1024) + "1]],[],[]]"
    path = written(tmp_path, [*lines[: i + 1], huge, *lines[i + 1 :]])
    document = report_json(path)
    assert document["file"]["bad_lines"] == 1
    assert "longer than" in document["file"]["first_bad_reason"]
    assert document["sampling"]["samples"] == TICKS


@pytest.mark.parametrize("command", ["report", "replay"])
@pytest.mark.parametrize("path", ["/proc/kmsg", "/proc/self/pagemap", "/sys/kernel/uevent_seqnum"])
def test_kernel_pseudo_files_are_refused_with_the_reason(command: str, path: str) -> None:
    """report/replay of /proc/kmsg (blocks), /proc/self/pagemap (endless), a /sys file:
    refused at once naming /proc or /sys, exit 2, no hang, no traceback."""
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist on this kernel")
    result = cli(command, path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert path in result.stderr and "not a log" in result.stderr


def test_a_16_gb_sparse_file_of_nuls_is_refused_after_its_first_bytes(tmp_path: Path) -> None:
    """report of a 16 GB sparse file (one endless run of NULs, no newline): refused as
    binary from its first 64 KiB, exit 2; it never reads the rest (a hang fails here)."""
    path = tmp_path / "sparse.log"
    with open(path, "wb") as f:
        f.truncate(16 * 2**30)
    result = cli("report", str(path), timeout=20)
    assert result.returncode == 2
    assert "binary data" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("where", ["gpu", "process"])
def test_replay_plays_past_a_5000_digit_number_to_the_end(
    tmp_path: Path, lines: list[str], where: str
) -> None:
    """replay of a recording with a 5,000-digit integer in a GPU's SM % or a process's
    VRAM: every tick plays to the end, that value unknown, no traceback."""
    from gputop_hints.sources.replay import ReplaySource

    i = first_tick(lines) + 2
    tick = json.loads(lines[i])
    if where == "gpu":
        tick[2][0][1] = "@"
    else:
        tick[4][0][2] = "@"
    crafted = json.dumps(tick, separators=(",", ":")).replace('"@"', "9" * 5000)
    source = ReplaySource(written(tmp_path, replaced(lines, i, crafted)))
    played: list[Snapshot] = []
    try:
        for _ in range(TICKS + 5):
            snap = source.sample()
            if played and snap.timestamp == played[-1].timestamp:
                break  # past the end: replay stays on the last tick
            played.append(snap)
    finally:
        source.close()
    assert len(played) == TICKS
    bad = played[2]
    if where == "gpu":
        assert bad.gpus[0].sm_percent is None
    else:
        assert bad.processes[0].vram_bytes is None
