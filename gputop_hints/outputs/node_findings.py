"""The findings a job's nodes report, as the ``--prometheus`` monitor lists them.

The live view over a job's nodes sees their GPUs, not their processes or host data;
each node's own ``gputop-hints export`` sees those and serves its findings, which
the source reads each tick (:attr:`Snapshot.node_findings`, worst first). This module
decides what the list shows -- every node's findings, or one node's (``N``), its
title and what it says when there are none -- and formats each row; the widget only
draws it. Every string from the series' labels goes through :func:`visible`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from gputop_hints.model import ReportedFinding
from gputop_hints.text import visible
from gputop_hints.units import duration_text

COLUMNS = ("NODE", "GPU", "PID", "FINDING", "SEVERITY", "SINCE")


@dataclass(frozen=True)
class FindingRow:
    """One finding, as display strings in :data:`COLUMNS` order."""

    node: str
    gpu: str
    pid: str
    finding: str
    severity: str
    """"critical", "warning", "info" (or what the exporter labelled it, made visible)."""
    since: str

    def cells(self) -> tuple[str, ...]:
        return (self.node, self.gpu, self.pid, self.finding, self.severity, self.since)


@dataclass(frozen=True)
class NodeFindingsView:
    title: str
    rows: tuple[FindingRow, ...]
    empty: str
    """What the list says where it has no rows."""


def node_findings_view(
    findings: Sequence[ReportedFinding], node: str | None, now: float
) -> NodeFindingsView:
    """The list for ``node`` (None: every node), the findings in the order given
    (worst first), each with since when it holds (``14:02:10, 4 min 54 s``, by ``now``)."""
    where = "findings come from gputop-hints export on each node; other exporters report none"
    if node is None:
        title = "FINDINGS THE NODES' EXPORTERS REPORT"
        empty = f"no node reports a finding now ({where})"
    else:
        title = f"FINDINGS {visible(node)}'s EXPORTER REPORTS"
        empty = f"{visible(node)} reports no finding now ({where})"
    rows = tuple(_row(f, now) for f in findings if node is None or f.node == node)
    return NodeFindingsView(f"{title} ({len(rows)})", rows, empty)


def _row(f: ReportedFinding, now: float) -> FindingRow:
    what = f"{f.rule}/{f.subtype}" if f.subtype else f.rule
    since = "-"
    if f.since is not None:
        clock = time.strftime("%H:%M:%S", time.localtime(f.since))
        since = f"{clock}, {duration_text(max(0.0, now - f.since))}"
    return FindingRow(
        node=visible(f.node),
        gpu=visible(f.gpu) or "-",
        pid=visible(f.pid) or "-",
        finding=visible(what),
        severity=visible(f.severity),
        since=since,
    )
