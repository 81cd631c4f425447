"""Headerless ``--query-gpu`` CSVs with more than time and utilization: the columns
told by their values, or, when they cannot be, the ``--map`` line that reads the file."""

from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import open_stream, parse_mapping
from gputop_hints.streams import StreamInfo, UnrecognisedFormat
from tests.support.cli import run_cli
from tests.support.paths import FIXTURES

IMPORT = FIXTURES / "import"
QUERY6 = {
    "nounits": IMPORT / "nvsmi_noheader_query6_nounits.csv",
    "units": IMPORT / "nvsmi_noheader_query6_units.csv",
}
"""timestamp,index,name,temperature.gpu,utilization.gpu,clocks.gr, 2 GPUs, --loop=60."""
BUSY = IMPORT / "nvsmi_noheader_busy_nounits.csv"
"""timestamp,index,temperature.gpu,utilization.gpu,utilization.memory, never idle."""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=60)


def cells(path: Path) -> list[list[str]]:
    with path.open(newline="") as f:
        return [[c.strip() for c in row] for row in csv.reader(f)]


def number(cell: str) -> float:
    return float(cell.split()[0])  # "97 %" or "97"


def load(path: Path, mapping: str | None = None) -> tuple[list[Snapshot], StreamInfo]:
    stream = open_stream(path, mapping=parse_mapping(mapping) if mapping else None)
    snaps = list(stream)
    stream.close()
    return snaps, stream.info


@pytest.mark.parametrize("kind", ["nounits", "units"])
def test_the_six_column_query_is_read_with_every_value(kind: str) -> None:
    """--format=csv,noheader[,nounits]: each GPU's temperature, utilization and clock
    of every poll, as in the file; two GPUs per snapshot."""
    rows = cells(QUERY6[kind])
    snaps, info = load(QUERY6[kind])
    polls = sum(1 for r in rows if r[1] == "0")
    assert len(snaps) == polls and info.gpu_count == 2
    got = [
        (g.index, g.name, g.temperature_c, g.sm_percent, g.sm_clock_mhz)
        for s in snaps
        for g in s.gpus
    ]
    want = [(int(r[1]), r[2], number(r[3]), number(r[4]), number(r[5])) for r in rows]
    assert got == want


@pytest.mark.parametrize("kind", ["nounits", "units"])
def test_report_on_the_six_column_query_says_which_column_is_which(kind: str) -> None:
    """report exits 0, counts every poll, and names the field each column was taken for."""
    path = QUERY6[kind]
    polls = sum(1 for r in cells(path) if r[1] == "0")
    result = cli("report", str(path))
    assert result.returncode == 0, result.stderr
    assert f"{polls} samples every 60 s" in result.stdout
    said = (
        "columns read by their values as column 1 timestamp, column 2 index, column 3 name, "
        "column 4 temperature.gpu, column 5 utilization.gpu, column 6 clocks.sm/clocks.gr"
    )
    assert said in " ".join(result.stdout.split())


def test_the_stream_detail_names_the_inferred_columns() -> None:
    _snaps, info = load(QUERY6["nounits"])
    assert info.header["inferred_columns"] == {
        "column 1": "timestamp",
        "column 2": "index",
        "column 3": "name",
        "column 4": "temperature.gpu",
        "column 5": "utilization.gpu",
        "column 6": "clocks.sm/clocks.gr",
    }
    assert "4=temperature.gpu" in info.detail and "5=utilization.gpu" in info.detail


def suggested_map(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if "gputop-hints report --map" in line]
    assert len(lines) == 1, stderr
    return lines[0]


def test_an_ambiguous_file_is_refused_with_the_map_line_that_reads_it() -> None:
    """Temperature and two utilizations, the GPU never idle: no column can be told
    from another. Exit 2 with the --map line, the columns found filled in, ? for the
    open ones; filled in, that line reads the file."""
    result = cli("report", str(BUSY))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    line = suggested_map(result.stderr)
    assert line == f"gputop-hints report --map time=1,gpu=2,?=3,?=4,?=5 {shlex.quote(str(BUSY))}"
    for column in (3, 4, 5):
        assert f"column {column}: " in result.stderr
    # As printed, the ? entries are refused (nothing is guessed for the user) ...
    argv = shlex.split(line)[1:]
    refused = cli(*argv)
    assert refused.returncode == 2 and "'?'" in refused.stderr
    # ... and filled in, the same line reads every poll.
    filled = [
        a.replace("?=3", "temp=3").replace("?=4", "sm=4").replace("?=5", "mem=5") for a in argv
    ]
    done = cli(*filled)
    polls = sum(1 for r in cells(BUSY) if r[1] == "0")
    assert done.returncode == 0, done.stderr
    assert f"{polls} samples every 1 s" in done.stdout


def test_the_map_wins_and_what_was_inferred_stays() -> None:
    """--map naming only the open columns: the timestamp and index found by
    themselves still read (two GPUs, nvidia-smi times)."""
    rows = cells(BUSY)
    snaps, info = load(BUSY, "temp=3,sm=4,mem=5")
    assert info.gpu_count == 2 and len(snaps) == sum(1 for r in rows if r[1] == "0")
    got = [(g.temperature_c, g.sm_percent, g.memory_access_percent) for s in snaps for g in s.gpus]
    assert got == [(float(r[2]), float(r[3]), float(r[4])) for r in rows]
    assert info.header["inferred_columns"] == {"column 1": "timestamp", "column 2": "index"}


def test_two_utilizations_with_memory_are_not_guessed() -> None:
    """The query of the older fixture (utilization.gpu and .memory both busy, memory
    total and used): the MiB columns are found, the two 0-100 ones left to --map."""
    path = IMPORT / "nvsmi_noheader_nounits.csv"
    with pytest.raises(UnrecognisedFormat) as exc:
        open_stream(path)
    found = re.search(r"report --map (\S+)", str(exc.value))
    assert found is not None
    assert found.group(1) == "time=1,gpu=2,?=3,?=4,vram_total=5,vram_used=6"


def test_a_temperature_beside_a_utilization_that_never_idles_is_not_guessed(
    tmp_path: Path,
) -> None:
    """Temperature and utilization.gpu, the GPU busy at every poll: either column
    could be either, so the file is refused with both left as ?."""
    rows = [
        f"2024/10/31 23:04:{10 + p:02d}.123, 0, NVIDIA A100-SXM4-80GB, {60 + p}, {90 + p}, 1410"
        for p in range(6)
    ]
    path = tmp_path / "gpu.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(
        UnrecognisedFormat, match=r"--map time=1,gpu=2,name=3,\?=4,\?=5,sm_clock=6 "
    ):
        open_stream(path)


def test_power_and_memory_without_units_are_told_by_their_shape(tmp_path: Path) -> None:
    """--query-gpu=timestamp,index,power.draw,power.limit,memory.used,memory.total
    --format=csv,noheader,nounits on 2 GPUs: two-decimal watts (the constant, never
    lower one the limit) and MiB (the constant, never lower one the total)."""
    rows = [
        f"2024/10/31 23:04:{10 + p:02d}.{123 + g:03d}, {g}, {65.43 + 50 * p + g:.2f}, "
        f"400.00, {20000 + 1000 * p + 7 * g}, 81920"
        for p in range(4)
        for g in range(2)
    ]
    path = tmp_path / "gpu.csv"
    path.write_text("\n".join(rows) + "\n")
    snaps, info = load(path)
    got = [
        (g.power_watts, g.power_limit_watts, g.vram_used_bytes, g.vram_total_bytes)
        for s in snaps
        for g in s.gpus
    ]
    split = [[c.strip() for c in row.split(",")] for row in rows]
    want = [(float(r[2]), float(r[3]), int(r[4]) * 2**20, int(r[5]) * 2**20) for r in split]
    assert info.gpu_count == 2 and got == want
    inferred = info.header["inferred_columns"]
    assert isinstance(inferred, dict) and inferred["column 4"] == "power.limit"


TEMP_UTIL = IMPORT / "nvsmi_noheader_temp_util_nounits.csv"
"""timestamp,index,name,temperature.gpu,utilization.gpu,clocks.gr, noheader,nounits,
2 GPUs, -l 1: busy (84-100) through the head, never under 15 there, the temperature
warming from 40 to 68; stalls at 0 later, idle at the end."""


def test_a_busy_gpus_temperature_and_utilization_are_told_apart_by_behaviour() -> None:
    """Neither 0-100 column falls to idle in the head, but one reaches 100 and jumps
    between polls while the other moves a degree or two: read, not refused, with every
    poll's temperature and utilization as in the file."""
    rows = cells(TEMP_UTIL)
    snaps, info = load(TEMP_UTIL)
    assert info.gpu_count == 2
    assert len(snaps) == sum(1 for r in rows if r[1] == "0")
    got = [(g.index, g.temperature_c, g.sm_percent, g.sm_clock_mhz) for s in snaps for g in s.gpus]
    assert got == [(int(r[1]), float(r[3]), float(r[4]), float(r[5])) for r in rows]
    assert info.header["inferred_columns"] == {
        "column 1": "timestamp",
        "column 2": "index",
        "column 3": "name",
        "column 4": "temperature.gpu",
        "column 5": "utilization.gpu",
        "column 6": "clocks.sm/clocks.gr",
    }
    assert "column 5: 0-100 values that reach 100" in info.detail


def test_the_report_says_which_column_was_taken_for_temperature(tmp_path: Path) -> None:
    """Columns swapped (utilization.gpu queried before temperature.gpu): the behaviour
    decides, not the order; the report names each column's field."""
    swapped = tmp_path / "swapped.csv"
    rows = cells(TEMP_UTIL)
    swapped.write_text("".join(", ".join([*r[:3], r[4], r[3], r[5]]) + "\n" for r in rows))
    result = cli("report", str(swapped))
    assert result.returncode == 0, result.stderr
    said = "column 4 utilization.gpu, column 5 temperature.gpu, column 6 clocks.sm/clocks.gr"
    assert said in " ".join(result.stdout.split())
    busy = [float(r[4]) for r in rows if r[1] == "0"]
    doc = cli("report", "--json", str(swapped))
    gpus = json.loads(doc.stdout)["gpus"]
    assert gpus[0]["sm_percent"]["mean"] == pytest.approx(sum(busy) / len(busy))
