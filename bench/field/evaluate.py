"""Scoring the hints on the field corpus: each case through the hints, as live.

Each case's snapshots go one by one into a
:class:`~gputop_hints.hints.diagnoser.Diagnoser` (the monitor's default window,
hysteresis on), exactly as the live monitor feeds them
(:func:`scoring.as_live`). For every finding (rule and subject) the run records its
worst severity, when it was first visible, how long it was visible and how
often it disappeared and came back.

The **top finding** of a run is, among everything that was visible (except
``overlap-explained``, which explains a number rather than diagnoses), the one
with the highest worst severity; ties go to the one visible longest, then to
the one seen first. A case is **right** when

* its top finding matches the verdict's ``top`` (or one of ``accept``),
* every ``must_show`` finding was visible at some time,
* no ``must_not`` finding was visible at any severity, and
* on a ``healthy`` case, no warning or critical was visible at any time.

Per rule: a **true positive** is an expected finding (a top or a must-show)
seen on its subject; a **miss** one never seen; a **false positive** is a case
where the rule was visible at warning or above without being expected or
accepted there, or visible at all where the verdict forbids it. **Time to
detect** runs from the expectation's onset to its first visible tick. A
**flip** is a finding that was visible and then was not, before the run ended.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from scoring import RuleScore, as_live, pct, secs, table

from field.case import Case
from field.verdicts import Expect, Verdict
from gputop_hints.hints.findings import Finding, Severity, Subject
from gputop_hints.hints.thresholds import Thresholds

NOT_SCORED = ("overlap-explained",)
"""Explains a number (SM % + memory % over 100) rather than diagnosing: never the top finding."""


@dataclass
class Seen:
    """One finding (rule on one subject) over a whole run."""

    rule: str
    subject: Subject
    worst: Severity
    first_s: float
    last_s: float = 0.0
    """When it was last visible."""
    visible_s: float = 0.0
    flips: int = 0
    subtypes: dict[str, float] = field(default_factory=dict)
    """Subtype (or "") -> seconds visible with it."""

    @property
    def subtype(self) -> str | None:
        """The subtype it carried longest."""
        if not self.subtypes:
            return None
        best = max(self.subtypes.items(), key=lambda kv: kv[1])[0]
        return best or None

    def matches(self, e: Expect) -> bool:
        if e.subtype is not None and e.subtype not in self.subtypes:
            return e.matches(self.rule, self.subtype, self.subject)
        return e.matches(self.rule, e.subtype if e.subtype is not None else None, self.subject)

    def describe(self) -> str:
        sub = f"/{self.subtype}" if self.subtype else ""
        return f"{self.rule}{sub}@{self.subject} {self.worst.label}"


@dataclass
class CaseResult:
    """One case: what was expected, what came out on top, and whether that is right."""

    name: str
    family: str
    live: bool
    interval_s: float
    ticks: int
    verdict: Verdict
    seen: list[Seen]
    top: Seen | None
    right: bool
    problems: list[str]
    """Why the case is wrong (empty when right)."""
    detect_s: dict[str, float | None]
    """Each expected finding -> seconds from its onset to first visible; None if never."""

    @property
    def warnings(self) -> list[Seen]:
        return [s for s in self.seen if s.worst >= Severity.WARNING]


FORBIDDEN_GRACE_S = 10.0
"""A finding forbidden from an onset (``must_not`` with ``onset_s``) may stay this long after
it: the rules' 6 s window still holds the time before the change, plus a few ticks. The
same finding before the onset is right (healthy training before a hang)."""


def top_finding(seen: Iterable[Seen]) -> Seen | None:
    """Highest worst severity, then longest visible, then first seen."""
    scored = [s for s in seen if s.rule not in NOT_SCORED]
    if not scored:
        return None
    return max(scored, key=lambda s: (int(s.worst), s.visible_s, -s.first_s))


def _track(snapshots_findings: Iterable[tuple[float, float, tuple[Finding, ...]]]) -> list[Seen]:
    seen: dict[tuple[str, Subject], Seen] = {}
    before: set[tuple[str, Subject]] = set()
    for t, dt, visible in snapshots_findings:
        now: set[tuple[str, Subject]] = set()
        for f in visible:
            key = f.key
            now.add(key)
            s = seen.get(key)
            if s is None:
                s = seen[key] = Seen(f.rule, f.subject, f.severity, t)
            s.worst = max(s.worst, f.severity)
            s.last_s = t
            s.visible_s += dt
            s.subtypes[f.subtype or ""] = s.subtypes.get(f.subtype or "", 0.0) + dt
        for key in before - now:
            seen[key].flips += 1
        before = now
    return list(seen.values())


def run_case(case: Case, thresholds: Thresholds | None = None) -> CaseResult:
    """Feed the case through a Diagnoser (hysteresis on), as live, and judge the outcome."""
    snapshots = case.snapshots()
    interval = case.scenario.interval_s
    start = snapshots[0].timestamp - interval if snapshots else 0.0
    seen = _track(
        (snap.timestamp - start, interval, visible)
        for snap, visible, _ in as_live(snapshots, interval, thresholds)
    )
    return judge(case, seen, len(snapshots))


def judge(case: Case, seen: list[Seen], ticks: int) -> CaseResult:
    """Compare what was seen with the case's verdict."""
    v = case.verdict
    top = top_finding(seen)
    problems: list[str] = []
    if v.top is not None:
        wanted = (v.top, *v.accept)
        if top is None:
            problems.append(f"no finding, expected {v.top}")
        elif not any(top.matches(e) for e in wanted):
            problems.append(f"top {top.describe()}, expected {v.top}")
    problems.extend(f"never showed {e}" for e in v.must_show if not any(s.matches(e) for s in seen))
    for e in v.must_not:
        problems.extend(
            f"showed forbidden {s.describe()}"
            for s in seen
            if s.matches(e) and (e.onset_s == 0.0 or s.last_s >= e.onset_s + FORBIDDEN_GRACE_S)
        )
    if v.healthy:
        problems.extend(f"warning on healthy: {s.describe()}" for s in seen if s.worst >= 1)
    detect: dict[str, float | None] = {}
    for e in v.expected:
        hits = [s.first_s for s in seen if s.matches(e)]
        detect[str(e)] = max(0.0, min(hits) - e.onset_s) if hits else None
    return CaseResult(
        name=case.name,
        family=case.family,
        live=case.live,
        interval_s=case.scenario.interval_s,
        ticks=ticks,
        verdict=v,
        seen=seen,
        top=top,
        right=not problems,
        problems=problems,
        detect_s=detect,
    )


@dataclass
class FieldResult:
    """The whole corpus: per case and per rule, as data for tests and tables."""

    cases: list[CaseResult]
    rules: dict[str, RuleScore]

    @property
    def accuracy(self) -> float:
        return sum(c.right for c in self.cases) / len(self.cases) if self.cases else 0.0

    @property
    def healthy_warnings(self) -> list[str]:
        """``case: finding`` for every warning or critical on a healthy case."""
        return [
            f"{c.name}: {s.describe()}" for c in self.cases if c.verdict.healthy for s in c.warnings
        ]

    def by_family(self) -> dict[str, tuple[int, int]]:
        """Family -> (right, total)."""
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for c in self.cases:
            out[c.family][0] += c.right
            out[c.family][1] += 1
        return {k: (v[0], v[1]) for k, v in out.items()}


def score(results: Sequence[CaseResult]) -> FieldResult:
    """Per-rule precision, recall, time to detect and flips over ``results``."""
    rules: dict[str, RuleScore] = {}

    def rule(name: str) -> RuleScore:
        return rules.setdefault(name, RuleScore(name))

    for c in results:
        v = c.verdict
        for e in v.expected:
            r = rule(e.rule)
            delay = c.detect_s.get(str(e))
            if delay is None:
                r.misses += 1
            else:
                r.true_positives += 1
                r.detect_s.append(delay)
        allowed = (*v.expected, *v.accept)
        false_rules: set[str] = set()
        for s in c.seen:
            rule(s.rule).flips += s.flips
            if s.rule in NOT_SCORED:
                continue
            forbidden = any(s.matches(e) for e in v.must_not)
            unexpected = s.worst >= Severity.WARNING and not any(s.matches(e) for e in allowed)
            if forbidden or unexpected:
                false_rules.add(s.rule)
        for name in false_rules:
            rule(name).false_positives += 1
    return FieldResult(list(results), dict(sorted(rules.items())))


def evaluate(cases: Iterable[Case], thresholds: Thresholds | None = None) -> FieldResult:
    """Run and score ``cases``: the function the tests and ``bench/field_eval.py`` call."""
    return score([run_case(c, thresholds) for c in cases])


# --- tables -----------------------------------------------------------------


def format_cases(result: FieldResult) -> str:
    """One line per case: expected, top finding, right or wrong and why."""
    rows = []
    for c in result.cases:
        mode = "live" if c.live else "log"
        rows.append(
            [
                c.name,
                f"{mode} {c.interval_s:g}s",
                c.verdict.describe(),
                c.top.describe() if c.top else "(nothing)",
                "right" if c.right else "WRONG",
                "; ".join(c.problems)[:110],
            ]
        )
    return table(["case", "data", "expected", "top finding", "", "why wrong"], rows)


def format_rules(result: FieldResult) -> str:
    """Per rule: expected, found, misses, false positives, precision, recall, detect, flips."""
    rows = [
        [
            r.rule,
            str(r.true_positives + r.misses),
            str(r.true_positives),
            str(r.misses),
            str(r.false_positives),
            pct(r.precision),
            pct(r.recall),
            secs(r.median_detect_s),
            str(r.flips),
        ]
        for r in result.rules.values()
    ]
    return table(
        ["rule", "expected", "found", "missed", "false+", "precision", "recall", "detect", "flips"],
        rows,
    )


def format_summary(result: FieldResult) -> str:
    """Accuracy overall and per family, and the warnings on healthy cases."""
    right = sum(c.right for c in result.cases)
    lines = [f"overall: {right} of {len(result.cases)} cases right ({pct(result.accuracy)})"]
    for family, (ok, n) in sorted(result.by_family().items()):
        lines.append(f"  {family:<12} {ok:>3} of {n:<3}")
    healthy = [c for c in result.cases if c.verdict.healthy]
    warned = result.healthy_warnings
    lines.append(
        f"warnings on healthy cases: {len(warned)} "
        f"(on {sum(1 for c in healthy if c.warnings)} of {len(healthy)} healthy cases)"
    )
    lines += [f"  {w}" for w in warned]
    return "\n".join(lines)
