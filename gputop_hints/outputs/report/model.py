"""The report's data: :class:`Report` and the time spent in each finding.

Built by :mod:`.build`, rendered by :mod:`.render`; it decides the exit code of
``--fail-on`` itself because that is a property of what was found, not of how it
is shown. No Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop_hints.hints.costs import CostTotals, Loss
from gputop_hints.hints.findings import Finding, Severity
from gputop_hints.hints.phases import Verdict
from gputop_hints.outputs.report.stats import GpuStats, ProcessStats
from gputop_hints.stacks import StackReading
from gputop_hints.streams import ReadCounters, StreamInfo

EXIT_OK = 0
EXIT_FINDINGS = 1
"""``--fail-on`` matched: a finding of that severity or worse was shown at some time."""


@dataclass
class EvidenceRange:
    """One piece of evidence over every evaluation that showed its finding."""

    count: int = 0
    total: float = 0.0
    low: float = 0.0
    high: float = 0.0

    def add(self, value: float) -> None:
        if self.count == 0 or value < self.low:
            self.low = value
        if self.count == 0 or value > self.high:
            self.high = value
        self.count += 1
        self.total += value

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None


@dataclass
class Tail:
    """Time a level finding was shown after its GPU's last activity so far: its GPU's
    teardown if no activity follows before the log ends (build drops it then)."""

    anchor: float | None
    """The GPU's last activity when the tail began (a later one ends the tail)."""
    last_before: float
    """The finding's last_seen before the tail."""
    seconds: float = 0.0
    episodes: int = 0


@dataclass
class FindingTime:
    """How long one finding (rule + subject) was shown over the recording."""

    finding: Finding
    """The finding as first shown at its worst severity: its evidence and advice."""
    seconds: float = 0.0
    first_seen: float = 0.0
    last_seen: float = 0.0
    episodes: int = 0
    worst: Severity = Severity.INFO
    evidence: dict[str, EvidenceRange] = field(default_factory=dict)
    """Metric name -> its mean and range over the evaluations that showed the finding."""
    tail: Tail | None = None
    credited_s: float = 0.0
    """Seconds credited to it before any was taken back (start-up, teardown)."""
    lost_weight: float = 0.0
    """Sum over its evaluations of credit x its share of its GPU lost (hints.costs)."""
    energy_weight: float = 0.0
    """... of credit x share x the GPU's power, where power was known."""
    unpowered_weight: float = 0.0
    """... of credit x share where power was not known."""
    early: list[tuple[float, float, bool]] = field(default_factory=list)
    early_episode: bool = False
    """The current episode began while its GPU's start-up was not settled."""
    """(time, seconds, new episode) of each showing while its GPU was maybe in start-up."""
    stack: tuple[float, StackReading] | None = None
    """The recorded py-spy reading of its process quoted under it, and when it was taken
    (issue 45): taken while it was shown, else the nearest (build._Stacks.quoted_for)."""

    def hold_tail(self, anchor: float | None, credit: float, new_episode: bool) -> None:
        """This evaluation's credit lies after the GPU's last activity (``anchor``)."""
        if self.tail is None or self.tail.anchor != anchor:
            self.tail = Tail(anchor, self.last_seen if self.seconds else self.first_seen)
        self.tail.seconds += credit
        self.tail.episodes += new_episode

    def end_tail(self) -> None:
        """Shown inside a run again: what was held is the run's."""
        self.tail = None

    def add_loss(self, credit: float, loss: Loss | None) -> None:
        """Take in one evaluation's cost: its share of the GPU over ``credit`` seconds."""
        self.credited_s += credit
        if loss is None:
            return
        self.lost_weight += credit * loss.share
        if loss.watts is None:
            self.unpowered_weight += credit * loss.share
        else:
            self.energy_weight += credit * loss.share * loss.watts

    def _kept(self, weight: float) -> float:
        """``weight`` scaled to the seconds it is still shown (some may be taken back)."""
        return weight * self.seconds / self.credited_s if self.credited_s > 0 else 0.0

    @property
    def lost_s(self) -> float:
        """GPU-seconds lost under it (hints.costs): its time shown x its mean share."""
        return self._kept(self.lost_weight)

    @property
    def energy_j(self) -> float:
        return self._kept(self.energy_weight)

    @property
    def unpowered_s(self) -> float:
        return self._kept(self.unpowered_weight)

    def add_evidence(self, finding: Finding) -> None:
        """Take in one evaluation's evidence (its known values; unknown ones are skipped)."""
        for e in finding.evidence:
            if e.value is not None:
                self.evidence.setdefault(e.metric, EvidenceRange()).add(float(e.value))


@dataclass
class Report:
    """A post-mortem of one recording: statistics, time in each finding, data quality."""

    info: StreamInfo
    counters: ReadCounters
    """What reading the file found: malformed lines, GPUs seen, format facts."""
    samples: int
    start: float | None
    end: float | None
    interval_s: float | None
    gpus: list[GpuStats]
    findings: list[FindingTime]
    rule_seconds: dict[str, float]
    """Seconds with at least one subject of the rule shown."""
    not_evaluated: dict[str, list[str]]
    """Rule -> the metrics it needs that the file lacks."""
    missing: list[str]
    notes: list[str]
    hint_stride: int
    hint_evaluations: int
    gaps: int = 0
    gap_seconds: float = 0.0
    longest_gap_s: float = 0.0
    processes: list[ProcessStats] = field(default_factory=list)
    """Every GPU process seen in the fully decoded ticks, heaviest first."""
    processes_dropped: int = 0
    """Light, short-lived processes left out to keep memory bounded (churn)."""
    verdicts: list[Verdict] = field(default_factory=list)
    """Each GPU's verdict over the whole file (hints.phases), by index."""

    @property
    def duration_s(self) -> float:
        if self.start is None or self.end is None:
            return 0.0
        return self.end - self.start + (self.interval_s or 0.0)

    @property
    def observed_s(self) -> float:
        """Sampled time: ticks x interval (what time-in-finding percentages refer to)."""
        return self.samples * (self.interval_s or 0.0)

    def worst_severity(self) -> Severity | None:
        return max((f.worst for f in self.findings), default=None)

    def exit_code(self, fail_on: str | None) -> int:
        """0, or 1 when ``fail_on`` ("warning"/"critical") was reached by a shown finding."""
        if fail_on is None:
            return EXIT_OK
        try:
            level = Severity[fail_on.upper()]
        except KeyError:
            raise ValueError(f"fail_on must be 'warning' or 'critical', got {fail_on!r}") from None
        worst = self.worst_severity()
        return EXIT_FINDINGS if worst is not None and worst >= level else EXIT_OK

    def fail_reason(self, fail_on: str | None) -> str | None:
        """Why ``--fail-on`` is met, in one line (None: it is not): the worst finding
        that met it, where and when, and how many others did."""
        if self.exit_code(fail_on) == EXIT_OK or fail_on is None:
            return None
        level = Severity[fail_on.upper()]
        met = [ft for ft in self.findings if ft.worst >= level]
        first = met[0]
        others = f" (and {len(met) - 1} more)" if len(met) > 1 else ""
        subject = first.finding.subject
        where = f"GPU {subject.gpu_index}" + (f" pid {subject.pid}" if subject.pid else "")
        rule = first.finding.rule + (f"/{first.finding.subtype}" if first.finding.subtype else "")
        return (
            f"--fail-on {fail_on}: met by {rule} ({first.worst.label}) on {where}, shown "
            f"{first.seconds:.0f} s in {first.episodes} episode(s){others}"
        )

    def costs(self) -> CostTotals:
        """GPU-time and energy lost under the findings shown (hints.costs), of the GPUs
        x the log's duration."""
        by_rule: dict[str, float] = {}
        energy = unpowered = 0.0
        powered = False
        for ft in self.findings:
            lost = ft.lost_s
            if lost <= 0.0:
                continue
            rule = ft.finding.rule
            by_rule[rule] = by_rule.get(rule, 0.0) + lost
            energy += ft.energy_j
            unpowered += ft.unpowered_s
            powered = powered or ft.energy_weight > 0.0
        return CostTotals(
            gpu_seconds=len(self.gpus) * self.duration_s,
            lost_by_rule=dict(sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0]))),
            energy_j=energy if powered else None,
            unpowered_s=unpowered,
        )

    def share(self, seconds: float) -> float | None:
        """``seconds`` as a percentage of the sampled time (None when nothing was sampled)."""
        observed = self.observed_s
        return seconds / observed * 100.0 if observed > 0 else None
