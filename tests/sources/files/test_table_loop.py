"""Plain nvidia-smi tables appended in a loop without a sleep (issue 42 item 3):
several tables under each 1 s stamp, spread evenly over their second.

Figures are counted from the file's text here (the stamp lines nvidia-smi prints
above each table), not by the reader.
"""

from __future__ import annotations

import itertools
import re
from datetime import datetime, timezone

import pytest

from tests.support.logs import read_log
from tests.support.paths import FIXTURES

LOOP = FIXTURES / "import" / "nvsmi_table_loop_nosleep.log"
"""``while kill -0 $PID; do nvidia-smi >> log; done``: 1 L40S, 30 s, 3-8 tables a
second; busy (94-100 %) for 24 s, then idle."""

STAMP = re.compile(r"^(\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})\s*$", re.MULTILINE)


def stamps() -> list[float]:
    """The stamp of each table, as nvidia-smi printed it (local time read as UTC, as
    the reader reads a stamp without a zone)."""
    return [
        datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        .replace(tzinfo=timezone.utc)
        .timestamp()
        for m in STAMP.finditer(LOOP.read_text())
    ]


def test_every_table_is_a_snapshot_inside_its_own_second() -> None:
    printed = stamps()
    snaps, info, _counters = read_log(LOOP)
    assert len(snaps) == len(printed) == LOOP.read_text().count("| NVIDIA-SMI ")
    times = [s.timestamp - snaps[0].timestamp for s in snaps]
    start = printed[0]
    assert all(b > a for a, b in itertools.pairwise(times))  # none piled on one instant
    for t, stamp in zip(times, printed, strict=True):
        assert stamp - start <= t < stamp - start + 1.0
    # Within a second, evenly: table i of n at i/n.
    for stamp, group in itertools.groupby(zip(times, printed, strict=True), key=lambda x: x[1]):
        offsets = [t - (stamp - start) for t, _ in group]
        n = len(offsets)
        assert offsets == pytest.approx([i / n for i in range(n)], abs=1e-6)
    most = max(len(list(g)) for _, g in itertools.groupby(printed))
    assert info.header["bursts"] == {"resolution_s": 1.0, "most_rows": most}
    assert "spread evenly over it" in info.detail
    assert info.interval_s is not None and info.interval_s < 1.0


def test_the_report_counts_no_more_time_than_the_log_spans() -> None:
    """Before: 163 tables at the head's 1 s apiece, 2 min 34 s of compute-bound in a
    30 s log."""
    from gputop_hints.outputs.report import build_report
    from gputop_hints.sources.files import open_stream

    printed = stamps()
    stream = open_stream(LOOP)
    try:
        report = build_report(stream)
    finally:
        stream.close()
    span = printed[-1] - printed[0] + 1.0
    assert report.samples == len(printed)
    assert report.duration_s <= span
    assert report.findings  # 24 s at 94-100 %: something is found
    assert all(f.seconds <= span for f in report.findings)
