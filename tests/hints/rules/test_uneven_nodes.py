"""uneven-nodes: a job across nodes where one node is far less busy, or holds far
different memory, than the median node (docs/hints.md#uneven-nodes)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import uneven_nodes
from gputop_hints.history import History
from tests.hints.windows import (
    THRESHOLDS,
    Case,
    Expect,
    G,
    H,
    Run,
    Tick,
    case,
    check_case,
)

RULE = uneven_nodes.SPEC


def nodes(
    levels: Sequence[tuple[str, float, float]],
    ticks: int = 70,
    power: Sequence[float] | None = None,
) -> History:
    """One GPU per node at a steady SM % and VRAM (GiB), and power (W, of a 700 W limit),
    for ``ticks`` 1 s ticks; no processes (a job read back from Prometheus has none)."""
    watts = power or [400.0] * len(levels)
    gpus = tuple(
        G(index=i, sm=sm, vram_gib=vram, node=node, power=watts[i], limit=700.0)
        for i, (node, sm, vram) in enumerate(levels)
    )
    return Run().feed([Tick(gpus, (), H())] * ticks).history


CASES: list[Case] = [
    case(
        "uneven/one-node-of-four-starved",
        lambda: nodes([("a", 95, 60), ("b", 94, 60), ("c", 30, 60), ("d", 96, 60)]),
        Expect(
            Subject(2),
            Severity.WARNING,
            subtype="less-busy",
            evidence={"node SM % (mean)": 30, "median node SM % (mean)": 94.5},
        ),
    ),
    case(
        # Rank 0 logs and evaluates: a few points (here 15) are not uneven.
        "uneven/near-miss-rank0-a-little-lower",
        lambda: nodes([("a", 80, 60), ("b", 95, 60), ("c", 92, 61)]),
        None,
    ),
    case(
        # Half the median but only 10 points below: a light job, not one waiting node.
        "uneven/near-miss-light-job",
        lambda: nodes([("a", 20, 10), ("b", 9, 10)]),
        None,
    ),
    case(
        "uneven/memory-off-by-half",
        lambda: nodes([("a", 95, 60), ("b", 95, 60), ("c", 94, 30)]),
        Expect(Subject(2), Severity.INFO, subtype="memory"),
    ),
    case(
        # NCCL spin: every node reads ~99 % busy, three at ~20 % of the 700 W limit and
        # node c at 80 %: c works, the others wait for it.
        "uneven/straggler-the-others-spin",
        lambda: nodes(
            [("a", 99, 60), ("b", 99, 60), ("c", 97, 60), ("d", 99, 60)],
            power=[140.0, 150.0, 560.0, 145.0],
        ),
        Expect(
            Subject(2),
            Severity.WARNING,
            subtype="straggler",
            evidence={"node power / limit (mean)": 80, "median node power / limit": 21.1},
        ),
    ),
    case(
        # All nodes working (busy at high power): a healthy job, no straggler.
        "uneven/near-miss-all-working",
        lambda: nodes(
            [("a", 99, 60), ("b", 99, 60), ("c", 97, 60)], power=[560.0, 600.0, 580.0]
        ),
        None,
    ),
    case(
        # GPUs of one machine (no node): never judged.
        "uneven/one-machine",
        lambda: nodes([(None, 95, 60), (None, 20, 60)]),  # type: ignore[list-item]
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_the_odd_node_of_three_is_named_and_not_its_normal_peers() -> None:
    """Against the median of *all* nodes: the median of the other two would sit halfway
    (62.5 + 31.5)/2 and call the normal nodes odd too."""
    levels = [
        uneven_nodes.NodeLevel("a", (0,), 95.0, 62 * 2**30),
        uneven_nodes.NodeLevel("b", (1,), 95.0, 62 * 2**30),
        uneven_nodes.NodeLevel("c", (2,), 24.0, 31 * 2**30),
    ]
    found = uneven_nodes.uneven(levels, THRESHOLDS.uneven_nodes)
    assert [(u.node, u.what) for u in found] == [("c", "busy"), ("c", "vram")]
    assert uneven_nodes.uneven(levels[:1], THRESHOLDS.uneven_nodes) == []
