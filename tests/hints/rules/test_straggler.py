"""straggler: one rank of a multi-GPU job well below its peers."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import straggler
from tests.hints.windows import (
    TORCHRUN,
    Case,
    Expect,
    G,
    H,
    P,
    Run,
    Tick,
    apply,
    case,
    check_case,
    ddp,
    ddp_ticks,
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


def test_a_bare_program_name_is_no_job() -> None:
    """An nvidia-smi table names a process by its program (``python``): on a shared
    server every unrelated job shares it, so it groups no ranks -- a GPU idle beside
    busy ones is no straggler there. The same GPUs with a command line are one."""
    assert apply(RULE, ddp([95.0, 96.0, 0.0, 94.0], ["python"] * 4)) == []
    assert apply(RULE, ddp([95.0, 96.0, 0.0, 94.0], [".../envs/torch/bin/python"] * 4)) == []
    [found] = apply(RULE, ddp([95.0, 96.0, 0.0, 94.0], ["python train.py"] * 4))
    assert found.subject == Subject(2, 102)


def test_one_process_on_several_gpus_is_no_job_of_ranks() -> None:
    """A process on GPUs 0 and 1 (nn.DataParallel, or a stray CUDA context on GPU 0
    beside its real work): one process, no collectives between ranks to wait in."""
    tick = Tick(
        (G(index=0, sm=0.0, vram_gib=2.0), G(index=1, sm=97.0, vram_gib=11.0)),
        (
            P(pid=300, gpu=0, vram_gib=1.5, command="python train.py --gpu 1"),
            P(pid=300, gpu=1, vram_gib=10.5, command="python train.py --gpu 1"),
        ),
        H(cores=32),
    )
    assert apply(RULE, Run().feed([tick] * 12).history) == []


def test_the_one_rank_that_never_waits_is_named_by_its_gaps() -> None:
    """Issue 41: three ranks sawtooth around 70 % -- each step they idle at the
    collective, waiting -- while one runs a steady 55 % without a gap. Its SM % is not
    25 points below theirs, and not all read busy: only its missing gaps mark it."""
    saw = [95.0, 95.0, 95.0, 0.0] * 4  # 71 %, a quarter of the time in gaps
    steady = [55.0] * 16
    history = Run().feed(ddp_ticks([saw, saw, steady, saw], [TORCHRUN] * 4)).history
    [found] = apply(RULE, history)
    assert found.subject == Subject(2, 102)
    assert found.label == "straggler: never waits (gaps)"
    assert "never waits" in found.summary and "GPUs 0, 1, 3" in found.summary
    # All four steady: no pace-setter to name.
    assert apply(RULE, Run().feed(ddp_ticks([steady] * 4, [TORCHRUN] * 4)).history) == []
    # Two steady ranks: which one the others wait for cannot be told.
    two = ddp_ticks([saw, steady, steady, saw], [TORCHRUN] * 4)
    assert apply(RULE, Run().feed(two).history) == []
