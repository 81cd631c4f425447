"""nvidia-smi's own text: appended tables, watch captures and -q dumps.

Figures for the shared traces were counted from the files with grep and awk
(the commands are in each test's comment), not with the code under test.
"""

from __future__ import annotations

import re
import statistics
from datetime import datetime, timezone
from pathlib import Path

import pytest

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import FORMATS, open_stream
from gputop_hints.sources.files._datelines import parse_date
from gputop_hints.sources.files._terminal import Screen
from gputop_hints.streams import (
    METRIC_MEMORY_ACCESS,
    METRIC_PCIE,
    METRIC_PROCESSES,
    UnrecognisedFormat,
)
from tests.support.ci import IN_CI
from tests.support.logs import read_log as load
from tests.support.paths import FIXTURES as FIXTURE_ROOT
from tests.support.paths import TRACES

MIB = 2**20
FIXTURES = FIXTURE_ROOT / "import"




def utc(text: str) -> float:
    """'2018 06 24 21 32 04' -> seconds since the epoch, read as UTC (the tests' TZ)."""
    year, month, day, hour, minute, second = (int(x) for x in re.findall(r"\d+", text))
    return datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc).timestamp()


@pytest.fixture(scope="module")
def traces() -> Path:
    if not TRACES.is_dir():
        if IN_CI:
            pytest.fail(f"shared traces missing at {TRACES} (CI must provide ../shared)")
        pytest.skip(f"shared traces not found at {TRACES}")
    return TRACES


def sm_of(snaps: list[Snapshot], index: int) -> list[float]:
    values = []
    for s in snaps:
        gpu = s.gpu(index)
        assert gpu is not None and gpu.sm_percent is not None
        values.append(gpu.sm_percent)
    return values


# --- plain tables: the shared traces ----------------------------------------------


def test_checkin_384_daily_cron_with_two_broken_snapshots(traces: Path) -> None:
    # 317 tables (grep -c "NVIDIA-SMI 384"); the one at line 779 stops after GPU 0's
    # first row, the one of Dec 21 (line 4856) is cut at line 4871 and glued to the
    # next date. 679 process rows (grep -cE '^\|\s+[0-9]+\s+[0-9]+\s+C\s'), none in
    # the broken ones. GPU 0 utilization over the 315 whole tables (awk over the
    # values rows, without line 4864): mean 25.374603, peak 100; VRAM peak 12186 MiB.
    snaps, info, counters = load(traces / "nvsmi_table_checkin_384.log")
    assert info.format == "nvidia-smi-table"
    assert len(snaps) == 315 and info.gpu_count == 4
    assert counters.bad_lines == 2 and counters.first_bad_line == 779
    assert "cut short at line 787" in (counters.first_bad_reason or "")
    assert sum(len(s.processes) for s in snaps) == 679
    util = sm_of(snaps, 0)
    assert statistics.mean(util) == pytest.approx(25.374603, abs=1e-6) and max(util) == 100
    assert max(g.vram_used_bytes or 0 for s in snaps for g in s.gpus) == 12186 * MIB
    first = snaps[0]
    assert first.timestamp == utc("2018 06 24 21 32 04")
    assert first.driver_version == "384.130" and first.cuda_driver_version is None
    g0 = first.gpus[0]
    assert (g0.name, g0.temperature_c, g0.power_watts, g0.power_limit_watts) == (
        "TITAN X (Pascal)",
        60,
        75,
        250,
    )
    assert (g0.vram_used_bytes, g0.vram_total_bytes) == (11996 * MIB, 12189 * MIB)
    python = [p for p in first.processes if p.gpu_index == 0]
    assert [(p.pid, p.name, p.vram_bytes) for p in python] == [(12650, "python", 11986 * MIB)]
    assert info.interval_s == 86400  # about one a day at 01:00
    assert counters.found["fan_percent_peak"] == {"0": 85.0, "1": 67.0, "2": 68.0, "3": 73.0}
    for metric in (METRIC_MEMORY_ACCESS, METRIC_PCIE):
        assert metric in info.missing
    assert METRIC_PROCESSES not in info.missing


def test_checkin_snapshot_with_the_next_one_glued_on(traces: Path) -> None:
    lines = (traces / "nvsmi_table_checkin_384.log").read_text().splitlines()
    assert lines[4870].startswith("+---") and "Sat Dec 22 01:00:01 2018" in lines[4870]
    snaps, _, _ = load(traces / "nvsmi_table_checkin_384.log")
    stamps = [s.timestamp for s in snaps]
    assert utc("2018 12 21 01 00 02") not in stamps  # the broken one is dropped ...
    assert utc("2018 12 22 01 00 01") in stamps  # ... the glued one is read


def test_groupederag_565_separators_from_date_and_jobs_between(traces: Path) -> None:
    # 1100 "====" separators, two with no table after them: 1098 tables. 1035
    # process rows, 62 "No running processes found". awk over the values rows:
    # utilization mean 67.886157, peak 100; power mean 198.189435 W; VRAM peak 17014 MiB.
    snaps, info, counters = load(traces / "nvsmi_table_groupederag_565.log")
    assert info.format == "nvidia-smi-table"
    assert len(snaps) == 1098 and info.gpu_count == 1 and counters.bad_lines == 0
    assert sum(len(s.processes) for s in snaps) == 1035
    assert sum(1 for s in snaps if not s.processes) == 1098 - 1035
    util = sm_of(snaps, 0)
    assert statistics.mean(util) == pytest.approx(67.886157, abs=1e-6) and max(util) == 100
    power = [s.gpus[0].power_watts or 0.0 for s in snaps]
    assert statistics.mean(power) == pytest.approx(198.189435, abs=1e-6)
    assert max(s.gpus[0].vram_used_bytes or 0 for s in snaps) == 17014 * MIB
    # nvidia-smi's own 24-hour line wins over the 12-hour separator above it.
    assert snaps[0].timestamp == utc("2025 05 04 04 27 32")
    assert snaps[-1].timestamp == utc("2025 05 05 02 01 32")
    assert info.interval_s == 5
    assert snaps[0].cuda_driver_version == "12.7"


def test_ifrnet_470_names_cut_with_dots(traces: Path) -> None:
    # 4 GPUs at 92, 93, 74, 93 %: mean 88, peak 93; 4 processes of ~10.5 GB.
    snaps, info, counters = load(traces / "nvsmi_table_ifrnet_470.log")
    assert len(snaps) == 1 and info.gpu_count == 4 and counters.bad_lines == 0
    (snap,) = snaps
    util = [g.sm_percent or 0.0 for g in snap.gpus]
    assert statistics.mean(util) == 88 and max(util) == 93
    assert {g.name for g in snap.gpus} == {"Tesla V100-SXM2..."}
    assert [(p.gpu_index, p.pid, p.vram_bytes) for p in snap.processes] == [
        (0, 48602, 10481 * MIB),
        (1, 48603, 10559 * MIB),
        (2, 48604, 10481 * MIB),
        (3, 48605, 10579 * MIB),
    ]
    assert snap.processes[0].name == "...da3/envs/torch/bin/python"
    assert "no date line" not in info.detail  # it has one; just one, so no spacing
    assert "too few timestamps" in info.detail


def test_mag_545_eight_gpus_two_snapshots(traces: Path) -> None:
    # awk over the 16 values rows: utilization mean 1.3125, peak 11; VRAM peak 61245 MiB.
    snaps, info, counters = load(traces / "nvsmi_table_mag_545.log")
    assert len(snaps) == 2 and info.gpu_count == 8 and counters.bad_lines == 0
    util = [g.sm_percent or 0.0 for s in snaps for g in s.gpus]
    assert statistics.mean(util) == 1.3125 and max(util) == 11
    assert max(g.vram_used_bytes or 0 for s in snaps for g in s.gpus) == 61245 * MIB
    assert [len(s.processes) for s in snaps] == [4, 4]
    holder = [p for p in snaps[0].processes if p.gpu_index == 3]
    assert holder[0].name == ".../bzha592/.conda/envs/jax/bin/python"
    assert holder[0].vram_bytes == 61220 * MIB
    assert snaps[1].timestamp - snaps[0].timestamp == 14 == info.interval_s


def test_lisa_windows_wddm_c_plus_g_without_memory(traces: Path) -> None:
    snaps, info, counters = load(traces / "nvsmi_table_lisa_win560.log")
    assert len(snaps) == 1 and info.gpu_count == 1 and counters.bad_lines == 0
    (snap,) = snaps
    g = snap.gpus[0]
    assert (g.name, g.sm_percent, g.vram_used_bytes) == ("NVIDIA GeForce RTX 3060", 3, 1342 * MIB)
    assert len(snap.processes) == 19
    assert all(p.vram_bytes is None for p in snap.processes)  # WDDM: N/A
    assert counters.found["process_kinds"] == {"C+G": 19}
    names = [p.name for p in snap.processes]
    assert (
        "C:\\Windows\\explorer.exe" in names and "...Programs\\Microsoft VS Code\\Code.exe" in names
    )


def test_bifurcation_580_two_gpus_same_pids(traces: Path) -> None:
    snaps, info, counters = load(traces / "nvsmi_table_bifurcation_580.log")
    assert len(snaps) == 1 and info.gpu_count == 2 and counters.bad_lines == 0
    (snap,) = snaps
    assert [g.sm_percent for g in snap.gpus] == [0, 0]
    assert [g.power_watts for g in snap.gpus] == [29, 22]
    assert len(snap.processes) == 10
    assert {p.pid for p in snap.processes if p.gpu_index == 1} == {2244, 11497, 11528, 11541, 11553}
    assert counters.found["process_kinds"] == {"G": 2, "C": 8}
    xorg = next(p for p in snap.processes if p.pid == 2244)
    assert (xorg.name, xorg.vram_bytes) == ("/usr/lib/xorg/Xorg", 4 * MIB)
    assert snap.driver_version == "580.126.09" and snap.cuda_driver_version == "13.0"


# --- plain tables: hand-written variants ---------------------------------------------


def test_separators_prompts_and_a_table_cut_at_the_end() -> None:
    snaps, info, counters = load(FIXTURES / "nvsmi_table_separators.log")
    assert len(snaps) == 3 and info.gpu_count == 2
    # nvidia-smi's own line; an ISO line; a 12-hour `date` separator (8 PM = 20 h).
    assert [s.timestamp for s in snaps] == [
        utc("2026 12 01 20 06 47"),
        utc("2026 12 01 20 06 52"),
        utc("2026 12 01 20 06 57"),
    ]
    assert [s.gpus[0].sm_percent for s in snaps] == [42, 88, 100]
    assert [[(p.pid, p.gpu_index) for p in s.processes] for s in snaps] == [
        [(4242, 0)],
        [(4242, 0), (4300, 1)],
        [],
    ]
    assert counters.bad_lines == 1 and counters.first_bad_line == 81
    assert "cut short at the end of the file" in (counters.first_bad_reason or "")


def test_tables_without_dates_use_the_interval() -> None:
    snaps, info, _ = load(FIXTURES / "nvsmi_table_nodates.log")
    assert [s.timestamp for s in snaps] == [0, 1, 2]
    assert "no date line above the tables" in info.detail and "give --interval" in info.detail
    snaps, info, _counters = load(FIXTURES / "nvsmi_table_nodates.log", interval_s=5.0)
    assert [s.timestamp for s in snaps] == [0, 5, 10] and "interval 5 s (given)" in info.detail
    assert [p.vram_bytes for s in snaps for p in s.processes] == [
        987 * MIB,
        1987 * MIB,
        2987 * MIB,
    ]


def test_mig_sections_are_read_past() -> None:
    # Hand-written from NVIDIA's MIG user guide (see tests/fixtures/import/README.md).
    snaps, _info, counters = load(FIXTURES / "nvsmi_table_mig.log")
    assert len(snaps) == 1 and counters.bad_lines == 0
    (snap,) = snaps
    g = snap.gpus[0]
    assert g.sm_percent is None  # "N/A" under MIG: unknown, not 0
    assert (g.vram_used_bytes, g.vram_total_bytes) == (3310 * MIB, 40536 * MIB)
    assert [(p.pid, p.vram_bytes) for p in snap.processes] == [
        (31052, 1635 * MIB),
        (31053, 1639 * MIB),
    ]
    assert counters.found["mig_devices"] == 2


def test_a_bad_value_keeps_the_rest_of_the_snapshot(tmp_path: Path) -> None:
    text = (FIXTURES / "nvsmi_table_nodates.log").read_text()
    broken = text.replace("     10%      Default", "     1O%      Default", 1)
    assert broken != text
    path = tmp_path / "gpu.log"
    path.write_text(broken)
    snaps, _info, counters = load(path)
    assert len(snaps) == 3
    assert snaps[0].gpus[0].sm_percent is None  # only what did not read is lost
    assert snaps[0].gpus[0].power_watts == 100 and len(snaps[0].processes) == 1
    assert counters.bad_lines == 1 and "GPU 0" in (counters.first_bad_reason or "")


def test_truncated_anywhere_never_fails(tmp_path: Path) -> None:
    data = (FIXTURES / "nvsmi_table_separators.log").read_bytes()
    for cut in range(0, len(data), 97):
        path = tmp_path / "cut.log"
        path.write_bytes(data[:cut])
        try:
            snaps, _, _ = load(path)
        except UnrecognisedFormat:
            continue
        assert all(s.gpus for s in snaps)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Sun Jun 24 21:32:04 2018       ", "2018 06 24 21 32 04"),
        ("==== Sun May  4 11:57:03 PM EDT 2025 ====", "2025 05 04 23 57 03"),
        ("Sun May  4 12:05:00 AM EDT 2025", "2025 05 04 00 05 00"),
        ("Tue Dec  1 08:06:47 UTC 2026", "2026 12 01 08 06 47"),
        ("Sun  4 May 2025 23:57:03 BST", "2025 05 04 23 57 03"),
        ("2025-05-04T23:57:03Z", "2025 05 04 23 57 03"),
        ("--- 2025/05/04 23:57:03.500 ---", "2025 05 04 23 57 03"),
    ],
)
def test_date_lines(line: str, expected: str) -> None:
    stamp = parse_date(line)
    assert stamp is not None and int(stamp) == utc(expected)


# --- watch captures ------------------------------------------------------------------


def _replay_row(data: str, row: int) -> list[str]:
    """A deliberately simpler replay than the importer's: absolute moves and text only,
    one copy of ``row`` when curses has filled the last cell of the first frame
    (autowrap back on) and each time the cursor is parked at 24;80."""
    grid = [[" "] * 80 for _ in range(24)]
    r = c = 0
    rows: list[str] = []
    token = re.compile(
        r"\x1b\[(\d+);(\d+)H|\x1b\[(\d+)d|\x1b\[(\d+)G|(\x1b\[\?7h)|\x1b\[[0-9;?]*[A-Za-z]"
        r"|\x1b[()][A-Z0-9]"
        r"|(\r)|(\n)|([^\x1b\r\n]+)"
    )
    for m in token.finditer(data):
        if m.group(1):
            r, c = int(m.group(1)) - 1, int(m.group(2)) - 1
            if (r, c) == (23, 79):
                rows.append("".join(grid[row - 1]))
        elif m.group(3):
            r = int(m.group(3)) - 1
        elif m.group(4):
            c = int(m.group(4)) - 1
        elif m.group(5):
            if not rows and grid[23][79] != " ":
                rows.append("".join(grid[row - 1]))
        elif m.group(6):
            c = 0
        elif m.group(7):
            r += 1
        elif m.group(8):
            for ch in m.group(8):
                if c < 80:
                    grid[r][c] = ch
                    c += 1
    return rows


def test_hirataken_watch_capture(traces: Path) -> None:
    path = traces / "nvsmi_watch_hirataken_570.log"
    data = path.read_bytes().decode()
    assert data.count("\x1b[24;80H") == 1354  # 1354 parked redraws after the first frame
    values = _replay_row(data, 20)
    util = [int(row[72:78].split("%")[0]) for row in values]
    power = [int(row[28:34].strip().rstrip("W")) for row in values]
    snaps, info, counters = load(path)
    assert info.format == "nvidia-smi-watch"
    assert len(snaps) == 1355 and info.gpu_count == 1
    assert counters.found["frames"] == 1355 and counters.found["incomplete_frames"] == 0
    assert counters.found["noise_characters"] == 1  # the stray "H" after frame 1161's "0"
    got = sm_of(snaps, 0)
    assert statistics.mean(got) == pytest.approx(statistics.mean(util)) == pytest.approx(27.397786)
    assert max(got) == max(util) == 99
    got_power = [s.gpus[0].power_watts for s in snaps]
    assert got_power == power and max(power) == 387
    assert snaps[0].timestamp == utc("2025 11 22 11 42 52")
    assert snaps[0].gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert snaps[0].gpus[0].vram_total_bytes == 81559 * MIB
    assert METRIC_PROCESSES in info.missing  # the Processes box is below row 24
    assert "80x24 terminal" in info.detail and info.interval_s == 2


def test_watch_capture_cut_mid_redraw(tmp_path: Path, traces: Path) -> None:
    data = (traces / "nvsmi_watch_hirataken_570.log").read_bytes()
    first_park = data.index(b"\x1b[24;80H", 3000)
    path = tmp_path / "watch.log"
    path.write_bytes(data[: first_park + 3000])
    snaps, _info, counters = load(path)
    frames = counters.found["frames"]
    assert isinstance(frames, int) and len(snaps) == frames - 1
    assert counters.found["incomplete_frames"] == 1
    assert "cut short at the end" in (counters.first_bad_reason or "")


def test_screen_keeps_the_bottom_right_cell_from_scrolling() -> None:
    screen = Screen(3, 5)
    # Moving into the corner ends a redraw; writing there with autowrap on must not
    # scroll, so the next character (damage) is dropped.
    frames = list(screen.feed("\x1b[2J\x1b[1;1Habc\x1b[3;5HXH\x1b[3;5H"))
    assert frames == [["abc", "", ""], ["abc", "", "    X"]]
    assert screen.noise == 1
    frames = list(screen.feed("\x1b[?7l\x1b[3;5HY"))  # curses fills the last cell: a redraw ends
    assert frames == [["abc", "", "    Y"]]


# --- nvidia-smi -q --------------------------------------------------------------------


def test_kanmammote_query_dump(traces: Path) -> None:
    snaps, info, counters = load(traces / "nvsmi_q_kanmammote_570.log")
    assert info.format == "nvidia-smi-query" and counters.bad_lines == 0
    assert len(snaps) == 1 and info.gpu_count == 1
    (snap,) = snaps
    g = snap.gpus[0]
    assert (g.name, g.uuid) == ("NVIDIA A40", "GPU-4dedf221-2c6d-da43-e5fc-01d46ed4ac0d")
    assert (g.sm_percent, g.memory_access_percent) == (0, 0)
    assert (g.vram_used_bytes, g.vram_total_bytes) == (0, 46068 * MIB)
    assert (g.pcie_generation, g.pcie_width) == (1, 16)
    assert (g.pcie_tx_bytes_per_s, g.pcie_rx_bytes_per_s) == (500 * 1024, 400 * 1024)
    assert (g.sm_clock_mhz, g.max_sm_clock_mhz) == (210, 1740)
    assert g.throttle_reasons == ("gpu_idle",)
    assert (g.power_watts, g.power_limit_watts, g.temperature_c) == (21.31, 300, 23)
    assert snap.processes == ()  # "Processes : None"
    assert snap.timestamp == utc("2025 10 10 06 07 47")
    assert counters.found["perf_states"] == {"0": {"P8": 1}}


def test_query_dumps_appended_with_processes_and_a_cut_one() -> None:
    snaps, info, counters = load(FIXTURES / "nvsmi_q_two_dumps.log")
    assert len(snaps) == 2 and info.interval_s == 5
    assert [s.gpus[0].sm_percent for s in snaps] == [92, 97]
    assert [s.gpus[0].power_watts for s in snaps] == [195.5, 296.25]
    assert [s.gpus[0].throttle_reasons for s in snaps] == [(), ("sw_power_cap",)]
    assert [(p.pid, p.vram_bytes) for s in snaps for p in s.processes] == [
        (48602, 10481 * MIB),
        (48602, 10485 * MIB),
    ]
    assert counters.bad_lines == 1 and "cut short" in (counters.first_bad_reason or "")


def test_a_filtered_query_log_reads_what_it_holds() -> None:
    """``nvidia-smi -q -d UTILIZATION -l 1``: only the chosen sections, no Product Name
    and no Processes in a GPU block -- whole as it is (it was refused as "cut short").
    A dump killed mid-print (fewer GPU blocks than Attached GPUs) is still a bad record."""
    path = FIXTURES / "nvsmi_q_d_utilization.log"
    text = path.read_text()
    # Counted from the file: each dump's "Gpu : N %" and "Memory : N %" lines, in order.
    gpu = [int(n) for n in re.findall(r"^        Gpu +: (\d+) %", text, re.MULTILINE)]
    mem = [int(n) for n in re.findall(r"^        Memory +: (\d+) %", text, re.MULTILINE)]
    snaps, info, counters = load(path)
    assert info.format == "nvidia-smi-query" and info.interval_s == 1
    assert len(snaps) == 4 and len(gpu) == 9  # 4 whole dumps of 2 GPUs, and the cut one
    assert [g.sm_percent for s in snaps for g in s.gpus] == gpu[:8]
    assert [g.memory_access_percent for s in snaps for g in s.gpus] == mem[:8]
    assert all(g.vram_used_bytes is None for s in snaps for g in s.gpus)  # not in -d UTILIZATION
    assert counters.bad_lines == 1 and "cut short (1 GPU block" in (counters.first_bad_reason or "")


def test_formats_are_listed_and_forced() -> None:
    for name in ("nvidia-smi-table", "nvidia-smi-watch", "nvidia-smi-query"):
        assert name in FORMATS
    with pytest.raises(UnrecognisedFormat, match=r"nvidia-smi-table: no '\| NVIDIA-SMI"):
        open_stream(FIXTURES / "nvsmi_full_2gpu.csv", format="nvidia-smi-table")
    with pytest.raises(UnrecognisedFormat) as err:
        open_stream(FIXTURES / "generic_unknown_columns.csv")
    for name in ("nvidia-smi-table", "nvidia-smi-watch", "nvidia-smi-query"):
        assert name in str(err.value)
