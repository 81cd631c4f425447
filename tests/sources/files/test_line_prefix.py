"""Logs piped through ``ts``, read back with ``journalctl`` or written by a logging
wrapper: every line carries a prefix; the log under it reads as without it."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from gputop_hints.sources.files import UnrecognisedFormat, open_stream
from tests.support.logs import read_log
from tests.support.paths import FIXTURES

IMPORT = FIXTURES / "import"
TS_CSV = IMPORT / "nvsmi_csv_ts.log"
JOURNAL_DMON = IMPORT / "dmon_journalctl.log"


def _without(path: Path, cut: int | str, tmp_path: Path) -> Path:
    """``path`` with each line's prefix removed by hand: its first ``cut`` characters,
    or everything up to and including the first ``cut``."""
    out = tmp_path / path.name  # the same name: snapshots carry it
    lines = path.read_text().splitlines()
    if isinstance(cut, int):
        plain = [line[cut:] for line in lines]
    else:
        plain = [line.split(cut, 1)[1] for line in lines]
    out.write_text("\n".join(plain) + "\n")
    return out


def test_ts_stamped_query_csv_reads_as_the_csv_under_it(tmp_path: Path) -> None:
    snaps, info, counters = read_log(TS_CSV)
    stamp = "Jan 15 10:00:00 "
    plain, plain_info, plain_counters = read_log(_without(TS_CSV, len(stamp), tmp_path))
    assert info.format == plain_info.format == "nvidia-smi-csv"
    assert "ts (moreutils)" in info.detail
    assert snaps == plain
    assert len(snaps) == 4 and info.gpu_count == 2
    # nvidia-smi's own timestamps time the samples, 5 s apart
    assert [round(b.timestamp - a.timestamp) for a, b in itertools.pairwise(snaps)] == [5, 5, 5]
    gpu = snaps[0].gpu(0)
    assert gpu is not None and gpu.sm_percent == 97 and gpu.power_watts == 310.5
    # the line cut short keeps its own number
    assert counters.bad_lines == plain_counters.bad_lines == 1
    assert counters.first_bad_line == 7


def test_journalctl_dmon_reads_as_the_dmon_under_it(tmp_path: Path) -> None:
    snaps, info, counters = read_log(JOURNAL_DMON)
    plain, plain_info, _ = read_log(_without(JOURNAL_DMON, "]: ", tmp_path))
    assert info.format == plain_info.format == "nvidia-smi-dmon"
    assert "journalctl" in info.detail
    assert snaps == plain
    assert len(snaps) == 3 and info.gpu_count == 2
    gpu1 = snaps[1].gpu(1)
    assert gpu1 is not None and gpu1.sm_percent is None  # dmon's "-": no reading, not 0
    assert counters.bad_lines == 0


@pytest.mark.parametrize(
    ("fixture", "stamp"),
    [
        ("dmon_u.log", "[2025-01-15 10:00:00] "),
        ("nvsmi_full_2gpu.csv", "2025-01-15 10:00:00,123 INFO "),
        ("nvsmi_full_2gpu.csv", "2025-01-15T10:00:00.5+01:00 | "),
        ("gpustat.log", "00:00:07 "),
    ],
)
def test_other_prefixes_read_as_the_log_under_them(
    fixture: str, stamp: str, tmp_path: Path
) -> None:
    original = IMPORT / fixture
    stamped = tmp_path / fixture
    stamped.write_text("".join(stamp + line + "\n" for line in original.read_text().splitlines()))
    snaps, info, _ = read_log(stamped)
    plain, plain_info, _ = read_log(original)
    assert info.format == plain_info.format
    assert "taken off" in info.detail
    assert snaps == plain and snaps


@pytest.mark.parametrize("fixture", ["dmon_dt.log", "generic_gb_iso.csv", "nvsmi_full_2gpu.csv"])
def test_a_logs_own_time_column_is_not_taken_for_a_prefix(fixture: str) -> None:
    """dmon -o DT and CSVs of ISO times start every data row with a time, but their
    header has none: nothing is taken off."""
    snaps, info, _ = read_log(IMPORT / fixture)
    assert snaps
    assert "taken off" not in info.detail


def test_stamped_lines_no_format_reads_name_the_prefix(tmp_path: Path) -> None:
    log = tmp_path / "chat.log"
    log.write_text("".join(f"Jan 15 10:00:0{i} training step {i} done\n" for i in range(6)))
    with pytest.raises(UnrecognisedFormat, match=r"without the ts \(moreutils\) time stamps"):
        open_stream(log)
