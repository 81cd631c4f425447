"""Measuring the rules against the demo's labelled scenarios.

Each demo snapshot carries ground-truth labels (``input-starved/num-workers-0@pid:4000``,
see ``sources/demo/scenarios.py``). This module runs scenarios through the
engine on simulated time and scores every visible finding against them:
precision and recall per rule, time from a label's onset to its first
detection, and how often findings flip on and off once the input is steady.

``bench/hints_eval.py`` prints the table; ``tests/bench/test_demo_eval.py`` asserts
the targets on a fixed set of seeds. The ticks go through the hints and are scored
as the field corpus's are (:mod:`scoring`). No Textual, no wall clock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from scoring import RuleScore, as_live

from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import RULES_BY_ID, overlap_explained, vram_preallocated, warm_up
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.model import Snapshot
from gputop_hints.sources.demo import DemoSource

BENIGN = ("warming-up", "checkpointing", "serving")
"""Annotations that describe a phase, not a bottleneck: no rule should fire for them."""
NOT_SCORED = (overlap_explained.SPEC.id, warm_up.SPEC.id, vram_preallocated.SPEC.id)
"""Rules that label context rather than diagnose, and that the demo's labels do not cover:
overlap-explained is true by construction whenever SM % + memory % > 100 (checked by
tests instead); every demo job starts with seconds of host-only start-up and a fast VRAM
ramp, which warm-up and vram-preallocated describe as such (info). Both are scored on
the field corpus (bench/field), whose verdicts name them."""
STEADY_AFTER_S = 30.0
"""Flips are counted only this long after the last label onset (steady input), and
after the longest ``raise_after_s`` among the rules of the labels seen: a rule that must
see its condition hold a minute (collective-hang) first shows it a minute after its
onset, and that is its detection, not a flip."""


def _label_parts(label: str) -> tuple[str, str]:
    condition, _, subject = label.partition("@")
    return condition, subject


def _rule_of(condition: str) -> str:
    return condition.split("/", 1)[0]


@dataclass
class RunResult:
    """One scenario and seed: what was expected, what was seen, and when."""

    scenario: str
    seed: int
    onsets: dict[str, float]
    """label -> first time it appeared (seconds from the start)."""
    first_seen: dict[str, float]
    """``rule_label@subject`` -> first time visible."""
    severity: dict[str, Severity]
    flips: dict[str, int]
    """``rule_label@subject`` -> visibility changes after the input became steady."""
    steady_s: float
    engine_cost_s: list[float] = field(default_factory=list)

    @property
    def expected(self) -> set[str]:
        return {
            label for label in self.onsets if _label_parts(label)[0].split("/")[0] not in BENIGN
        }


def run_scenario(
    scenario: str,
    seed: int,
    duration_s: float,
    interval_s: float = 1.0,
    thresholds: Thresholds | None = None,
    gpus: int | None = None,
    processes: int | None = None,
) -> RunResult:
    """Simulate ``duration_s`` of a scenario and record the engine's findings."""
    source = DemoSource(scenario, seed=seed, interval_s=interval_s, gpus=gpus, processes=processes)
    start: float | None = None
    onsets: dict[str, float] = {}
    first_seen: dict[str, float] = {}
    severity: dict[str, Severity] = {}
    visible_since_steady: dict[str, bool] = {}
    flips: dict[str, int] = defaultdict(int)
    costs: list[float] = []
    steps = round(duration_s / interval_s)
    last_onset = 0.0
    settle_s = 0.0
    steady_started = False
    limits = thresholds or Thresholds.defaults()

    def ticks() -> Iterator[Snapshot]:
        for _ in range(steps):
            yield source.sample()

    for snap, findings, cost in as_live(ticks(), interval_s, thresholds):
        if start is None:
            start = snap.timestamp
        t = snap.timestamp - start
        for label in snap.labels:
            if label not in onsets:
                onsets[label] = t
                last_onset = max(last_onset, t)
                spec = RULES_BY_ID.get(_rule_of(_label_parts(label)[0]))
                if spec is not None:
                    settle_s = max(settle_s, spec.hysteresis(limits)[0])
        costs.append(cost)
        now_visible = set()
        for f in findings:
            if f.rule in NOT_SCORED:
                continue
            key = f"{f.rule_label}@{f.subject}"
            on_gpu = f"{f.rule_label}@gpu:{f.subject.gpu_index}"
            if f.subject.pid is not None and on_gpu in snap.labels:
                key = on_gpu  # a finding on a process of GPU N meets a label about GPU N
            now_visible.add(key)
            first_seen.setdefault(key, t)
            severity[key] = max(severity.get(key, f.severity), f.severity)
        if t >= last_onset + settle_s + STEADY_AFTER_S:
            if steady_started:
                for key in set(visible_since_steady) | now_visible:
                    if visible_since_steady.get(key, False) != (key in now_visible):
                        flips[key] += 1
            steady_started = True
            visible_since_steady = dict.fromkeys(now_visible, True)
    source.close()
    steady_s = max(0.0, steps * interval_s - (last_onset + settle_s + STEADY_AFTER_S))
    return RunResult(scenario, seed, onsets, first_seen, severity, dict(flips), steady_s, costs)


@dataclass
class Evaluation:
    runs: list[RunResult]
    scores: dict[str, RuleScore]
    misses: list[str]
    """Human-readable list of false negatives and false positives, for debugging."""
    false_alarms: list[str]

    def warnings_on(self, scenario: str) -> list[str]:
        """Unexpected warning-or-worse findings on one scenario (healthy should have none)."""
        out = []
        for run in self.runs:
            if run.scenario != scenario:
                continue
            for key, sev in run.severity.items():
                if sev >= Severity.WARNING and key not in run.expected:
                    out.append(f"{run.scenario} seed {run.seed}: {key}")
        return out


def evaluate(runs: Iterable[RunResult]) -> Evaluation:
    """Score findings against labels, per rule (subtype errors count against the rule)."""
    scores: dict[str, RuleScore] = {}
    misses: list[str] = []
    false_alarms: list[str] = []
    run_list = list(runs)

    def score(rule: str) -> RuleScore:
        return scores.setdefault(rule, RuleScore(rule))

    for run in run_list:
        expected = run.expected
        for label in expected:
            rule = _rule_of(_label_parts(label)[0])
            s = score(rule)
            if label in run.first_seen:
                s.true_positives += 1
                s.detect_s.append(max(0.0, run.first_seen[label] - run.onsets[label]))
            else:
                s.misses += 1
                misses.append(f"{run.scenario} seed {run.seed}: missed {label}")
        for key in run.first_seen:
            if key in expected:
                continue
            rule = _rule_of(_label_parts(key)[0])
            score(rule).false_positives += 1
            false_alarms.append(
                f"{run.scenario} seed {run.seed}: unexpected {key} at {run.first_seen[key]:.0f} s"
            )
        for key, n in run.flips.items():
            score(_rule_of(_label_parts(key)[0])).flips += n
        for rule in {_rule_of(_label_parts(k)[0]) for k in (*expected, *run.first_seen)}:
            score(rule).steady_s += run.steady_s
    return Evaluation(run_list, scores, misses, false_alarms)


def run_corpus(
    scenarios: Sequence[str], seeds: Sequence[int], duration_s: float, interval_s: float = 1.0
) -> Evaluation:
    return evaluate(
        run_scenario(name, seed, duration_s, interval_s) for name in scenarios for seed in seeds
    )


def format_table(ev: Evaluation) -> str:
    def f(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    lines = [
        f"{'rule':<20} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>9} {'recall':>7} "
        f"{'median TTD':>10} {'worst TTD':>9} {'flips/10min':>11}"
    ]
    for rule in sorted(ev.scores):
        s = ev.scores[rule]
        lines.append(
            f"{rule:<20} {s.true_positives:>4} {s.false_positives:>4} {s.misses:>4} "
            f"{f(s.precision, '.2f'):>9} "
            f"{f(s.recall, '.2f'):>7} {f(s.median_detect_s, '.0f') + ' s':>10} "
            f"{f(s.worst_detect_s, '.0f') + ' s':>9} {f(s.flips_per_10_min, '.2f'):>11}"
        )
    return "\n".join(lines)
