"""CSV and dmon logs: headerless files with --map by column number, epoch times
found by themselves, one bad cell keeping the rest of its row, dmon temperature."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop_hints.sources.files import open_stream, parse_mapping
from gputop_hints.streams import METRIC_TEMPERATURE, UnrecognisedFormat
from tests.support.logs import read_log as load
from tests.support.paths import FIXTURES as FIXTURE_ROOT

MIB = 2**20
FIXTURES = FIXTURE_ROOT / "import"




def test_headerless_bare_numbers_need_map_but_find_their_epoch_column() -> None:
    path = FIXTURES / "noheader_epoch.csv"  # epoch s, util, used MiB, total MiB
    with pytest.raises(UnrecognisedFormat, match=r"--map time=1,sm=2,\?=3,vram_total=4 "):
        open_stream(path)
    snaps, info, _counters = load(path, mapping=parse_mapping("sm=2,vram_used=3,vram_total=4"))
    assert [s.timestamp for s in snaps] == [1736935200, 1736935201, 1736935202]
    assert [s.gpus[0].sm_percent for s in snaps] == [45, 50, 0]
    assert snaps[0].gpus[0].vram_used_bytes == 1024 * MIB
    assert "column 1: epoch times" in info.detail and info.interval_s == 1


def test_headerless_map_names_the_time_column_too() -> None:
    snaps, _, _ = load(
        FIXTURES / "noheader_epoch.csv",
        mapping=parse_mapping("time=1,sm=2,vram_used=3,vram_total=4"),
    )
    assert [s.timestamp for s in snaps] == [1736935200, 1736935201, 1736935202]
    assert snaps[2].gpus[0].vram_total_bytes == 16384 * MIB


@pytest.mark.parametrize(
    "stamp",
    ["1736935200", "1736935200000", "2025-01-15T10:00:00Z", "2025/01/15 10:00:00.000"],
)
def test_headerless_time_shapes(tmp_path: Path, stamp: str) -> None:
    path = tmp_path / "gpu.csv"
    path.write_text(f"{stamp}, 45 %, 1024 MiB\n")
    snaps, _, _ = load(path)
    assert snaps[0].timestamp == 1736935200 and snaps[0].gpus[0].sm_percent == 45


def test_one_bad_cell_keeps_the_rest_of_the_row() -> None:
    # Rows 2 and 5 hold a quoted newline in gpu_util, row 3 a "1,2 GB" memory cell.
    snaps, _info, counters = load(FIXTURES / "generic_bad_cells.csv")
    assert len(snaps) == 5
    assert [s.gpus[0].sm_percent for s in snaps] == [40, None, 50, 55, None]
    assert [s.gpus[0].vram_used_bytes for s in snaps] == [
        1000 * MIB,
        1100 * MIB,
        None,
        1300 * MIB,
        1400 * MIB,
    ]
    assert counters.found["bad_cells"] == {"gpu_util": [2, 3], "mem_used_mb": [1, 5]}
    assert counters.bad_lines == 3 and counters.first_bad_line == 3
    assert "the rest of the row is kept" in (counters.first_bad_reason or "")


@pytest.mark.parametrize("name", ["dmon_pucvmet.log", "dmon_dt.log"])
def test_dmon_reads_gpu_temperature(name: str) -> None:
    snaps, info, _counters = load(FIXTURES / name)
    assert METRIC_TEMPERATURE not in info.missing
    assert all(s.gpus[0].temperature_c is not None for s in snaps)


def test_a_quoted_cell_of_two_lines_keeps_its_column() -> None:
    """``"62.88\\n0"`` (a script writing captured output with a trailing line) from the
    11th row on: each such cell reads as its first line -- the power of every row, as
    the csv module reads the file -- and no line is malformed (the column was lost
    for the rest of the file)."""
    import csv

    path = FIXTURES / "script_multiline_power.csv"
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    expected = [float(r["power_w"].splitlines()[0]) for r in rows]
    assert sum("\n" in r["power_w"] for r in rows) == 30
    snaps, info, counters = load(path)
    assert [g.power_watts for s in snaps for g in s.gpus] == expected
    assert counters.bad_lines == 0
    assert counters.found["multiline_cells"] == [30, 12]  # [cells, first line]: the 11th row
    assert "quoted cells of several lines (power_w): their first line read" in info.detail
