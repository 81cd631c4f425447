"""cores-contended: processes outside the attached SLURM job load the job's own cores."""

from __future__ import annotations

import pytest

from gputop_hints.hints.findings import Severity
from gputop_hints.hints.rules import cores_contended
from gputop_hints.history import History
from gputop_hints.model import JobInfo
from tests.hints.windows import P0, Case, Expect, G, H, P, Run, Tick, case, check_case

RULE = cores_contended.SPEC


def attached(
    foreign: float | None, in_job: bool | None = True, job_cpus: tuple[int, ...] = (0, 1, 2, 3)
) -> History:
    """Attached to job 4242 on 4 of 8 cores; others use ``foreign`` % of the job's cores."""
    job = JobInfo(job_id="4242", cpus=job_cpus, foreign_cpu_percent=foreign)
    tick = Tick((G(sm=60.0),), (P(cpu=60.0, in_job=in_job),), H(cores=4), job=job)
    return Run().feed([tick] * 12).history


CASES: list[Case] = [
    case(
        "cores-contended/others-use-40-percent",
        lambda: attached(40.0),
        Expect(
            P0,
            Severity.WARNING,
            evidence={"job's cores used by other processes (mean)": 40},
        ),
        engine=["cores-contended"],
    ),
    case(
        "cores-contended/boundary-25-percent", lambda: attached(25.0), Expect(P0, Severity.WARNING)
    ),
    case("cores-contended/near-miss-24.9-percent", lambda: attached(24.9), None),
    case("cores-contended/share-unknown", lambda: attached(None), None),
    case(
        "cores-contended/a-process-outside-the-job-is-not-flagged",
        lambda: attached(40.0, in_job=False),
        None,
    ),
    case(
        "cores-contended/not-attached-to-a-job",
        lambda: Run().feed([Tick((G(sm=60.0),), (P(cpu=60.0),))] * 12).history,
        None,
    ),
    case("cores-contended/job-with-no-known-cores", lambda: attached(40.0, job_cpus=()), None),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)
