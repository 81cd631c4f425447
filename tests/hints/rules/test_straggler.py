"""straggler: one rank of a multi-GPU job well below its peers."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import straggler
from tests.hints.windows import (
    TORCHRUN,
    Case,
    Expect,
    case,
    check_case,
    ddp,
)

RULE = straggler.SPEC


CASES: list[Case] = [
    case(
        "straggler/one-rank-of-four",
        lambda: ddp([95.0, 96.0, 45.0, 94.0], [TORCHRUN] * 4),
        Expect(
            Subject(2, 102),
            Severity.WARNING,
            evidence={"SM % (mean)": 45, "peers' median SM % (GPUs 0, 1, 3)": 95},
        ),
        # the peers read busy while they wait in collectives: no compute-bound for them
        engine=["straggler"],
    ),
    case(
        "straggler/boundary-25-points-below",
        lambda: ddp([95.0, 95.0, 70.0, 95.0], [TORCHRUN] * 4),
        Expect(Subject(2, 102), Severity.WARNING),
    ),
    case(
        "straggler/near-miss-24-points-below",
        lambda: ddp([95.0, 95.0, 71.0, 95.0], [TORCHRUN] * 4),
        None,
        engine=["compute-bound"],  # GPUs 0, 1, 3 -- see test_compute_bound_on_peers
    ),
    case(
        # peers_sm_above_percent is inclusive: peers at 40 % already count as busy
        "straggler/near-miss-peers-at-39",
        lambda: ddp([39.0, 39.0, 10.0, 39.0], [TORCHRUN] * 4),
        None,
    ),
    case(
        "straggler/unrelated-jobs-are-not-peers",
        lambda: ddp(
            [95.0, 96.0, 45.0, 94.0],
            ["python a.py", "python b.py", "python c.py", "python d.py"],
        ),
        None,
        engine=["compute-bound"],
    ),
    case(
        "straggler/same-command-other-users-are-not-peers",
        lambda: ddp([95.0, 96.0, 45.0, 94.0], [TORCHRUN] * 4, ["a", "b", "c", "d"]),
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)
