"""What the two hint evaluations share: feeding ticks as live, per-rule scores, tables.

The demo corpus (:mod:`demo_eval`: the demo's labelled scenarios) and the field
corpus (:mod:`field.evaluate`: situations the demo never simulated) are scored
alike: ticks go one by one through a :class:`~gputop_hints.hints.diagnoser.Diagnoser`
with hysteresis, exactly as the live monitor feeds them, and each rule gets
true positives, misses, false positives, time to detect and flips. The two
simulators stay independent (docs/field_corpus.md): only the scoring is shared.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.hints.findings import Finding
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.model import Snapshot


def as_live(
    snapshots: Iterable[Snapshot], interval_s: float, thresholds: Thresholds | None = None
) -> Iterator[tuple[Snapshot, tuple[Finding, ...], float]]:
    """Each tick, the findings visible after it and what the evaluation cost (s)."""
    diagnoser = Diagnoser(thresholds, interval_s=interval_s)
    for snap in snapshots:
        findings = diagnoser.feed(snap)
        yield snap, findings, diagnoser.last_cost_s


@dataclass
class RuleScore:
    """One rule over a corpus."""

    rule: str
    true_positives: int = 0
    misses: int = 0
    false_positives: int = 0
    detect_s: list[float] = field(default_factory=list)
    """Seconds from each detected expectation's onset to its first visible tick."""
    flips: int = 0
    steady_s: float = 0.0
    """Seconds of steady input the flips were counted over (0: not counted per time)."""

    @property
    def precision(self) -> float | None:
        n = self.true_positives + self.false_positives
        return self.true_positives / n if n else None

    @property
    def recall(self) -> float | None:
        n = self.true_positives + self.misses
        return self.true_positives / n if n else None

    @property
    def median_detect_s(self) -> float | None:
        return statistics.median(self.detect_s) if self.detect_s else None

    @property
    def worst_detect_s(self) -> float | None:
        return max(self.detect_s) if self.detect_s else None

    @property
    def flips_per_10_min(self) -> float | None:
        return self.flips / self.steady_s * 600 if self.steady_s > 0 else None


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f} %"


def secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} s"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns two spaces apart, a rule under the header."""
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]
    return "\n".join(lines)
