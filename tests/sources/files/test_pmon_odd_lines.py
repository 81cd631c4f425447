"""pmon's quick paths (its repeated header lines known by their text, a poll's time
read once a minute) read every line as before: processes checked against the cells
split apart here, odd lines counted, and a log of the same lines repeated reads the
same in every repeat."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.support.logs import read_log
from tests.support.paths import FIXTURES

HEADER = "#Date  Time  gpu  pid  type  sm  mem  enc  dec  jpg  ofa  fb  command"
UNITS = "#YYYYMMDD  HH:MM:SS  Idx  #  C/G  %  %  %  %  %  %  MB  name"
ODD = f"""\
{HEADER}
{UNITS}
 20250115  10:00:00  0  7002  C  -  -  -  -  -  -  19990  python
 20250115  10:00:00  1  7001  C  95  40  -  -  -  -  29900  python
 20250115  10:00:01  0  7002  C  -  -  -  -  -  -  19990  python
 20250115  10:00:01  1  7001  C  97  41  -  -  -  -  29900  python
 20250115  10:00:02  0  -  -  -  -  -  -  -  -  -  -
 20250115  10:00:02  1  7001  C  9x  41  -  -  -  -  29900  python
 20250115  10:00:03  0  7002  C  -  -  -  -  -  -  19990  python  train.py --lr 3
 20250115  10:00:03  1  7001  C  97  41  -  -  -  -  N/A  python
 20250115  10:00:04  1  70x1  C  97  41
{HEADER}
{UNITS}

 20250115  10:00:05  1  7001  C  97  41  -  -  -  -  [Not Supported]  python
 20250115  10:00:05  0  7002  C  101  41  -  -  -  -  100  python
 2025011x  10:00:06  0  7002  C  10  41  -  -  -  -  100  python
 20250115  10:0x:06  0  7002  C  10  41  -  -  -  -  100  python
 20250115  10:00:06  y  7002  C  10  41  -  -  -  -  100  python
{HEADER}
 20250115  10:00:07  0  7002  C  -  -  -  -  -  -  19990  python
"""
BAD_LINES = [8, 11, 15, 16, 17, 18, 19]
"""Counted by hand: SM '9x' (8), a short row (11), '[Not Supported]' as fb (15), SM
over 100 % (16), a date, a time and a GPU that do not read (17-19)."""
KEPT = [3, 4, 5, 6, 7, 9, 10, 21]
MIB = 2**20


def _number(cell: str) -> float | None:
    return None if cell in ("-", "N/A") else float(cell)


def _expected(text: str, kept: list[int]) -> dict[float, list[tuple[object, ...]]]:
    """Poll time -> its processes (pid, GPU, SM %, mem %, VRAM, name) from the cells of
    the ``kept`` lines."""
    out: dict[float, list[tuple[object, ...]]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if number not in kept:
            continue
        date, hms, gpu, pid, _type, sm, mem, _e, _d, _j, _o, fb, *command = line.split()
        stamp = time.mktime(time.strptime(f"{date} {hms}", "%Y%m%d %H:%M:%S"))
        procs = out.setdefault(stamp, [])
        if pid != "-":
            vram = _number(fb)
            procs.append(
                (
                    int(pid),
                    int(gpu),
                    _number(sm),
                    _number(mem),
                    None if vram is None else vram * MIB,
                    " ".join(command),
                )
            )
    return out


def _read(path: Path) -> dict[float, list[tuple[object, ...]]]:
    snaps, info, _ = read_log(path)
    assert info.format == "nvidia-smi-pmon"
    return {
        snap.timestamp: [
            (p.pid, p.gpu_index, p.sm_percent, p.memory_access_percent, p.vram_bytes, p.name)
            for p in snap.processes
        ]
        for snap in snaps
    }


def _shifted(text: str, seconds: int) -> str:
    def moved(m: re.Match[str]) -> str:
        s = int(m.group(1)) * 60 + int(m.group(2)) + seconds
        return f"{10 + s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"

    return re.sub(r"10:(\d\d):(\d\d)", moved, text)


def test_odd_lines_are_counted_and_the_rest_read_from_their_cells(tmp_path: Path) -> None:
    path = tmp_path / "pmon_odd.log"
    path.write_text(ODD)
    got = _read(path)
    assert got == _expected(ODD, KEPT)
    _, _, counters = read_log(path)
    assert counters.bad_lines == len(BAD_LINES)
    assert counters.first_bad_line == 8
    assert counters.first_bad_reason == "expected a percentage, got unit 'x'"


def test_a_repeated_log_reads_the_same_in_every_repeat(tmp_path: Path) -> None:
    """300 copies of the odd log, each 8 s after the one before (across minutes and an
    hour): every copy's processes are the single copy's, 8 s on; every odd line counted."""
    copies = 300
    path = tmp_path / "pmon_odd_repeated.log"
    path.write_text("".join(_shifted(ODD, 8 * k) for k in range(copies)))
    one = tmp_path / "pmon_odd.log"
    one.write_text(ODD)
    single = _read(one)
    got = _read(path)
    assert len(got) == len(single) * copies
    for k in range(copies):
        for stamp, procs in single.items():
            assert got[stamp + 8 * k] == procs
    _, _, counters = read_log(path)
    assert counters.bad_lines == len(BAD_LINES) * copies


def test_the_fixture_reads_its_cells() -> None:
    """The bench's pmon input (-o DT; a GPU with no process; a cell that does not read)."""
    path = FIXTURES / "import" / "pmon_dt.log"
    text = path.read_text()
    lines = text.splitlines()
    assert _read(path) == _expected(text, [n for n in range(3, len(lines) + 1) if n != 8])
    _, _, counters = read_log(path)
    assert counters.bad_lines == 1 and counters.first_bad_line == 8
