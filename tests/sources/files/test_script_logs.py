"""Logs people's own scripts print: whitespace-aligned tables and GPUtil output
(fixtures written from the shape of such scripts' and GPUtil's output, see
tests/fixtures/import/README.md). Expected figures are counted from the fixture
text here, with regexes of their own."""

from __future__ import annotations

import re
import statistics
import subprocess
import time
from contextlib import closing
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import open_stream
from gputop_hints.streams import METRIC_VRAM, ReadCounters, StreamInfo
from tests.support.cli import run_cli
from tests.support.paths import FIXTURES as FIXTURE_ROOT

MIB = 2**20
FIXTURES = FIXTURE_ROOT / "import"
STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")


def load(name: str, **kwargs: object) -> tuple[list[Snapshot], StreamInfo, ReadCounters]:
    stream = open_stream(FIXTURES / name, **kwargs)  # type: ignore[arg-type]
    with closing(stream):
        snaps = list(stream)
    return snaps, stream.info, stream.counters


def local(y: int, mo: int, d: int, h: int, mi: int, s: int) -> float:
    return time.mktime((y, mo, d, h, mi, s, 0, 0, -1))


def lines_of(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()



def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=60)


def test_aligned_table_after_a_banner_with_units_in_cells() -> None:
    """Times of day dated from the banner (the next day after midnight; a later
    banner's date after a restart), units in every cell, the header printed again
    skipped, a damaged cell counted at its line."""
    name = "aligned_banner_units.log"
    text = lines_of(name)
    row = re.compile(r"^(\d\d):(\d\d):(\d\d)\s+(\S+)%\s+(\d+)MiB\s+(\d+)MiB\s+(\d+)C\s+([\d.]+)W$")
    expected_times: list[float] = []
    utils: list[float] = []
    used: list[int] = []
    bad_at: list[int] = []
    y = mo = day = 0
    previous_hour: int | None = None
    for number, line in enumerate(text, start=1):
        banner = STAMP.search(line)
        if line.startswith("====") and banner is not None:  # the script (re)started
            y, mo, day = (int(x) for x in banner.groups()[:3])
            previous_hour = None
        m = row.match(line)
        if m is None:
            continue
        h, mi, s = int(m[1]), int(m[2]), int(m[3])
        if h == 0 and previous_hour == 23:
            day += 1
        previous_hour = h
        expected_times.append(local(y, mo, day, h, mi, s))
        used.append(int(m[5]))
        if m[4].isdigit():
            utils.append(float(m[4]))
        else:
            bad_at.append(number)
    snaps, info, counters = load(name)
    assert info.format == "aligned-table" and info.gpu_count == 1
    assert [s.timestamp for s in snaps] == expected_times
    assert len(snaps) == len(expected_times) == 8
    sm = [s.gpus[0].sm_percent for s in snaps if s.gpus[0].sm_percent is not None]
    assert statistics.mean(sm) == statistics.mean(utils)
    assert [s.gpus[0].vram_used_bytes for s in snaps] == [u * MIB for u in used]
    assert snaps[0].gpus[0].power_watts == 210.5 and snaps[0].gpus[0].temperature_c == 65
    assert counters.found["bad_cells"] == {"GPU%": [1, bad_at[0]]}
    assert counters.first_bad_line == bad_at[0] and counters.bad_lines == 1


def test_aligned_table_without_units_two_gpus() -> None:
    """A Date Time column, a GPU column, bare numbers with units in the header."""
    name = "aligned_nounits.log"
    per_gpu: dict[int, list[tuple[float, float, int]]] = {}
    stamps: list[float] = []
    for line in lines_of(name)[1:]:
        m = STAMP.match(line)
        assert m is not None
        t = local(*(int(x) for x in m.groups()))
        gpu, util, mem, _total, _temp, _power = line[m.end() :].split()
        per_gpu.setdefault(int(gpu), []).append((t, float(util), int(mem)))
        if t not in stamps:
            stamps.append(t)
    snaps, info, counters = load(name)
    assert info.format == "aligned-table" and info.gpu_count == 2
    assert [s.timestamp for s in snaps] == stamps
    for index, rows in per_gpu.items():
        got = [g for s in snaps for g in s.gpus if g.index == index]
        assert len(got) == len(rows)
        assert statistics.mean(g.sm_percent or 0.0 for g in got) == statistics.mean(
            r[1] for r in rows
        )
        assert [g.vram_used_bytes for g in got] == [r[2] * MIB for r in rows]
        assert {g.vram_total_bytes for g in got} == {6144 * MIB}
    assert counters.bad_lines == 0


def test_aligned_table_one_space_apart_without_a_dated_banner_is_relative() -> None:
    name = "aligned_relative.log"
    rows = [
        re.match(r"^(\d\d):(\d\d):(\d\d) (\d+) (\d+) % (\d+) MB (\d+) MB$", line)
        for line in lines_of(name)[2:]
    ]
    snaps, info, _counters = load(name)
    assert info.format == "aligned-table"
    seconds = [int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3]) for m in rows if m is not None]
    assert len(seconds) == len(rows) == len(snaps)
    assert [s.timestamp for s in snaps] == seconds  # no date: seconds of the day
    assert "relative" in info.detail
    assert [s.gpus[0].sm_percent for s in snaps] == [float(m[5]) for m in rows if m]
    assert [s.gpus[0].vram_used_bytes for s in snaps] == [int(m[6]) * MIB for m in rows if m]


def _gputil_blocks(path: Path) -> tuple[list[float], dict[int, list[float]], list[int]]:
    """Block times, each GPU's loads that read, and the lines that do not read."""
    times: list[float] = []
    loads: dict[int, list[float]] = {}
    bad: list[int] = []
    gpu = -1
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        stamp = STAMP.search(line)
        if line.startswith("==="):
            assert stamp is not None
            times.append(local(*(int(x) for x in stamp.groups())))
            continue
        head = re.match(r"^(?:GPU |GPU ID: |ID: )(\d+)", line)
        if head is not None:
            gpu = int(head[1])
        load = re.search(r"Load: ([\d.]+)%$|Load: ([\d.]+)%,", line)
        if load is not None:
            loads.setdefault(gpu, []).append(float(load[1] or load[2]))
        elif "Load:" in line or ":" not in line:
            bad.append(number)
    return times, loads, bad


def test_gputil_blocks_two_gpus_with_a_damaged_block() -> None:
    name = "gputil_blocks.log"
    times, loads, bad = _gputil_blocks(FIXTURES / name)
    snaps, info, counters = load(name)
    assert info.format == "gputil" and info.gpu_count == 2
    assert [s.timestamp for s in snaps] == times
    for index, expected in loads.items():
        got = [g.sm_percent for s in snaps for g in s.gpus if g.index == index]
        assert statistics.mean(x for x in got if x is not None) == statistics.mean(expected)
    first = [g for g in snaps[0].gpus]
    assert [g.vram_used_bytes for g in first] == [812 * MIB, 4096 * MIB]
    assert {g.vram_total_bytes for g in first} == {12288 * MIB}
    assert first[0].name == "NVIDIA GeForce RTX 3060" and first[0].temperature_c == 65
    assert snaps[-1].gpus[1].vram_used_bytes == 4200 * MIB  # "4200.0MB / 12288.0MB"
    assert snaps[-1].gpus[0].temperature_c == 67  # "67.0 °C"
    assert counters.bad_lines == len(bad) == 2
    assert counters.first_bad_line == bad[0]
    assert counters.first_bad_reason is not None and "9?%" in counters.first_bad_reason


def test_gputil_memory_with_its_share_in_brackets_reads() -> None:
    """``GPU Memory: 812.0MB / 6144.0MB (13.2%)`` (a script printing GPUtil's
    memoryUsed / memoryTotal and memoryUtil): used and total read, the share after
    them is not a malformed total (995 such lines in one shared log)."""
    name = "gputil_memory_share.log"
    text = (FIXTURES / name).read_text(encoding="utf-8")
    pairs = re.findall(r"^GPU Memory: ([\d.]+)MB / ([\d.]+)MB \([\d.]+%\)$", text, re.MULTILINE)
    assert len(pairs) == text.count("=== ") == 40
    snaps, _info, counters = load(name)
    assert counters.bad_lines == 0
    assert [g.vram_used_bytes for s in snaps for g in s.gpus] == [
        round(float(used) * MIB) for used, _total in pairs
    ]
    assert {g.vram_total_bytes for s in snaps for g in s.gpus} == {6144 * MIB}


def test_gputil_report_names_the_bad_line() -> None:
    name = "gputil_blocks.log"
    _times, _loads, bad = _gputil_blocks(FIXTURES / name)
    result = cli("report", str(FIXTURES / name))
    assert result.returncode == 0, result.stderr
    assert f"2 malformed line(s) skipped, the first at line {bad[0]}: " in result.stdout
    assert "Traceback" not in result.stderr


def test_gputil_show_utilization_tables_mem_is_a_vram_share() -> None:
    """showUtilization's MEM is memoryUtil: VRAM used only with the total given;
    a damaged cell is a bad line at its number."""
    name = "gputil_table.log"
    cells: list[tuple[int, str, str]] = []
    bad: list[int] = []
    for number, line in enumerate(lines_of(name), start=1):
        m = re.match(r"^\|\s+(\d+) \|\s*(\S+)% \|\s*(\d+)% \|$", line)
        if m is not None:
            if m[2].isdigit():
                cells.append((int(m[1]), m[2], m[3]))
            else:
                bad.append(number)
    snaps, info, counters = load(name)
    assert info.format == "gputil" and METRIC_VRAM in info.missing
    assert sum(len(s.gpus) for s in snaps) == len(cells)
    gpu0 = [float(util) for gpu, util, _mem in cells if gpu == 0]
    assert [g.sm_percent for s in snaps for g in s.gpus if g.index == 0] == gpu0
    assert counters.bad_lines == 1 and counters.first_bad_line == bad[0]
    snaps, info, _counters = load(name, mapping={"vram_total": "12GiB"})
    assert METRIC_VRAM not in info.missing
    shares = [int(mem) for gpu, _util, mem in cells if gpu == 0]
    got = [g.vram_used_bytes for s in snaps for g in s.gpus if g.index == 0]
    assert got == [round(12 * 1024 * MIB * share / 100) for share in shares]
