"""Findings, tick after tick, into alert events: raised, cleared, deduplicated, rate-limited.

The engine only decides; it writes nothing. Each tick it is handed the findings
the hint engine shows and the snapshot they came from, and answers the events
to send:

* a finding of ``min_severity`` or worse whose (subject, rule) was not active
  is **raised**; while it stays, nothing more is said of it (one event per
  subject and rule, whatever its label does meanwhile);
* an active (subject, rule) gone from the findings for ``clear_after_s`` of tick
  time is **cleared**; back sooner, it was never gone (a flapping finding does
  not ring twice);
* a raise within ``min_interval_s`` of the last one sent for the same subject
  and rule, or beyond ``max_per_minute`` events in the last minute (all subjects
  together), is suppressed and counted -- and so is the clear that follows it
  (nobody was told it began).

All times are the snapshots' own (simulated in the demo, recorded in a replay),
so the same ticks give the same events on any machine.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gputop_hints.alerts.settings import NotifySettings
from gputop_hints.hints.findings import Finding, Subject
from gputop_hints.model import Snapshot
from gputop_hints.text import visible

_Key = tuple[str, Subject]

RAISED = "raised"
CLEARED = "cleared"


@dataclass(frozen=True, slots=True)
class AlertEvent:
    """One notification: a finding raised or cleared. Every string in it is safe to
    show on a terminal (:func:`gputop_hints.text.visible`)."""

    kind: str
    """:data:`RAISED` or :data:`CLEARED`."""
    at: float
    """The tick's time, seconds since the epoch."""
    rule: str
    subtype: str | None
    severity: str
    label: str
    summary: str
    advice: str
    """The finding's first advice line ("" when it has none)."""
    gpu_index: int
    pid: int | None
    process: str | None
    """The process's name, as the snapshot has it."""
    node: str | None
    host: str

    @property
    def title(self) -> str:
        """``gputop-hints: warning on GPU 0`` / ``... cleared on GPU 0``."""
        what = "cleared" if self.kind == CLEARED else self.severity
        where = f"{self.node} GPU {self.gpu_index}" if self.node else f"GPU {self.gpu_index}"
        return f"gputop-hints: {what} on {where}"

    @property
    def body(self) -> str:
        """One line: the label, the process, and (raised) the first advice line."""
        who = ""
        if self.pid is not None:
            who = f" -- pid {self.pid}" + (f" {self.process}" if self.process else "")
        if self.kind == CLEARED:
            return f"cleared: {self.label}{who}"
        advice = f": {self.advice}" if self.advice else ""
        return f"{self.label}{who}{advice}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": self.kind,
            "time": self.at,
            "rule": self.rule,
            "subtype": self.subtype,
            "severity": self.severity,
            "label": self.label,
            "summary": self.summary,
            "advice": self.advice,
            "gpu_index": self.gpu_index,
            "pid": self.pid,
            "process": self.process,
            "node": self.node,
            "host": self.host,
            "title": self.title,
            "body": self.body,
        }


def event_of(kind: str, finding: Finding, snapshot: Snapshot) -> AlertEvent:
    """The event for ``finding`` at ``snapshot``'s tick, every outside string made visible."""
    pid = finding.subject.pid
    process = None
    if pid is not None:
        for proc in snapshot.processes:
            if proc.pid == pid:
                process = proc.name or (proc.command.split(" ", 1)[0] if proc.command else None)
                break
    node = None
    for gpu in snapshot.gpus:
        if gpu.index == finding.subject.gpu_index:
            node = gpu.node
            break
    return AlertEvent(
        kind=kind,
        at=snapshot.timestamp,
        rule=finding.rule,
        subtype=finding.subtype,
        severity=finding.severity.label,
        label=visible(finding.label),
        summary=visible(finding.summary),
        advice=visible(finding.advice[0]) if finding.advice else "",
        gpu_index=finding.subject.gpu_index,
        pid=pid,
        process=visible(process) if process is not None else None,
        node=visible(node) if node is not None else None,
        host=visible(snapshot.host.hostname),
    )


class AlertEngine:
    """The per-(subject, rule) state behind the events; see the module's docstring."""

    def __init__(self, settings: NotifySettings) -> None:
        self.settings = settings
        self._active: dict[_Key, Finding] = {}
        self._last_seen: dict[_Key, float] = {}
        self._told: set[_Key] = set()
        """Active keys whose raise was sent (only those get a clear)."""
        self._last_sent: dict[_Key, float] = {}
        self._sent_at: deque[float] = deque()
        self.suppressed = 0
        """Events not sent because of a rate limit, since the start."""

    def observe(self, findings: Iterable[Finding], snapshot: Snapshot) -> list[AlertEvent]:
        """The events of one tick: ``findings`` (what the hints show after ``snapshot``)."""
        now = snapshot.timestamp
        s = self.settings
        current = {f.key: f for f in findings if f.severity >= s.min_severity}
        events: list[AlertEvent] = []
        for key, finding in current.items():
            self._last_seen[key] = now
            if key in self._active:
                continue  # the clear names what was raised, whatever the label says now
            self._active[key] = finding
            last = self._last_sent.get(key)
            if (last is not None and now - last < s.min_interval_s) or not self._room(now):
                self.suppressed += 1
                continue
            self._sent(key, now)
            self._told.add(key)
            events.append(event_of(RAISED, finding, snapshot))
        for key in [k for k in self._active if k not in current]:
            if now - self._last_seen[key] < s.clear_after_s - 1e-9:
                continue
            finding = self._active.pop(key)
            del self._last_seen[key]
            if key not in self._told:
                continue
            self._told.discard(key)
            if not self._room(now):
                self.suppressed += 1
                continue
            self._sent(None, now)
            events.append(event_of(CLEARED, finding, snapshot))
        return events

    def _room(self, now: float) -> bool:
        """Whether one more event fits in the last minute's cap."""
        while self._sent_at and now - self._sent_at[0] >= 60.0:
            self._sent_at.popleft()
        return len(self._sent_at) < self.settings.max_per_minute

    def _sent(self, key: _Key | None, now: float) -> None:
        self._sent_at.append(now)
        if key is not None:
            self._last_sent[key] = now
