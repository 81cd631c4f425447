"""Date lines between a log's rows (``date; nvidia-smi --query-gpu=... --format=csv``
in a loop): each poll's rows take the time of the date line above them. Expected
figures are read from the fixtures here with regexes and ``time.strptime``."""

from __future__ import annotations

import calendar
import re
import time
from pathlib import Path

import pytest

from gputop_hints.sources.files import UnrecognisedFormat, open_stream
from tests.support.logs import read_log
from tests.support.paths import FIXTURES

MIB = 2**20
NOHEADER = FIXTURES / "import" / "date_lines_noheader.log"
HEADER = FIXTURES / "import" / "date_lines_csv_header.log"
_ROW3 = re.compile(r"^(\d+) %, (\d+) %, ([\d.]+) W$")


def _polls(path: Path, date_format: str, utc: bool) -> list[tuple[float, list[str]]]:
    """(time of each date line, the lines under it)."""
    polls: list[tuple[float, list[str]]] = []
    for line in path.read_text().splitlines():
        try:
            parsed = time.strptime(line.replace("  ", " "), date_format)
        except ValueError:
            polls[-1][1].append(line)
            continue
        polls.append((calendar.timegm(parsed) if utc else time.mktime(parsed), []))
    return polls


def test_rows_under_date_lines_take_their_time_and_their_place() -> None:
    polls = _polls(NOHEADER, "%Y-%m-%d %H:%M:%S", utc=False)
    whole = [(t, [_ROW3.match(r) for r in rows]) for t, rows in polls]
    full = [(t, ms) for t, ms in whole if all(ms) and len(ms) == 2]
    assert len(full) == len(polls) - 1  # one poll has a row cut short

    snaps, info, counters = read_log(NOHEADER)

    assert info.format == "nvidia-smi-csv"
    assert "each row timed by the date line above it" in info.detail
    assert info.gpu_count == 2
    # The poll with a cut row is left out whole: its other row cannot be placed.
    assert [s.timestamp for s in snaps] == [t for t, _ in full]
    for snap, (_t, matches) in zip(snaps, full, strict=True):
        assert [
            (g.index, g.sm_percent, g.memory_access_percent, g.power_watts) for g in snap.gpus
        ] == [
            (i, float(m.group(1)), float(m.group(2)), float(m.group(3)))
            for i, m in enumerate(matches)
            if m
        ]
    assert counters.bad_lines == 2  # the cut row, and the short poll it left
    assert counters.first_bad_reason == "expected 4 fields, found 3"
    cut = next(
        n
        for n, line in enumerate(NOHEADER.read_text().splitlines(), start=1)
        if line.count(",") == 1
    )
    assert counters.first_bad_line == cut


def test_a_header_repeated_under_each_date_line() -> None:
    polls = _polls(HEADER, "%a %b %d %H:%M:%S UTC %Y", utc=True)
    snaps, info, counters = read_log(HEADER)

    assert counters.bad_lines == 0
    assert [s.timestamp for s in snaps] == [t for t, _ in polls]
    for snap, (_t, rows) in zip(snaps, polls, strict=True):
        values = [re.findall(r"\d+", r) for r in rows[1:]]  # under the header
        assert [
            (g.index, g.sm_percent, g.vram_used_bytes, g.vram_total_bytes) for g in snap.gpus
        ] == [(int(i), float(u), int(used) * MIB, int(total) * MIB) for i, u, used, total in values]
    assert info.interval_s == 5.0


def test_map_column_numbers_are_the_files_own(tmp_path: Path) -> None:
    path = tmp_path / "gpu.log"
    lines = []
    for k in range(4):
        lines += [
            f"2024-12-04 10:00:0{k}",
            f"0, {90 + k}, {1000 + k}, 81559",
            f"1, {k}, 500, 81559",
        ]
    path.write_text("\n".join(lines) + "\n")

    with pytest.raises(UnrecognisedFormat) as caught:
        open_stream(path)  # 1000-ish MiB or MHz? not guessed
    assert "date lines between the rows" in str(caught.value)

    stream = open_stream(path, mapping={"gpu": "1", "sm": "2", "vram_used": "3", "vram_total": "4"})
    snaps = list(stream)
    stream.close()
    assert [[(g.index, g.sm_percent, g.vram_used_bytes) for g in s.gpus] for s in snaps] == [
        [(0, 90.0 + k, (1000 + k) * MIB), (1, float(k), 500 * MIB)] for k in range(4)
    ]


def test_a_table_log_with_date_lines_is_still_read_as_tables() -> None:
    # `date; nvidia-smi` loops: the table reader takes them as they are, first.
    table = FIXTURES / "import" / "nvsmi_table_separators.log"
    _snaps, info, _counters = read_log(table)
    assert info.format == "nvidia-smi-table"
    assert "date line above it" not in info.detail
