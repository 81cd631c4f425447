"""Shapes seen in real GPU logs in public repositories that the readers got wrong
(fixtures written by hand in the same shape; see tests/fixtures/import/README.md)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from tests.support.logs import read_log as load
from tests.support.paths import FIXTURES as FIXTURE_ROOT

MIB = 2**20
FIXTURES = FIXTURE_ROOT / "import"




def test_wandb_panel_export_reads_relative_process_time() -> None:
    # W&B's 'Export panel data' CSV of a system chart: x axis 'Relative Time (Process)'
    # in seconds, one '<run> - system/gpu.N.gpu' column per GPU with its __MIN/__MAX.
    snaps, info, counters = load(FIXTURES / "wandb_panel_export.csv")
    assert [s.timestamp for s in snaps] == [30.418, 60.902, 91.337, 121.8]
    assert 30 < (info.interval_s or 0) < 31  # W&B's ~30 s, not one a second assumed
    assert [s.gpus[0].sm_percent for s in snaps] == [88.5, 91, 12.25, 95]  # not __MIN
    assert [len(s.gpus) for s in snaps] == [2, 2, 2, 1]
    assert info.header is not None
    columns = info.header["columns"]
    assert isinstance(columns, Mapping) and columns["Relative Time (Process)"] == "time"
    assert counters.bad_lines == 0


def test_date_and_time_columns_make_the_time_and_power_memory_max_are_read() -> None:
    # A hand-written logger's 'Date,Time,...,Power Used, Power Max,...,Memory Used,Memory Max'
    # (each reading in a column of its own): the date is part of the time, so the log
    # crosses midnight forwards; 'Max' is the card's limit/total.
    snaps, info, counters = load(FIXTURES / "script_date_time.csv")
    times = [s.timestamp for s in snaps]
    assert [b - a for a, b in itertools.pairwise(times)] == [5, 5, 5]
    assert info.interval_s == 5 and counters.bad_lines == 0
    g = snaps[0].gpus[0]
    assert (g.sm_percent, g.temperature_c, g.power_watts, g.power_limit_watts) == (97, 61, 182, 250)
    assert (g.vram_used_bytes, g.vram_total_bytes) == (9876 * MIB, 11019 * MIB)
    assert [len(s.gpus) for s in snaps] == [1, 1, 1, 1]


def test_a_column_named_date_holding_timestamps_is_the_time() -> None:
    snaps, info, _ = load(FIXTURES / "script_date_column.csv")
    times = [s.timestamp for s in snaps]
    assert times[1] - times[0] == 10 and info.interval_s == 10  # not one a second assumed
    assert times[0] > 1.7e9  # absolute: 2024
    assert [s.gpus[0].sm_percent for s in snaps] == [71, 75, 0]
    assert "no timestamps" not in info.detail
