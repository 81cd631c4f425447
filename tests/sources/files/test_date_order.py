"""A ``Date`` column written year last (``04-03-2021``): a line cannot tell day from
month, the file can (a part over 12 is a day)."""

from __future__ import annotations

import itertools
from datetime import datetime
from pathlib import Path

from tests.sources.files.test_real_shapes import FIXTURES, MIB
from tests.support.logs import read_log as load


def _local(*args: int) -> float:
    return datetime(*args).timestamp()  # type: ignore[arg-type]


def test_day_first_dates_are_read_when_a_day_is_over_12() -> None:
    snaps, info, counters = load(FIXTURES / "script_date_dayfirst.csv")
    times = [s.timestamp for s in snaps]
    assert times[0] == _local(2021, 3, 12, 23, 59, 50)  # 12 March, not 3 December
    assert [b - a for a, b in itertools.pairwise(times)] == [5, 5, 5]  # crosses midnight
    assert "dates read day first" in info.detail
    g = snaps[2].gpus[0]
    assert (g.sm_percent, g.power_watts, g.vram_used_bytes) == (3, 60, 9876 * MIB)
    assert counters.bad_lines == 0


def _write(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(["Date,Time,Utilization,Memory Used", *rows]) + "\n")
    return path


def test_month_first_dates_are_read_when_a_second_part_is_over_12(tmp_path: Path) -> None:
    rows = ["03-12-2021,23:59:55,99,9876", "03-13-2021,00:00:00,3,9876"]
    snaps, info, _ = load(_write(tmp_path / "m.csv", rows))
    assert [s.timestamp for s in snaps] == [
        _local(2021, 3, 12, 23, 59, 55),
        _local(2021, 3, 13, 0, 0, 0),
    ]
    assert "dates read month first" in info.detail


def test_the_order_decided_after_the_first_rows(tmp_path: Path) -> None:
    # 60 rows on the 4th first, then the 13th: the file's head tells the order
    rows = [f"04-03-2021,10:{k // 60:02d}:{k % 60:02d},50,1000" for k in range(60)]
    rows.append("13-03-2021,10:00:00,50,1000")
    snaps, info, _ = load(_write(tmp_path / "late.csv", rows))
    assert snaps[0].timestamp == _local(2021, 3, 4, 10, 0, 0)
    assert snaps[-1].timestamp == _local(2021, 3, 13, 10, 0, 0)
    assert "day first" in info.detail


def test_an_order_that_cannot_be_told_is_said_and_times_of_day_kept(tmp_path: Path) -> None:
    rows = ["04-03-2021,10:00:00,99,9876", "04-03-2021,10:00:05,3,9876"]
    snaps, info, _ = load(_write(tmp_path / "a.csv", rows))
    assert [s.timestamp for s in snaps] == [36000, 36005]  # times of day, relative
    assert "order of day and month could not be told" in info.detail


def test_year_first_dates_read_as_before() -> None:
    snaps, info, _ = load(FIXTURES / "script_date_time.csv")
    assert snaps[0].timestamp == _local(2021, 3, 4, 23, 59, 50)
    assert "first" not in info.detail
