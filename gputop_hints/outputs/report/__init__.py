"""``gputop-hints report FILE``: a post-mortem of a recording (or an imported log).

:func:`build_report` reads a snapshot stream once, in constant memory
(:mod:`.build`, statistics in :mod:`.stats`, data-quality notes in
:mod:`.quality`) into a :class:`Report` (:mod:`.model`), which :mod:`.render`
turns into plain text or the JSON documented in ``docs/recording.md``.
No Textual here.
"""

from __future__ import annotations

from gputop_hints.outputs.report.build import (
    build_report,
    choose_hint_stride,
    report_file,
)
from gputop_hints.outputs.report.model import EXIT_FINDINGS, EXIT_OK, FindingTime, Report
from gputop_hints.outputs.report.render import report_json, report_json_text, report_text
from gputop_hints.outputs.report.stats import GpuStats, PercentStats, RateStats

__all__ = [
    "EXIT_FINDINGS",
    "EXIT_OK",
    "FindingTime",
    "GpuStats",
    "PercentStats",
    "RateStats",
    "Report",
    "build_report",
    "choose_hint_stride",
    "report_file",
    "report_json",
    "report_json_text",
    "report_text",
]
