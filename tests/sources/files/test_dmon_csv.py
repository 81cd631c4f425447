"""``nvidia-smi dmon --format csv``: the comma form of dmon reads as the blank-separated one."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.support.logs import read_log
from tests.support.paths import FIXTURES

CSV_LOG = FIXTURES / "import" / "dmon_csv.log"


def _values_rows() -> list[list[str]]:
    """The fixture's complete values rows, read with the csv module (not the reader)."""
    with open(CSV_LOG, newline="") as f:
        return [r for r in csv.reader(f) if r and not r[0].startswith("#") and len(r) == 17]


def test_comma_dmon_reads_every_poll_and_gpu() -> None:
    snaps, info, counters = read_log(CSV_LOG)
    rows = _values_rows()
    assert info.format == "nvidia-smi-dmon"
    assert "--format csv" in info.detail
    polls = sorted({r[1] for r in rows})
    assert len(snaps) == len(polls) == 4
    assert info.gpu_count == 2
    for snap, poll in zip(snaps, polls, strict=True):
        for row in (r for r in rows if r[1] == poll):
            gpu = snap.gpu(int(row[2]))
            assert gpu is not None
            assert gpu.sm_percent == float(row[6])
            assert gpu.memory_access_percent == float(row[7])
            assert gpu.power_watts == (None if row[3] == "-" else float(row[3]))
            assert gpu.temperature_c == float(row[4])
            assert gpu.vram_used_bytes == int(row[14]) * 2**20
            assert gpu.sm_clock_mhz == float(row[13])
    assert snaps[1].timestamp - snaps[0].timestamp == 1.0
    # the line cut short is counted, with its number; the repeated header is not bad
    assert counters.bad_lines == 1 and counters.first_bad_line == 7


def test_comma_form_equals_the_blank_form(tmp_path: Path) -> None:
    """The same log as dmon prints it without --format csv (blanks between the fields),
    and with ', ' between them: the same readings."""
    text = CSV_LOG.read_text()
    blank = tmp_path / "dmon_blank.log"
    blank.write_text("\n".join("   ".join(line.split(",")) for line in text.splitlines()) + "\n")
    spaced = tmp_path / "dmon_spaced.log"
    spaced.write_text(text.replace(",", ", "))
    reference, _, _ = read_log(CSV_LOG)
    for path in (blank, spaced):
        snaps, info, counters = read_log(path)
        assert info.format == "nvidia-smi-dmon"
        assert [s.gpus for s in snaps] == [s.gpus for s in reference]
        assert [s.timestamp for s in snaps] == [s.timestamp for s in reference]
        assert counters.bad_lines == 1
