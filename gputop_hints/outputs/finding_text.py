"""One plain-text rendering of a finding, shared by every output.

The report, ``--once`` and the detail view all say the same things about a
finding in the same words: a headline, why (the summary), each piece of
evidence with its threshold, what to change, and where to read more. Only the
headline differs by context (the report adds how long the finding held; the
detail view styles the same parts into columns), so it is passed in.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject

TEXT_MARK: dict[Severity, str] = {
    Severity.INFO: "i",
    Severity.WARNING: "!",
    Severity.CRITICAL: "!!",
}
"""Severity as plain ASCII, for text that may be read without colour or Unicode."""

EVIDENCE = "evidence: "
ADVICE = "advice:   "
MORE = "more:     "


def subject_text(subject: Subject) -> str:
    """``pid 4200 on GPU 1`` for a process finding, ``GPU 1`` for a whole-device one."""
    if subject.pid is not None:
        return f"pid {subject.pid} on GPU {subject.gpu_index}"
    return f"GPU {subject.gpu_index}"


def more_text(finding: Finding) -> str:
    """The command that prints this finding's section of the hints guide (shipped
    in the package, so it works after a pip install)."""
    return f"gputop-hints explain {finding.rule}"


def finding_lines(
    finding: Finding,
    headline: str,
    *,
    indent: str,
    width: int | None = None,
    summary: str | None = None,
    evidence_value: Callable[[Evidence], str | None] | None = None,
) -> list[str]:
    """``headline``, then the summary, evidence, advice and pointer, each under ``indent``.

    With ``width`` the text is word-wrapped to it (nothing is cut off); without,
    each item stays on one line. ``summary`` replaces the finding's sentence and
    ``evidence_value`` the value each evidence shows (None: its own) -- the report
    says what held over an episode, not at one tick.
    """
    lines = [headline]
    lines.extend(_wrap(finding.summary if summary is None else summary, width, indent))
    for evidence in finding.evidence:
        value = None if evidence_value is None else evidence_value(evidence)
        lines.extend(_wrap(evidence.describe(value), width, indent + EVIDENCE))
    for advice in finding.advice:
        lines.extend(_wrap(advice, width, indent + ADVICE))
    lines.append(indent + MORE + more_text(finding))
    return lines


def _wrap(text: str, width: int | None, first: str) -> list[str]:
    if width is None:
        return [first + text]
    rest = " " * len(first)
    return textwrap.wrap(
        text,
        max(width, len(first) + 20),
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]
