"""What a rule concludes: a finding, with the evidence that supports it.

A finding is meant to be read by a person next to the numbers it came from, so
it carries every metric the rule looked at, the value it saw over the window,
and the threshold that value crossed. Views render findings; they never
compute them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from gputop_hints.units import duration_text


class Severity(enum.IntEnum):
    """How much a finding matters; ordered so that ``max()`` picks the worst."""

    INFO = 0
    WARNING = 1
    CRITICAL = 2

    @property
    def label(self) -> str:
        return self.name.lower()


class Scope(str, enum.Enum):
    """Whose numbers a piece of evidence is: the process's own, the whole GPU's, or the host's."""

    PROCESS = "process"
    DEVICE = "device"
    HOST = "host"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One metric a rule used: what it saw and what it compared it with."""

    metric: str
    """Human name, e.g. "SM % (mean over 10 s)"."""
    value: float | None
    threshold: str
    """The comparison that held, e.g. "< 50" -- text, so ranges read naturally."""
    unit: str = "%"
    scope: Scope = Scope.DEVICE
    met: bool | None = True
    """Whether this reading crossed its threshold; None for context shown alongside."""

    @property
    def shown_value(self) -> str:
        return "n/a" if self.value is None else _fmt(self.value, self.unit)

    def shown(self, value: float) -> str:
        """``value`` in this evidence's unit, as :attr:`shown_value` writes it."""
        return _fmt(value, self.unit)

    def describe(self, value_text: str | None = None) -> str:
        """``metric: value (threshold)``; ``value_text`` replaces the value (a report's
        mean and range over an episode)."""
        verdict = {True: "", False: "not met: ", None: ""}[self.met]
        shown = self.shown_value if value_text is None else value_text
        return f"{self.metric}: {shown} ({verdict}{self.threshold})"


def _fmt(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.0f} %"
    if unit == "B":
        return f"{value / 2**30:.1f} GiB"
    if unit == "B/s":
        return f"{value / 1e9:.2f} GB/s"
    if unit == "s":
        return duration_text(value)
    if unit == "ms":
        return f"{value:.0f} ms"
    if unit == "":
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"
    return f"{value:.1f} {unit}"


@dataclass(frozen=True, slots=True)
class Subject:
    """What a finding is about: one GPU, or one process on one GPU."""

    gpu_index: int
    pid: int | None = None

    def __str__(self) -> str:
        return f"pid:{self.pid}" if self.pid is not None else f"gpu:{self.gpu_index}"


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule's conclusion about one subject, with its evidence and advice."""

    rule: str
    """Rule id, e.g. "input-starved"."""
    subject: Subject
    severity: Severity
    label: str
    """Short text for the inline column (at most ~24 columns), e.g. "starved: num_workers=0?"."""
    summary: str
    """One sentence: why the rule thinks so."""
    advice: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    subtype: str | None = None
    """E.g. "num-workers-0" for input-starved; None for rules without subtypes."""
    evidence_scope: Scope = Scope.DEVICE
    """Whether GPU-side evidence came from the process's own samples or the whole device."""
    started_at: float | None = None
    """When the condition began to hold (set by the engine once raised)."""

    @property
    def key(self) -> tuple[str, Subject]:
        return (self.rule, self.subject)

    @property
    def anchor(self) -> str:
        """Section of docs/hints.md explaining the rule: the rule id (a test checks each exists)."""
        return self.rule

    @property
    def rule_label(self) -> str:
        """``rule/subtype`` -- the form demo labels use."""
        return f"{self.rule}/{self.subtype}" if self.subtype else self.rule

    def with_start(self, started_at: float) -> Finding:
        # The constructor itself, not dataclasses.replace (which reads the fields anew
        # each call): every visible finding gets its start every tick.
        return Finding(
            rule=self.rule,
            subject=self.subject,
            severity=self.severity,
            label=self.label,
            summary=self.summary,
            advice=self.advice,
            evidence=self.evidence,
            subtype=self.subtype,
            evidence_scope=self.evidence_scope,
            started_at=started_at,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "subtype": self.subtype,
            "subject": {"gpu_index": self.subject.gpu_index, "pid": self.subject.pid},
            "severity": self.severity.label,
            "label": self.label,
            "summary": self.summary,
            "advice": list(self.advice),
            "evidence": [
                {
                    "metric": e.metric,
                    "value": e.value,
                    "threshold": e.threshold,
                    "unit": e.unit,
                    "scope": e.scope.value,
                    "met": e.met,
                }
                for e in self.evidence
            ],
            "evidence_scope": self.evidence_scope.value,
            "started_at": self.started_at,
            "docs": f"docs/hints.md#{self.anchor}",
        }
