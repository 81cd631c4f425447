"""The CSV readers' quick paths read what the slow ones do: plain lines split as
csv.reader reads them, nvidia-smi timestamps by their minute, rows known by their
text after the time."""

from __future__ import annotations

import csv
import random
from contextlib import closing
from pathlib import Path

from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files import open_stream
from gputop_hints.sources.files._csvio import records, split_plain


def test_plain_lines_split_as_csv_reads_them() -> None:
    lines = ["", " ", "a,b", " a , b ,", ",,", "1.5, 2 %,  NVIDIA A100 ,x y", "\t1,\t2"]
    for line in lines:
        assert split_plain(line, ",") == next(csv.reader([line], skipinitialspace=True), [])


def test_records_numbered_around_quoted_lines() -> None:
    lines = ['a,"b', 'c",d', "e,f", '"g,h"', "", 'x,"unterminated', "i,j"]
    got = list(records(enumerate(lines, start=1), ",", lambda n, why: None))
    assert got[:4] == [(1, ["a", "b\nc", "d"]), (3, ["e", "f"]), (4, ["g,h"]), (5, [])]
    assert got[4][0] == 6 and got[4][1][0] == "x"  # the quote runs to the end


def test_nvsmi_time_reads_as_timestamp() -> None:
    rng = random.Random(3)
    for _ in range(3000):
        cell = (
            f"{rng.randint(1999, 2100)}/{rng.randint(0, 13):02d}/{rng.randint(0, 32):02d} "
            f"{rng.randint(0, 25):02d}:{rng.randint(0, 61):02d}:{rng.randint(0, 99):02d}"
            + rng.choice(["", ".5", ".950", ".", " ", "x", ".1234567"])
        )
        quick = v.nvsmi_time(cell)
        if quick is not None:
            assert v.timestamp(cell) == (quick, True)


def test_known_rows_read_as_afresh(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    rows = ["timestamp,gpu_util,mem_used_mb"]
    rows += ["1700000000,40,1000", "1700000001,40,1000", ",40,1000", "timestamp,40,1000"]
    rows += ["1700000002,40,1000", "bad,40,1000", "1700000003,40,1000"]
    path.write_text("\n".join(rows) + "\n")
    stream = open_stream(path)
    with closing(stream):
        snaps = list(stream)
    # The blank time is put an interval on; "timestamp" and "bad" are bad times.
    assert [s.timestamp for s in snaps] == [1700000000 + k for k in (0, 1, 2, 2, 3)]
    assert stream.counters.bad_lines == 2 and stream.counters.first_bad_line == 5
    assert stream.counters.first_bad_reason == "time: not a number: 'timestamp'"
