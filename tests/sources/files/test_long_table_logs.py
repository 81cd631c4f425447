"""A long plain ``nvidia-smi`` table log is read in constant memory: nothing kept per
snapshot once it is handed on (the 1 GB table log of bench/report_speed.py once peaked
at 644 MB because every values row was remembered by its line number)."""

from __future__ import annotations

import gc
import time
import tracemalloc
from contextlib import closing
from pathlib import Path

from gputop_hints.sources.files import open_stream
from tests.support.paths import FIXTURES

FIXTURE = FIXTURES / "import" / "nvsmi_table_separators.log"
FIRST = "Tue Dec  1 20:06:47 2026"


def write_log(path: Path, count: int) -> None:
    """``count`` copies of the fixture's first 2-GPU snapshot, 5 s apart, each with its
    own utilization (as ``nvidia-smi -l 5 >> log`` appends them)."""
    text = FIXTURE.read_text()
    start_at = text.index(FIRST)
    date, body = text[start_at : text.index("\n&\n", start_at) + 1].split("\n", 1)
    start = time.mktime(time.strptime(date.strip(), "%a %b %d %H:%M:%S %Y"))
    with open(path, "w") as f:
        for i in range(count):
            stamp = time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(start + 5 * i))
            f.write(f"{stamp}\n" + body.replace(" 42%      Default", f"{i % 101:>3}%      Default"))


def peak_while_reading(path: Path) -> tuple[int, int]:
    """(snapshots read, peak bytes allocated meanwhile) with each snapshot dropped at once."""
    gc.collect()
    tracemalloc.start()
    try:
        count = 0
        with closing(open_stream(path)) as stream:
            for _ in stream:
                count += 1
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_eight_times_the_snapshots_take_no_more_memory(tmp_path: Path) -> None:
    short, long = tmp_path / "short.log", tmp_path / "long.log"
    write_log(short, 300)
    write_log(long, 2400)
    read_short, peak_short = peak_while_reading(short)
    read_long, peak_long = peak_while_reading(long)
    assert (read_short, read_long) == (300, 2400)
    # 2,100 more snapshots of 2 GPUs: kept, even a row each would be several hundred KB.
    assert peak_long - peak_short < 256 * 1024, (peak_short, peak_long)
