"""Rows that repeat but for their time (an idle GPU, a process polled again) take the
earlier row's values: they read as if read afresh -- the same values, the same bad
cells counted on each, a bad time still reported at its own line."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import open_stream
from gputop_hints.streams import ReadCounters

MIB = 2**20


def load(path: Path) -> tuple[list[Snapshot], ReadCounters]:
    stream = open_stream(path)
    with closing(stream):
        snaps = list(stream)
    return snaps, stream.counters


def test_csv_rows_repeating_but_for_the_time(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    rows = ["timestamp,gpu_util,mem_used_mb"]
    rows += [f"{1_700_000_000 + k},40,1000" for k in range(5)]
    rows += [f"{1_700_000_010 + k},50,1x" for k in range(3)]  # a bad cell, kept
    rows += ["not-a-time,40,1000", "1700000020,40,1000"]  # a bad time, then fine
    path.write_text("\n".join(rows) + "\n")
    snaps, counters = load(path)
    assert [s.timestamp for s in snaps] == [
        *(1_700_000_000 + k for k in range(5)),
        *(1_700_000_010 + k for k in range(3)),
        1_700_000_020,
    ]
    assert [s.gpus[0].sm_percent for s in snaps] == [40] * 5 + [50] * 3 + [40]
    assert [s.gpus[0].vram_used_bytes for s in snaps] == [1000 * MIB] * 5 + [None] * 3 + [
        1000 * MIB
    ]
    assert snaps[0].gpus[0] is snaps[4].gpus[0]  # equal samples are shared
    assert counters.found["bad_cells"] == {"mem_used_mb": [3, 7]}
    assert counters.bad_lines == 4 and counters.first_bad_line == 7


def test_csv_gpus_alternating_share_their_samples(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    rows = ["timestamp,index,gpu_util,mem_used_mb"]
    for k in range(4):
        rows += [f"{1_700_000_000 + k},0,90,1000", f"{1_700_000_000 + k},1,0,5"]
    path.write_text("\n".join(rows) + "\n")
    snaps, counters = load(path)
    assert len(snaps) == 4 and counters.bad_lines == 0
    assert [[g.sm_percent for g in s.gpus] for s in snaps] == [[90, 0]] * 4
    assert all(s.gpus[1] is snaps[0].gpus[1] for s in snaps)


def test_pmon_processes_polled_again(tmp_path: Path) -> None:
    path = tmp_path / "pmon.log"
    lines = [
        "#Date       Time        gpu         pid  type    sm   mem   enc   dec    fb   command",
        "#YYYYMMDD   HH:MM:SS    Idx           #   C/G     %     %     %     %    MB   name",
    ]
    row = "      0       7001     C    95    40     -     -  29900   python"
    lines += [f" 20250115   10:00:0{s}{row}" for s in range(3)]
    lines.append(f" 20250115   10:00:0x{row}")  # a bad time
    path.write_text("\n".join(lines) + "\n")
    snaps, counters = load(path)
    assert [s.timestamp - snaps[0].timestamp for s in snaps] == [0, 1, 2]
    assert all(s.processes[0] is snaps[0].processes[0] for s in snaps)
    assert snaps[2].processes[0].vram_bytes == 29900 * MIB
    assert counters.bad_lines == 1 and counters.first_bad_line == 6
