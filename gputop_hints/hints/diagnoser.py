"""History + hint engine, owned in one place: feed a snapshot, get findings.

Every consumer of the hints -- the TUI, ``report``, ``--once``, the demo
scoring and the field corpus -- puts ticks through a :class:`Diagnoser`, so the
same data gives the same findings wherever it is looked at. The window choice
lives here:

* the history covers what the rules read (``general.window_s``, the slow
  window, the low-utilization window; never less than
  :data:`~gputop_hints.history.DEFAULT_WINDOW_S`), unless the caller names its
  own span (the TUI's sparkline ``--window``: a span shorter than the slow
  window shortens what the slow-window checks can see);
* when the snapshots' own interval changes (a replayed recording re-started at
  another ``--interval``, an imported log whose spacing changes), the history
  is started again at the new interval -- a ring sized for 1 s ticks would hold
  a different span of 5 s ticks -- while the engine, and with it each finding's
  hysteresis and "since", carries on;
* :meth:`Diagnoser.one_off` (``--once``) has no time to wait out hysteresis:
  every condition shows the moment it holds, over every tick given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gputop_hints.hints.costs import CostMeter
from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Finding
from gputop_hints.hints.phases import GpuVerdicts
from gputop_hints.hints.rules import ALL_RULES, RuleSpec
from gputop_hints.hints.rules.signals import LEVEL_SAMPLES
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.history import DEFAULT_WINDOW_S, History
from gputop_hints.model import Snapshot


def history_window_s(thresholds: Thresholds) -> float:
    """How much history the rules read at most, in seconds (at least the default window)."""
    return max(
        DEFAULT_WINDOW_S,
        thresholds.general.window_s,
        thresholds.general.slow_window_s,
        thresholds.low_utilization.window_s,
    )


def history_span_s(window_s: float, interval_s: float) -> float:
    """The history's span at ``interval_s``: ``window_s``, stretched so that a coarse log
    still holds the readings a level is judged over (``LEVEL_SAMPLES``; a 60 s log's
    120 s would hold 3)."""
    return max(window_s, LEVEL_SAMPLES * interval_s)


class Diagnoser:
    """One run's history and hint engine: :meth:`feed` a snapshot, get the visible findings."""

    def __init__(
        self,
        thresholds: Thresholds | None = None,
        *,
        interval_s: float = 1.0,
        window_s: float | None = None,
        hysteresis: bool = True,
        rules: Sequence[RuleSpec] = ALL_RULES,
        verdicts: bool = True,
        costs: bool = True,
    ) -> None:
        """``window_s``: how much history to keep; None (the default) keeps what
        the rules read (:func:`history_window_s`). ``hysteresis=False`` shows every
        condition as soon as it holds."""
        self.thresholds = thresholds if thresholds is not None else Thresholds.defaults()
        self.window_s = window_s if window_s is not None else history_window_s(self.thresholds)
        self._hysteresis = hysteresis
        self._rules = rules
        self.history = History(history_span_s(self.window_s, interval_s), interval_s)
        self.engine = HintEngine(self.thresholds, rules=rules, hysteresis=hysteresis)
        self.findings: tuple[Finding, ...] = ()
        """The findings visible after the latest evaluation, worst first."""
        self._with_verdicts = verdicts
        self.verdicts = GpuVerdicts()
        """Each GPU's verdict over every tick fed (hints.phases); not fed with
        ``verdicts=False`` (a report keeps its own, over every tick of the file)."""
        self._with_costs = costs
        self.costs = CostMeter()
        """GPU-time and energy lost under the findings since the first tick (hints.costs);
        not fed with ``costs=False`` (a report credits its own findings' times)."""

    @classmethod
    def one_off(
        cls,
        snapshots: Sequence[Snapshot],
        thresholds: Thresholds | None = None,
    ) -> Diagnoser:
        """A diagnoser for a one-off summary of ``snapshots`` (context first): the
        window spans all of them, no hysteresis. Feed them with :meth:`feed_all`."""
        if not snapshots:
            raise ValueError("a one-off diagnosis needs at least one snapshot")
        interval = snapshots[-1].interval_s
        span = max(snapshots[-1].timestamp - snapshots[0].timestamp, 1.0) + interval * 2
        return cls(thresholds, interval_s=interval, window_s=span, hysteresis=False)

    @property
    def interval_s(self) -> float:
        return self.history.interval_s

    @property
    def last_cost_s(self) -> float:
        """Wall time the latest evaluation took (for benchmarks)."""
        return self.engine.last_cost_s

    def append(self, snapshot: Snapshot) -> None:
        """Take a tick into the history without evaluating the rules (see :meth:`evaluate`)."""
        if snapshot.interval_s != self.history.interval_s and snapshot.interval_s > 0:
            self.history = History(
                history_span_s(self.window_s, snapshot.interval_s), snapshot.interval_s
            )
        self.history.append(snapshot)
        if self._with_verdicts:
            self.verdicts.add(snapshot)

    def evaluate(self) -> tuple[Finding, ...]:
        """Run the rules on the newest window; return (and keep) the visible findings."""
        self.findings = self.engine.update(self.history)
        if self._with_costs:
            self.costs.add(self.findings, self.history)
        return self.findings

    def feed(self, snapshot: Snapshot) -> tuple[Finding, ...]:
        """Append one tick and evaluate: the visible findings after it."""
        self.append(snapshot)
        return self.evaluate()

    def feed_all(self, snapshots: Iterable[Snapshot]) -> tuple[Finding, ...]:
        """Feed ticks in order; the findings visible after the last."""
        for snap in snapshots:
            self.feed(snap)
        return self.findings

    def restart(self) -> None:
        """Forget every tick and every finding (a replay seek: time jumped)."""
        interval = self.history.interval_s
        self.history = History(history_span_s(self.window_s, interval), interval)
        self.engine = HintEngine(self.thresholds, rules=self._rules, hysteresis=self._hysteresis)
        self.findings = ()
        self.verdicts = GpuVerdicts()
        self.costs.restart()

    # --- questions about the visible findings --------------------------------

    def worst_for_process(self, pid: int, gpu_index: int) -> Finding | None:
        return self.engine.worst_for_process(pid, gpu_index)
