"""Runs of NUL bytes in a text log (two loggers on one file, a pre-allocated file,
one cut by a crash): skipped and counted as bad records, the rest read."""

from __future__ import annotations

import itertools
import re
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from gputop_hints.sources.files import open_stream
from gputop_hints.streams import UnrecognisedFormat
from tests.support.cli import run_cli
from tests.support.paths import FIXTURES

IMPORT = FIXTURES / "import"
NVSMI_TIME = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}$")



def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=60)


def polls_and_nul_lines(path: Path) -> tuple[int, list[int]]:
    """Counted by hand: the GPU 0 rows that survive (the text after a line's last
    NUL), and the 1-based numbers of the lines holding NULs."""
    polls = 0
    nul_lines: list[int] = []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if b"\0" in raw:
            nul_lines.append(number)
        cells = [c.strip() for c in raw.rsplit(b"\0", 1)[-1].decode().split(",")]
        if len(cells) == 6 and NVSMI_TIME.match(cells[0]) and cells[1] == "0":
            polls += 1
    return polls, nul_lines


@pytest.mark.parametrize("name", ["nvsmi_nul_midfile.csv", "nvsmi_nul_tail.csv"])
def test_report_reads_past_a_nul_run_and_names_its_line(name: str) -> None:
    """report of a --query-gpu log with 4 KiB of NULs mid-file (a record cut short,
    the logger's next record glued after them) or a pre-allocated NUL tail: exit 0,
    every poll counted, the NUL run one malformed line at its line number."""
    path = IMPORT / name
    polls, nul_lines = polls_and_nul_lines(path)
    assert len(nul_lines) == 1
    result = cli("report", str(path))
    assert result.returncode == 0, result.stderr
    assert f"{polls} samples every 1 s" in result.stdout
    assert f"1 malformed line(s) skipped, the first at line {nul_lines[0]}: " in result.stdout
    assert "NUL byte" in result.stdout


def test_a_record_after_a_nul_run_on_its_line_is_kept() -> None:
    """The mid-file run: the poll written after the NULs on the same line is read
    (its values as in the file), the one cut short by them is not."""
    path = IMPORT / "nvsmi_nul_midfile.csv"
    raw = path.read_bytes().split(b"\n")
    glued = next(line for line in raw if b"\0" in line)
    tail = glued.rsplit(b"\0", 1)[1].decode().split(", ")
    stream = open_stream(path)
    snaps = list(stream)
    stream.close()
    # nvidia-smi's timestamps are local wall-clock times, read as such.
    when = datetime.strptime(tail[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
    kept = [s for s in snaps if abs(s.timestamp - when) < 0.01]
    assert tail[1] == "0" and len(kept) == 1
    assert kept[0].gpus[0].sm_percent == float(tail[3].split()[0])
    assert stream.counters.bad_lines == 1
    assert "cut short" in (stream.counters.first_bad_reason or "")


def test_two_appended_copies_separated_by_nuls_read_as_two_segments() -> None:
    """Two copies of a log appended with a NUL run between them, the second starting
    earlier: every poll of both read, time never runs backwards, one clock jump."""
    path = IMPORT / "nvsmi_nul_two_copies.csv"
    polls, nul_lines = polls_and_nul_lines(path)
    stream = open_stream(path)
    snaps = list(stream)
    stream.close()
    assert len(snaps) == polls
    times = [s.timestamp for s in snaps]
    assert all(b > a for a, b in itertools.pairwise(times))
    assert stream.counters.found["clock_jumps_back"] == 1
    assert (stream.counters.bad_lines, stream.counters.first_bad_line) == (1, nul_lines[0])


def test_a_head_starting_with_nuls_is_still_sniffed(tmp_path: Path) -> None:
    """A headerless --query-gpu log whose first line is NULs then a record: still
    recognised as nvidia-smi CSV by its values, every row read."""
    rows = (IMPORT / "nvsmi_noheader_units.csv").read_text().splitlines()
    path = tmp_path / "gpu.csv"
    path.write_bytes(b"\0" * 3000 + "\n".join(rows).encode() + b"\n")
    stream = open_stream(path)
    snaps = list(stream)
    stream.close()
    assert stream.info.format == "nvidia-smi-csv"
    ticks = len({line.split(",")[0][:19] for line in rows})
    assert len(snaps) == ticks
    assert (stream.counters.bad_lines, stream.counters.first_bad_line) == (1, 1)


def test_a_nul_run_longer_than_a_line_keeps_the_record_after_it(tmp_path: Path) -> None:
    """2 MiB of NULs (past the longest line read) between polls: one bad record,
    the poll after it read."""
    rows = (IMPORT / "nvsmi_nul_tail.csv").read_bytes().rstrip(b"\0").split(b"\n")
    header, body = rows[0], [r for r in rows[1:] if r]
    path = tmp_path / "gpu.csv"
    path.write_bytes(header + b"\n" + body[0] + b"\n" + b"\0" * (2 * 2**20) + b"\n".join(body[1:]))
    stream = open_stream(path)
    snaps = list(stream)
    stream.close()
    assert len(snaps) == len([r for r in body if b", 0, " in r])
    assert stream.counters.bad_lines == 1 and stream.counters.first_bad_line == 3


@pytest.mark.parametrize("kind", ["all NULs", "UTF-16 without BOM", "NULs everywhere"])
def test_binary_files_are_still_refused(tmp_path: Path, kind: str) -> None:
    """Only NULs, UTF-16 without its BOM (a NUL in every other byte), or text with
    NULs strewn through it: refused as binary data, exit 2."""
    text = (IMPORT / "nvsmi_noheader_units.csv").read_text()
    if kind == "all NULs":
        data = b"\0" * 100_000
    elif kind == "UTF-16 without BOM":
        data = text.encode("utf-16-le")
    else:
        data = b"".join(line.encode() + b"\0\n" for line in text.splitlines() * 5)
    path = tmp_path / "gpu.csv"
    path.write_bytes(data)
    with pytest.raises(UnrecognisedFormat, match="binary data"):
        open_stream(path)
    result = cli("report", str(path))
    assert result.returncode == 2 and "binary data" in result.stderr
