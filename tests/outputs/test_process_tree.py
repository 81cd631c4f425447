"""The process tree, as a pure function of processes, launchers and findings."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Finding, Severity, Subject
from gputop_hints.model import GpuProcess, Launcher, WorkerProcess
from gputop_hints.outputs.process_tree import build_tree, launcher_key, process_key
from gputop_hints.sources.live.launchers import launcher_kind

TORCHRUN = Launcher(pid=100, kind="torchrun", user="ana", command="torchrun t.py")


def rank(pid: int, gpu: int, workers: int = 0, launcher: int | None = 100) -> GpuProcess:
    return GpuProcess(
        pid=pid,
        gpu_index=gpu,
        user="ana",
        command="python t.py",
        workers=tuple(WorkerProcess(pid=pid + 1 + w, cpu_percent=50.0) for w in range(workers)),
        launcher_pid=launcher,
    )


def finding(pid: int, gpu: int, severity: Severity, label: str) -> Finding:
    return Finding(
        rule="input-starved",
        subject=Subject(gpu_index=gpu, pid=pid),
        severity=severity,
        label=label,
        summary="",
        advice=(),
        evidence=(),
    )


def shape(rows: list) -> list[tuple[str, int, int]]:  # type: ignore[type-arg]
    return [(row.kind, row.depth, row.pid) for row in rows]


def test_ranks_sit_under_their_launcher_where_the_first_rank_would_stand() -> None:
    alone = rank(50, 3, launcher=None)
    processes = [rank(200, 0), alone, rank(300, 1)]
    rows = build_tree(processes, [TORCHRUN])
    assert shape(rows) == [
        ("launcher", 0, 100),
        ("process", 1, 200),
        ("process", 1, 300),
        ("process", 0, 50),
    ]
    assert rows[0].children == 2 and rows[0].expanded
    assert [row.last for row in rows[1:3]] == [False, True]


def test_a_launcher_not_in_the_snapshot_leaves_its_ranks_at_the_top() -> None:
    rows = build_tree([rank(200, 0, launcher=999)], [TORCHRUN])
    assert shape(rows) == [("process", 0, 200)]


def test_launcher_rolls_up_its_ranks_findings_worst_first() -> None:
    processes = [rank(200, 0), rank(300, 1), rank(400, 2)]
    findings = {
        (200, 0): (finding(200, 0, Severity.WARNING, "starved"),),
        (300, 1): (
            finding(300, 1, Severity.CRITICAL, "idle"),
            finding(300, 1, Severity.INFO, "ok"),
        ),
    }
    rollup = build_tree(processes, [TORCHRUN], findings)[0].rollup
    assert rollup is not None
    assert (rollup.findings, rollup.ranks_with_findings) == (3, 2)
    assert rollup.worst is not None and rollup.worst.label == "idle"


def test_folding_a_launcher_hides_its_ranks_and_unfolding_a_rank_shows_workers() -> None:
    processes = [rank(200, 0, workers=2), rank(300, 1)]
    folded = build_tree(processes, [TORCHRUN], toggled={launcher_key(100)})
    assert shape(folded) == [("launcher", 0, 100)]
    assert not folded[0].expanded and folded[0].children == 2
    default = build_tree(processes, [TORCHRUN])
    assert default[1].children == 2 and not default[1].expanded  # workers folded at first
    opened = build_tree(processes, [TORCHRUN], toggled={process_key(200, 0)})
    assert shape(opened) == [
        ("launcher", 0, 100),
        ("process", 1, 200),
        ("worker", 2, 201),
        ("worker", 2, 202),
        ("process", 1, 300),
    ]
    assert opened[2].process is processes[0]


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["torchrun", "--nproc-per-node=8", "train.py"], "torchrun"),
        (["/venv/bin/python3", "/venv/bin/torchrun", "train.py"], "torchrun"),
        (["python", "-u", "-m", "torch.distributed.run", "train.py"], "torchrun"),
        (["python", "-m", "torch.distributed.launch", "train.py"], "torchrun"),
        (["/usr/bin/deepspeed", "train.py"], "deepspeed"),
        (["python", "-m", "deepspeed.launcher.launch", "--world_info=x"], "deepspeed"),
        (["accelerate", "launch", "train.py"], "accelerate"),
        (["python", "/venv/bin/accelerate", "launch", "train.py"], "accelerate"),
        (["mpirun", "-np", "4", "python", "t.py"], "mpirun"),
        (["srun", "python", "t.py"], "srun"),
        (["accelerate", "config"], None),
        (["python", "train.py"], None),
        (["bash", "-c", "torchrun t.py"], None),
        ([], None),
    ],
)
def test_launchers_are_recognised_by_program_or_module(argv: list[str], kind: str | None) -> None:
    assert launcher_kind(argv) == kind
