"""``watch nvidia-smi`` captures whose later frames rewrite only some cells.

The reader takes in only the rows a redraw changed (a date line moves the time, a
values row replaces its GPU) and reads the whole table again for anything else.
These captures are built here the way curses writes them -- the alternate screen,
one full frame, then cursor moves and the cells that changed, the cursor parked in
the bottom-right corner at the end of each redraw -- on an 80-column screen, so
nvidia-smi's 91-character lines wrap onto two rows as in a real capture. Every
expected figure is the value written into the frame, not what the reader says.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.outputs.report import build_report
from gputop_hints.sources.files import open_stream
from gputop_hints.streams import ReadCounters

MIB = 2**20
COLS, ROWS = 80, 60
START = "\x1b[?1049h\x1b[1;60r\x1b(B\x1b[m\x1b[4l\x1b[?7h\x1b[H\x1b[2J"
PARK = f"\x1b[{ROWS};{COLS}H"


@dataclass(frozen=True)
class Gpu:
    temp: int = 32
    power: str = "71"
    used: int = 0
    util: int = 0
    name: str = "NVIDIA H100 80GB HBM3"


@dataclass(frozen=True)
class Proc:
    gpu: int
    pid: int
    mib: int
    name: str = "python"


def _bar(cells: Sequence[str]) -> str:
    return "|" + "|".join(cells) + "|"


def _gpu_lines(index: int, gpu: Gpu) -> list[str]:
    name = f"   {index}  {gpu.name}".ljust(35) + "On  "
    bus = f"   00000000:{7 + index:02X}:00.0 Off "
    power = gpu.power if gpu.power == "N/A" else gpu.power + "W"
    right = f"{power} /  700W "
    left = f" N/A   {gpu.temp}C    P0"
    values = [
        left.ljust(41 - len(right)) + right,
        f"{gpu.used}MiB /  81559MiB ".rjust(24),
        f"{gpu.util}%      Default ".rjust(22),
    ]
    return [
        _bar([name.ljust(41), bus.rjust(24), "0 ".rjust(22)]),
        _bar(values),
        _bar([" " * 41, " " * 24, "Disabled ".rjust(22)]),
        "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+",
    ]


WIDE = "+" + "-" * 89 + "+"
HEAD = f"""\
{WIDE}
| NVIDIA-SMI 570.148.08             Driver Version: 570.148.08     CUDA Version: 12.8     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
"""
PROCESSES_HEAD = f"""
{WIDE}
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
"""


def table(gpus: Sequence[Gpu], procs: Sequence[Proc] = ()) -> list[str]:
    """nvidia-smi 570's table for ``gpus`` and ``procs`` (91 characters a line)."""
    lines = HEAD.splitlines()
    for index, gpu in enumerate(gpus):
        lines += _gpu_lines(index, gpu)
    lines += PROCESSES_HEAD.splitlines()
    if not procs:
        lines.append("|  No running processes found".ljust(90) + "|")
    for p in procs:
        row = f"|    {p.gpu}   N/A  N/A        {p.pid:>7}      C   {p.name}"
        lines.append(row.ljust(80) + f"{p.mib}MiB".rjust(9) + " |")
    lines.append(WIDE)
    assert all(len(line) in (0, 91) for line in lines)
    return lines


def ctime(stamp: float) -> str:
    """``Sat Nov 22 11:42:52 2025``, as nvidia-smi and watch print the time (UTC here)."""
    return time.strftime("%a %b %e %H:%M:%S %Y", time.gmtime(stamp))


def at(text: str) -> float:
    """'2025-11-22 11:42:52' (UTC, the tests' time zone) -> seconds since the epoch."""
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%d %H:%M:%S")))


def screen(stamp: float, lines: Sequence[str], *, header: float | None = None) -> list[str]:
    """The 80 x 60 screen watch shows: its title line with the time (``header``, else
    ``stamp``), a blank row, nvidia-smi's date line, and its lines cut at 80 columns."""
    clock = ctime(stamp if header is None else header)
    title = "Every 2.0s: nvidia-smi".ljust(40) + "node-1: " + clock
    rows = [title, "", ctime(stamp)]
    for line in lines:
        rows += [line[:COLS], line[COLS:]] if len(line) > COLS else [line]
    assert len(rows) <= ROWS - 1
    return [r.ljust(COLS) for r in rows + [""] * (ROWS - len(rows))]


def full(rows: Sequence[str]) -> str:
    """A whole redraw: every non-blank row written at its place."""
    return "".join(f"\x1b[{r};1H{text.rstrip()}" for r, text in enumerate(rows, 1) if text.strip())


def diff(old: Sequence[str], new: Sequence[str]) -> str:
    """What curses sends to turn ``old`` into ``new``: per run of changed cells (with
    the few same ones between them), a move to it (row and column for the row's first,
    the column alone after) and its text."""
    out = []
    for r, (a, b) in enumerate(zip(old, new, strict=True), start=1):
        first = True
        c = 0
        while c < COLS:
            if a[c] == b[c]:
                c += 1
                continue
            end = c + 1  # the changed cells, and up to 3 same ones between them
            while end < COLS and a[end : end + 4] != b[end : end + 4]:
                end += 1
            while a[end - 1] == b[end - 1]:
                end -= 1
            out.append(f"\x1b[{r};{c + 1}H" if first else f"\x1b[{c + 1}G")
            out.append(b[c:end])
            first = False
            c = end
    return "".join(out)


def capture(screens: Sequence[list[str]], *, breaks: Sequence[int] = ()) -> str:
    """The capture of these screens: the first drawn whole, each later one as the
    cells that changed; at the frames numbered in ``breaks`` (from 0) a terminal
    reset (ESC c) and a whole redraw instead."""
    data = [START, full(screens[0]), PARK]
    for i in range(1, len(screens)):
        if i in breaks:
            data += ["\x1bc", START, full(screens[i]), PARK]
        else:
            data += [diff(screens[i - 1], screens[i]), PARK]
    return "".join(data)


def load(tmp_path: Path, data: str) -> tuple[list[Snapshot], ReadCounters]:
    path = tmp_path / "watch.log"
    path.write_bytes(data.encode())
    stream = open_stream(path)
    with closing(stream):
        snaps = list(stream)
    assert stream.info.format == "nvidia-smi-watch"
    return snaps, stream.counters


def column(snaps: Sequence[Snapshot], index: int, field: str) -> list[object]:
    return [getattr(next(g for g in s.gpus if g.index == index), field) for s in snaps]


T0 = at("2025-11-22 11:42:52")
TWO = [Gpu(temp=32, power="71", used=0, util=0), Gpu(temp=40, power="120", used=5000, util=35)]


def assert_frames_read(snaps: Sequence[Snapshot], frames: Sequence[Sequence[Gpu]]) -> None:
    """Each frame's GPUs 0 and 1 read with the values it drew, one snapshot a frame."""
    assert [s.timestamp for s in snaps] == [T0 + 2 * i for i in range(len(frames))]
    for index in (0, 1):
        gpus = [f[index] for f in frames]
        assert column(snaps, index, "sm_percent") == [g.util for g in gpus]
        assert column(snaps, index, "vram_used_bytes") == [g.used * MIB for g in gpus]
        assert column(snaps, index, "power_watts") == [float(g.power) for g in gpus]
        assert column(snaps, index, "temperature_c") == [g.temp for g in gpus]


def test_a_clock_only_redraw_moves_the_time_and_keeps_the_values(tmp_path: Path) -> None:
    stamps = [T0 + 2 * i for i in range(6)]
    screens = [screen(t, table(TWO)) for t in stamps]
    data = capture(screens)
    # Only the clocks change: the later redraws write in rows 1 and 3 alone.
    later = data[data.index(PARK) :]
    assert set(re.findall(r"\x1b\[(\d+);\d+H", later)) == {"1", "3", str(ROWS)}
    snaps, counters = load(tmp_path, data)
    assert [s.timestamp for s in snaps] == stamps
    assert counters.found["frames"] == 6 and counters.found["incomplete_frames"] == 0
    for index, gpu in enumerate(TWO):
        assert column(snaps, index, "sm_percent") == [gpu.util] * 6
        assert column(snaps, index, "vram_used_bytes") == [gpu.used * MIB] * 6
        assert column(snaps, index, "power_watts") == [float(gpu.power)] * 6
        assert column(snaps, index, "temperature_c") == [gpu.temp] * 6
    assert [len(s.processes) for s in snaps] == [0] * 6


def test_the_time_is_nvidia_smis_own_date_line_not_watchs_title(tmp_path: Path) -> None:
    # watch's title clock runs on while nvidia-smi's own line (the table's) stays.
    screens = [screen(T0, table(TWO), header=T0 + i) for i in range(3)]
    screens.append(screen(T0 + 10, table(TWO), header=T0 + 3))
    snaps, _ = load(tmp_path, capture(screens))
    assert [s.timestamp for s in snaps] == [T0, T0, T0, T0 + 10]


def test_one_gpus_cell_rewritten_in_place_changes_that_gpu_only(tmp_path: Path) -> None:
    g0, g1 = TWO
    frames = [
        [g0, g1],
        [g0, replace(g1, util=87)],
        [g0, replace(g1, util=87, used=65432)],
        [replace(g0, power="402"), replace(g1, util=87, used=65432)],
        [replace(g0, power="402", temp=55), replace(g1, util=100, used=65432)],
        [replace(g0, util=9), replace(g1, util=3, used=123, power="99")],
    ]
    screens = [screen(T0 + 2 * i, table(gpus)) for i, gpus in enumerate(frames)]
    data = capture(screens)
    # The values rows are rewritten in place: never a whole redraw after the first.
    assert data.count("GPU-Util") == 1
    snaps, counters = load(tmp_path, data)
    assert counters.bad_lines == 0 and len(snaps) == len(frames)
    assert_frames_read(snaps, frames)
    for index in (0, 1):
        assert column(snaps, index, "vram_total_bytes") == [81559 * MIB] * len(frames)
        assert column(snaps, index, "name") == ["NVIDIA H100 80GB HBM3"] * len(frames)
    assert [[g.index for g in s.gpus] for s in snaps] == [[0, 1]] * len(frames)


def test_a_redraw_that_changes_the_tables_shape_reads_it_again(tmp_path: Path) -> None:
    g0, g1 = TWO
    frames: list[tuple[list[Gpu], list[Proc]]] = [
        ([g0, g1], []),
        # A process row where "No running processes found" was: same rows, new kind.
        ([g0, replace(g1, util=50)], [Proc(1, 4242, 1000)]),
        # A second process: the box grows by a line, blank rows get its border.
        ([replace(g0, util=20), replace(g1, util=60)], [Proc(0, 777, 2048), Proc(1, 4242, 1000)]),
        # A values row that no longer reads in one match: the power is N/A.
        ([replace(g0, util=21, power="N/A"), g1], [Proc(0, 777, 2048)]),
        # ... and back to numbers, while the processes go away.
        ([replace(g0, util=22, power="300"), replace(g1, util=61)], []),
        # A process row's memory changes in place.
        ([g0, g1], [Proc(1, 4242, 1000)]),
        ([g0, g1], [Proc(1, 4242, 3000)]),
    ]
    screens = [screen(T0 + 2 * i, table(*f)) for i, f in enumerate(frames)]
    snaps, counters = load(tmp_path, capture(screens))
    assert counters.bad_lines == 0 and len(snaps) == len(frames)
    assert [s.timestamp for s in snaps] == [T0 + 2 * i for i in range(len(frames))]
    for index in (0, 1):
        gpus = [f[0][index] for f in frames]
        assert column(snaps, index, "sm_percent") == [g.util for g in gpus]
        power = [None if g.power == "N/A" else float(g.power) for g in gpus]
        assert column(snaps, index, "power_watts") == power
    got = [[(p.gpu_index, p.pid, p.vram_bytes) for p in s.processes] for s in snaps]
    assert got == [[(p.gpu, p.pid, p.mib * MIB) for p in f[1]] for f in frames]


def test_a_gpu_leaving_the_table_is_read_again(tmp_path: Path) -> None:
    g0, g1 = TWO
    frames = [[g0, g1], [g0], [g0, replace(g1, util=77)], [replace(g0, util=5), g1]]
    screens = [screen(T0 + 2 * i, table(f)) for i, f in enumerate(frames)]
    snaps, counters = load(tmp_path, capture(screens))
    assert counters.bad_lines == 0
    assert [[g.index for g in s.gpus] for s in snaps] == [[0, 1], [0], [0, 1], [0, 1]]
    assert [[g.sm_percent for g in s.gpus] for s in snaps] == [[0, 35], [0], [0, 77], [5, 35]]


def test_seconds_only_redraws_across_minute_hour_and_day_rollovers(tmp_path: Path) -> None:
    texts = [
        "2025-11-22 11:42:55",
        "2025-11-22 11:42:57",
        "2025-11-22 11:42:59",
        "2025-11-22 11:43:01",  # the minute's digits change too
        "2025-11-22 11:43:03",  # seconds only again, from the new minute
        "2025-11-22 11:43:13",  # both digits of the seconds
        "2025-11-22 11:59:58",
        "2025-11-22 12:00:00",  # the hour
        "2025-11-22 12:00:02",
        "2025-11-22 23:59:59",
        "2025-11-23 00:00:01",  # the day (and its name)
        "2025-11-23 00:00:03",
        "2025-11-30 23:59:59",
        "2025-12-01 00:00:01",  # the month: " 1" is a space-padded day
        "2025-12-01 00:00:09",
        "2025-12-31 23:59:58",
        "2026-01-01 00:00:00",  # the year
        "2026-01-01 00:00:02",
    ]
    stamps = [at(t) for t in texts]
    screens = [screen(t, table(TWO)) for t in stamps]
    data = capture(screens)
    assert "\x1b[3;19H7" in data and "\x1b[3;16H3:01" in data  # as the 570 trace writes them
    snaps, _ = load(tmp_path, data)
    assert [s.timestamp for s in snaps] == stamps
    assert column(snaps, 1, "sm_percent") == [35] * len(texts)


def test_a_terminal_reset_and_a_whole_redraw(tmp_path: Path) -> None:
    g0, g1 = TWO
    frames = [
        [g0, g1],
        [g0, replace(g1, util=40)],
        [replace(g0, util=90), replace(g1, util=41)],  # after ESC c
        [replace(g0, util=91), replace(g1, util=41)],
        [replace(g0, util=92)],  # after ESC c, one GPU
        [replace(g0, util=93)],
    ]
    stamps = [T0 + 2 * i for i in range(len(frames))]
    screens = [screen(t, table(f)) for t, f in zip(stamps, frames, strict=True)]
    data = capture(screens, breaks=(2, 4))
    assert data.count("\x1bc") == 2 and data.count("GPU-Util") == 3
    snaps, counters = load(tmp_path, data)
    assert counters.found["frames"] == len(frames) and counters.bad_lines == 0
    assert [s.timestamp for s in snaps] == stamps
    expected = [[g.util for g in f] for f in frames]
    assert [[g.sm_percent for g in s.gpus] for s in snaps] == expected


def test_a_reset_without_a_redraw_then_a_redraw(tmp_path: Path) -> None:
    # ESC c clears the screen; the next redraw writes only part of it (the clock and
    # one value): the table is gone, so that frame is incomplete; then a whole one.
    g0, g1 = TWO
    first = screen(T0, table(TWO))
    later = screen(T0 + 4, table([g0, replace(g1, util=66)]))
    data = START + full(first) + PARK
    data += "\x1bc" + START + "\x1b[3;1H" + ctime(T0 + 2) + PARK
    data += full(later) + PARK
    snaps, counters = load(tmp_path, data)
    assert counters.found["frames"] == 3 and counters.found["incomplete_frames"] == 1
    assert [s.timestamp for s in snaps] == [T0, T0 + 4]
    assert [[g.sm_percent for g in s.gpus] for s in snaps] == [[0, 35], [0, 66]]


def test_a_clock_jump_that_keeps_all_but_the_seconds_and_the_year(tmp_path: Path) -> None:
    # Nov 22 is a Saturday in 2025 and in 2031: only the seconds and the year differ.
    stamps = [T0, T0 + 2, at("2031-11-22 11:42:56"), at("2031-11-22 11:42:58")]
    screens = [screen(t, table(TWO)) for t in stamps]
    assert [r for r in range(ROWS) if screens[1][r] != screens[2][r]] == [0, 2]
    snaps, _ = load(tmp_path, capture(screens))
    assert [s.timestamp for s in snaps] == stamps


def test_a_date_line_that_stops_and_starts_reading(tmp_path: Path) -> None:
    # nvidia-smi's own line is the table's time; where it does not read as a date,
    # the table's time is watch's title clock (the last date line above the table).
    stamps = [T0 + 2 * i for i in range(5)]
    titles = [t + 1 for t in stamps]  # watch read its clock a second later
    screens = [screen(t, table(TWO), header=h) for t, h in zip(stamps, titles, strict=True)]
    for i in (1, 2, 4):
        screens[i][2] = "Sat Nov 22 11:4".ljust(COLS)  # cut short in the capture
    snaps, counters = load(tmp_path, capture(screens))
    assert counters.bad_lines == 0
    expected = [stamps[0], titles[1], titles[2], stamps[3], titles[4]]
    assert [s.timestamp for s in snaps] == expected


def test_a_damaged_continuation_row_of_a_values_row(tmp_path: Path) -> None:
    # The second screen row of GPU 1's values line turns into a row of its own
    # ("| x |"): the line is cut before its GPU-Util cell, so that frame's table is
    # not whole, while the next frame, repaired, is.
    screens = [screen(T0 + 2 * i, table(TWO)) for i in range(3)]
    row = next(r for r in range(ROWS) if screens[0][r].startswith("| N/A   40C")) + 1
    assert screens[0][row].strip() == "Default |"
    screens[1][row] = "| x |".ljust(COLS)
    snaps, counters = load(tmp_path, capture(screens))
    assert counters.found["frames"] == 3 and counters.found["incomplete_frames"] == 1
    assert [s.timestamp for s in snaps] == [T0, T0 + 4]


def test_a_reset_clears_rows_the_next_redraw_leaves_blank(tmp_path: Path) -> None:
    # A stray date in the blank row between the GPU box and the Processes box cuts the
    # first frame's table short; after ESC c (which blanks the screen: no ESC [2J
    # here) the whole redraw leaves that row blank, so the second frame's table is whole.
    g0, g1 = TWO
    first = screen(T0, table(TWO))
    blank = next(r for r in range(3, ROWS) if not first[r].strip())
    assert first[blank + 3].startswith("| Processes:")
    first[blank] = ctime(T0).ljust(COLS)
    later = screen(T0 + 2, table([replace(g0, util=12), replace(g1, util=34)]))
    data = START + full(first) + PARK + "\x1bc" + full(later) + PARK
    snaps, counters = load(tmp_path, data)
    assert counters.found["frames"] == 2 and counters.found["incomplete_frames"] == 1
    assert [s.timestamp for s in snaps] == [T0 + 2]
    assert [[g.sm_percent for g in s.gpus] for s in snaps] == [[12, 34]]


def test_values_that_change_after_a_run_of_clock_only_redraws_are_read(tmp_path: Path) -> None:
    # Clock-only redraws hand the last GPUs on (same readings, new time); the first
    # redraw that writes a value ends the run, and going back to the first values
    # later is read as such, not as the run before.
    g0, g1 = TWO
    busy = replace(g1, util=91, used=70000, power="650", temp=71)
    frames = [[g0, g1]] * 4 + [[g0, busy]] * 3 + [[g0, g1]] * 3 + [[g0, busy]]
    screens = [screen(T0 + 2 * i, table(gpus)) for i, gpus in enumerate(frames)]
    data = capture(screens)
    assert data.count("GPU-Util") == 1  # never a whole redraw after the first
    snaps, counters = load(tmp_path, data)
    assert counters.bad_lines == 0
    assert_frames_read(snaps, frames)
    # Every frame counts its GPUs' performance state, a run of clock-only ones too.
    assert counters.found["perf_states"] == {"0": {"P0": len(frames)}, "1": {"P0": len(frames)}}
    # The report counts each tick of a run of unchanged readings.
    with closing(open_stream(tmp_path / "watch.log")) as stream:
        report = build_report(stream, hint_stride=1)
    stats = {g.index: g for g in report.gpus}
    assert [stats[i].ticks for i in (0, 1)] == [len(frames)] * 2
    utils = [f[1].util for f in frames]
    assert stats[1].sm.mean == sum(utils) / len(utils)
    assert stats[1].sm.peak == 91 and stats[0].sm.peak == g0.util
    assert stats[1].vram_peak_bytes == 70000 * MIB
