"""No time in a report exceeds the log it was read from (issue 42 item 3).

A finding's time is its ticks times the stream's interval; a log read with the wrong
interval -- several nvidia-smi tables a second under 1 s stamps, read as one a minute
-- reported 22 h of compute-bound from a 16-minute log. Here every fixture and shared
trace that opens is reported, and each finding's time and each rule's time is held
to the span the report gives (first to last tick plus one interval), to 1 % of an
interval (the interval is a measured median, not exact).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gputop_hints.outputs.report import build_report
from gputop_hints.sources.files import open_stream
from gputop_hints.streams import UnrecognisedFormat
from tests.support.paths import FIXTURES, TRACES

IMPORT = FIXTURES / "import"


def _logs() -> list[Path]:
    found = [p for p in sorted(IMPORT.iterdir()) if p.name != "README.md"]
    if TRACES.is_dir():
        found += sorted(
            Path(root) / name
            for root, _dirs, names in os.walk(TRACES)
            for name in names
            if not name.endswith((".md", ".tsv"))
        )
    return found


@pytest.mark.parametrize("path", _logs(), ids=lambda p: p.name)
def test_no_time_in_a_report_exceeds_the_log(path: Path) -> None:
    try:
        stream = open_stream(path)
    except UnrecognisedFormat:
        pytest.skip("refused: nothing is reported")
    try:
        report = build_report(stream)
    finally:
        stream.close()
    span = report.duration_s
    slack = 0.01 * (report.interval_s or 0.0)
    for finding in report.findings:
        assert finding.seconds <= span + slack, (finding.finding.rule, finding.seconds, span)
    for rule, seconds in report.rule_seconds.items():
        assert seconds <= span + slack, (rule, seconds, span)
