"""No time in a report exceeds the log it was read from (issue 42 item 3), and every GPU
with readings gets a verdict (issue 41).

A finding's time is its ticks times the stream's interval; a log read with the wrong
interval -- several nvidia-smi tables a second under 1 s stamps, read as one a minute
-- reported 22 h of compute-bound from a 16-minute log. Here every fixture and shared
trace that opens is reported, and each finding's time and each rule's time is held
to the span the report gives (first to last tick plus one interval), to 1 % of an
interval (the interval is a measured median, not exact).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop_hints.outputs.report import Report, build_report
from gputop_hints.outputs.report.render import report_text
from gputop_hints.sources.files import open_stream
from gputop_hints.streams import UnrecognisedFormat
from tests.support.logs import every_log

_REPORTS: dict[Path, Report] = {}


def _report(path: Path) -> Report:
    """The report of ``path``, built once for the tests of this module."""
    if path not in _REPORTS:
        try:
            stream = open_stream(path)
        except UnrecognisedFormat:
            pytest.skip("refused: nothing is reported")
        try:
            _REPORTS[path] = build_report(stream)
        finally:
            stream.close()
    return _REPORTS[path]


@pytest.mark.parametrize("path", every_log(), ids=lambda p: p.name)
def test_no_time_in_a_report_exceeds_the_log(path: Path) -> None:
    report = _report(path)
    span = report.duration_s
    slack = 0.01 * (report.interval_s or 0.0)
    for finding in report.findings:
        assert finding.seconds <= span + slack, (finding.finding.rule, finding.seconds, span)
    for rule, seconds in report.rule_seconds.items():
        assert seconds <= span + slack, (rule, seconds, span)


@pytest.mark.parametrize("path", every_log(), ids=lambda p: p.name)
def test_every_gpu_with_readings_gets_a_verdict(path: Path) -> None:
    """Issue 41: a report never ends silent on a GPU it has readings for -- each gets a
    verdict line at the top (hints.phases), whatever the rules found."""
    report = _report(path)
    with_readings = sorted(g.index for g in report.gpus if g.sm.count)
    judged = {v.gpu_index: v for v in report.verdicts}
    assert set(with_readings) <= set(judged)
    for index in with_readings:
        verdict = judged[index]
        assert verdict.kind.value != "no-readings"
        assert verdict.summary.startswith(f"GPU {index}: ")
    text = report_text(report, width=100)
    if with_readings:
        head = text.split("Verdict per GPU", 1)[1]
        for index in with_readings:
            assert f"GPU {index}: " in head
