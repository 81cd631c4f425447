"""unused-gpu: a GPU allocated to the attached SLURM job with no process and no kernel."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import unused_gpu
from gputop_hints.history import History
from gputop_hints.model import JobInfo
from tests.hints.windows import Case, Expect, G, P, Run, Tick, apply, case, check_case

RULE = unused_gpu.SPEC
EVERY_S = 10.0


def job_of_two(
    seconds: float,
    gpu1_sm: float = 0.0,
    gpu1_gib: float = 0.5,
    gpu1_process: bool = False,
    gpus: tuple[int, ...] | None = (0, 1),
    attached: bool = True,
) -> History:
    """Job 4242 holds GPUs 0 and 1; its one process trains on GPU 0 (~95 %), and GPU 1
    reads ``gpu1_sm`` with ``gpu1_gib`` used: ``seconds`` of readings, one every 10 s,
    each standing for its 10 s."""
    job = JobInfo(job_id="4242", cpus=(0, 1, 2, 3), gpu_indices=gpus) if attached else None
    procs = [P(pid=500, gpu=0, vram_gib=30.0, sm=95.0)]
    if gpu1_process:
        procs.append(P(pid=501, gpu=1, vram_gib=gpu1_gib, sm=gpu1_sm))
    tick = Tick(
        (G(index=0, sm=95.0, vram_gib=31.0), G(index=1, sm=gpu1_sm, vram_gib=gpu1_gib)),
        tuple(procs),
        job=job,
    )
    return Run(EVERY_S, history_s=1200.0).feed([tick] * round(seconds / EVERY_S)).history


CASES: list[Case] = [
    case(
        "unused-gpu/ten-minutes-with-no-process",
        lambda: job_of_two(600.0),
        Expect(
            Subject(1),
            Severity.WARNING,
            evidence={"no process and no kernel for": 600, "job's GPUs with a process": 1},
        ),
    ),
    case("unused-gpu/near-miss-nine-minutes", lambda: job_of_two(590.0), None),
    case(
        # a process loading its dataset before its first kernel: idle-holding-vram's, if any
        "unused-gpu/a-process-on-it",
        lambda: job_of_two(900.0, gpu1_process=True),
        None,
    ),
    case("unused-gpu/something-loaded-on-it", lambda: job_of_two(900.0, gpu1_gib=2.0), None),
    case("unused-gpu/running-kernels", lambda: job_of_two(900.0, gpu1_sm=40.0), None),
    # outside a job (or a job whose GPUs are not known) a GPU with no process is free
    case("unused-gpu/not-attached", lambda: job_of_two(900.0, attached=False), None),
    case("unused-gpu/job-gpus-unknown", lambda: job_of_two(900.0, gpus=None), None),
    case("unused-gpu/not-the-jobs-gpu", lambda: job_of_two(900.0, gpus=(0,)), None),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_it_says_which_gpus_the_job_uses_and_how_to_ask_for_fewer() -> None:
    [found] = apply(RULE, job_of_two(1200.0))
    assert "allocated to job 4242" in found.summary and "uses GPU 0" in found.summary
    assert "20 min" in found.summary
    assert "--gres=gpu:1" in found.advice[0]
    assert "--nproc-per-node=2" in found.advice[1]
