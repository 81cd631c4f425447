"""Every real log in ../shared/traces against its documented verdict.

The verdicts are bench/field/traces_expected.yaml.

Each log is read as ``gputop-hints report`` reads it and fed through History +
HintEngine with hysteresis, then judged by the field corpus's own rules (top
finding, must-show, must-not, healthy). Logs the hints still get wrong are
strict xfails whose reason says what goes wrong: fixing one turns its xfail
into a failure, so this table is kept true.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

import pytest

from gputop_hints.hints.diagnoser import history_span_s, history_window_s
from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Finding
from gputop_hints.history import History
from gputop_hints.sources.files import open_stream
from tests.support.paths import REPO, TRACES

if str(REPO / "bench") not in sys.path:
    sys.path.insert(0, str(REPO / "bench"))

from field.case import Case
from field.evaluate import CaseResult, _track, judge
from field.verdicts import Verdict, load_trace_verdicts

VERDICTS = load_trace_verdicts()

STILL_WRONG: dict[str, str] = {}
"""Shared traces whose documented verdict is not reached yet (none since issue 23)."""


@dataclass(frozen=True)
class _Scenario:
    interval_s: float


@dataclass(frozen=True)
class _Log:
    """What ``judge`` reads of a case, for a real log."""

    name: str
    verdict: Verdict
    scenario: _Scenario
    family: str = "traces"
    live: bool = False


def score(name: str) -> CaseResult:
    stream = open_stream(TRACES / name)
    engine = HintEngine()
    history: History | None = None
    ticks = 0

    def feed() -> Iterator[tuple[float, float, tuple[Finding, ...]]]:
        nonlocal history, ticks
        previous: float | None = None
        for snap in stream:
            if history is None:
                span = history_span_s(history_window_s(engine.thresholds), snap.interval_s)
                history = History(span, snap.interval_s)
            history.append(snap)
            ticks += 1
            # Time between rows, capped: the gap between two runs in one log is not "visible".
            dt = snap.interval_s
            if previous is not None:
                dt = max(0.0, min(snap.timestamp - previous, 10 * snap.interval_s))
            previous = snap.timestamp
            yield snap.timestamp, dt, engine.update(history)

    try:
        seen = _track(feed())
    finally:
        stream.close()
    # judge reads only name, family, live, scenario.interval_s and verdict of a case.
    return judge(cast(Case, _Log(name, VERDICTS[name], _Scenario(1.0))), seen, ticks)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=STILL_WRONG[n]))
        if n in STILL_WRONG
        else n
        for n in sorted(VERDICTS)
    ],
)
def test_real_log_gets_its_documented_verdict(name: str) -> None:
    if not (TRACES / name).exists():
        pytest.skip(f"{TRACES} is not beside this checkout")
    result = score(name)
    assert result.right, result.problems
