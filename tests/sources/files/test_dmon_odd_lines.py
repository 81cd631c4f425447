"""dmon's quick paths (its repeated header lines known by their text, the time of a poll
read once for all its GPUs) read every line as before: values checked against the
cells split apart here, odd lines counted with their line and column, and a log of
the same lines repeated reads the same in every repeat."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.support.logs import read_log
from tests.support.paths import FIXTURES

ODD = """\
#Date  Time  gpu  pwr  gtemp  mtemp  sm  mem  enc  dec  mclk  pclk  pviol  tviol  fb  rxpci txpci
#YYYYMMDD  HH:MM:SS  Idx  W  C  C  %  %  %  %  MHz  MHz  %  %  MB  MB/s  MB/s
 20250115  10:00:00  0  72  48  -  30  10  0  0  9501  1980  0  0  1024  12  3
 20250115  10:00:00  1  N/A  47  -  0  0  0  0  9501  210  5  0  2048  -  -
 20250115  10:00:02  0  75  49  -  abc  11  0  0  9501  1980  0  0  1024  12  3
 20250115  10:00:02  1  70  [Not Supported]  -  0  0  0  0  9501  210  0  0  2048  1  1
 20250115  10:00:04  0  75  49
 20250115  10:00:04  1  70  47  -  0  0  0  0  9501  210  0  0  2048  1  1  extra
#Date  Time  gpu  pwr  gtemp  mtemp  sm  mem  enc  dec  mclk  pclk  pviol  tviol  fb  rxpci txpci
#YYYYMMDD  HH:MM:SS  Idx  W  C  C  %  %  %  %  MHz  MHz  %  %  MB  MB/s  MB/s
 20250115  10:00:06  0  72  48  -  30  10  0  0  9501  1980  0  0  1024  12  3
 20250115  10:00:06  x  72  48  -  30  10  0  0  9501  1980  0  0  1024  12  3
 2025011x  10:00:08  0  72  48  -  30  10  0  0  9501  1980  0  0  1024  12  3
 20250115  10:0a:08  0  72  48  -  30  10  0  0  9501  1980  0  0  1024  12  3
 20250115  10:00:08  0  -  -  -  -  -  -  -  -  -  -  -  -  -  -
 20250115  10:00:08  1  999999  48  -  300  10  0  0  9501  1980  200  0  -5  12  3
 20250115  10:00:12  0  72  48  -  30  10  0  0  9501  1980  0  0  1024  12  3
"""
BAD_LINES = [5, 6, 7, 8, 12, 13, 14, 16]
"""Counted by hand: a bad cell (5: sm 'abc'; 16: pwr, sm, pviol and fb out of range,
the rest kept), '[Not Supported]' split in two (6), short (7) and long (8) rows, a GPU,
a date and a time that do not read (12-14)."""
BAD_CELLS = {"sm": [2, 5], "pwr": [1, 16], "pviol": [1, 16], "fb": [1, 16]}
KEPT_WHOLE = [3, 4, 11, 15, 17]
"""The lines whose every cell reads."""
MIB = 2**20
FIELDS = (
    "power_watts", "temperature_c", "sm_percent", "memory_access_percent", "sm_clock_mhz",
    "vram_used_bytes", "pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s", "throttle_reasons",
)  # fmt: skip


def _number(cell: str) -> float | None:
    return None if cell in ("-", "N/A") else float(cell)


def _expected(text: str) -> dict[tuple[float, int], dict[str, object]]:
    """(poll time, GPU) -> the readings of the kept-whole lines, from their cells."""
    out: dict[tuple[float, int], dict[str, object]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if number not in KEPT_WHOLE:
            continue
        date, hms, gpu, pwr, gtemp, _mt, sm, mem, _e, _d, _mc, pclk, pviol, _tv, fb, rx, tx = (
            line.split()
        )
        stamp = time.mktime(time.strptime(f"{date} {hms}", "%Y%m%d %H:%M:%S"))
        fb_mib, rx_mib, tx_mib = _number(fb), _number(rx), _number(tx)
        out[(stamp, int(gpu))] = {
            "power_watts": _number(pwr),
            "temperature_c": _number(gtemp),
            "sm_percent": _number(sm),
            "memory_access_percent": _number(mem),
            "sm_clock_mhz": _number(pclk),
            "vram_used_bytes": None if fb_mib is None else fb_mib * MIB,
            "pcie_rx_bytes_per_s": None if rx_mib is None else rx_mib * MIB,
            "pcie_tx_bytes_per_s": None if tx_mib is None else tx_mib * MIB,
            "throttle_reasons": None
            if pviol == "-"
            else (("sw_power_cap",) if float(pviol) > 0 else ()),
        }
    return out


def _shifted(text: str, seconds: int) -> str:
    """The log with every time moved on by ``seconds`` (under an hour past 10:00)."""

    def moved(m: re.Match[str]) -> str:
        s = int(m.group(1)) * 60 + int(m.group(2)) + seconds
        return f"{10 + s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"

    return re.sub(r"10:(\d\d):(\d\d)", moved, text)


def _readings(path: Path) -> dict[tuple[float, int], dict[str, object]]:
    snaps, info, _ = read_log(path)
    assert info.format == "nvidia-smi-dmon"
    return {
        (snap.timestamp, gpu.index): {name: getattr(gpu, name) for name in FIELDS}
        for snap in snaps
        for gpu in snap.gpus
    }


def test_odd_lines_are_counted_and_the_rest_read_from_their_cells(tmp_path: Path) -> None:
    path = tmp_path / "dmon_odd.log"
    path.write_text(ODD)
    snaps, _, counters = read_log(path)
    assert counters.bad_lines == len(BAD_LINES)
    assert counters.first_bad_line == 5
    assert counters.first_bad_reason == "sm: not a number: 'abc' (the rest of the row is kept)"
    assert counters.found["bad_cells"] == BAD_CELLS
    readings = _readings(path)
    for key, expected in _expected(ODD).items():
        assert readings[key] == expected
    # line 16 keeps the cells that read: its temperature, mem, clock and PCIe
    sixteen = readings[(time.mktime(time.strptime("20250115 10:00:08", "%Y%m%d %H:%M:%S")), 1)]
    assert (sixteen["power_watts"], sixteen["sm_percent"], sixteen["vram_used_bytes"]) == (
        None,
        None,
        None,
    )
    assert sixteen["temperature_c"] == 48.0 and sixteen["pcie_tx_bytes_per_s"] == 3 * MIB
    assert len(snaps) == 5  # polls of 10:00:00, :02, :06, :08 and :12
    assert len(readings) == 7


def test_a_repeated_log_reads_the_same_in_every_repeat(tmp_path: Path) -> None:
    """300 copies of the odd log, each 14 s after the one before: every copy's readings
    are the single copy's, 14 s on, and every odd line is counted again."""
    copies = 300
    path = tmp_path / "dmon_odd_repeated.log"
    path.write_text("".join(_shifted(ODD, 14 * k) for k in range(copies)))
    readings = _readings(path)
    one = tmp_path / "dmon_odd.log"
    one.write_text(ODD)
    single = _readings(one)
    for k in range(copies):
        for (stamp, gpu), values in single.items():
            assert readings[(stamp + 14 * k, gpu)] == values
    _, _, counters = read_log(path)
    assert counters.bad_lines == len(BAD_LINES) * copies
    assert counters.found["bad_cells"] == {
        label: [count * copies, first] for label, (count, first) in BAD_CELLS.items()
    }


def test_the_fixture_reads_its_cells() -> None:
    """The bench's dmon input: -o DT, the header pair printed twice, a cut line."""
    path = FIXTURES / "import" / "dmon_dt.log"
    snaps, _, counters = read_log(path)
    rows = [
        line.split()
        for line in path.read_text().splitlines()
        if not line.startswith("#") and len(line.split()) == 12
    ]
    got = {
        (s.timestamp, g.index): (g.power_watts, g.temperature_c, g.sm_percent)
        for s in snaps
        for g in s.gpus
    }
    want = {
        (time.mktime(time.strptime(f"{r[0]} {r[1]}", "%Y%m%d %H:%M:%S")), int(r[2])): (
            float(r[3]),
            float(r[4]),
            float(r[6]),
        )
        for r in rows
    }
    assert got == want
    assert counters.bad_lines == 1 and counters.first_bad_line == 11


def test_a_header_that_comes_back_brings_its_columns_back(tmp_path: Path) -> None:
    """dmon's first header, then another (`-s` changed between two runs appended to one
    file), then the first again: each values line is read by the header above it."""
    first = "# gpu    pwr  gtemp     sm    mem\n# Idx      W      C      %      %\n"
    other = "# gpu     fb   bar1\n# Idx     MB     MB\n"
    path = tmp_path / "dmon.log"
    path.write_text(
        first
        + "    0     61     40     20     10\n"
        + other
        + "    0   1024      5\n"
        + first
        + "    0     62     41     30     15\n"
    )
    snaps, _info, counters = read_log(path)
    assert counters.bad_lines == 0
    gpus = [s.gpus[0] for s in snaps]
    assert [g.sm_percent for g in gpus] == [20.0, None, 30.0]
    assert [g.power_watts for g in gpus] == [61.0, None, 62.0]
    assert gpus[1].vram_used_bytes == 1024 * 1024 * 1024
