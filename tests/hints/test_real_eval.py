"""Real logs from public repositories with a documented verdict (../shared/traces/verdicts,
its README gives the evidence for each from outside the log): ``report`` must reach it.

Each row of ``expected.tsv`` is reported as a user runs it (``bench/real_eval.py`` runs
``gputop-hints report FILE ARGS --json`` in a child process) and must show a finding or
GPU verdict matching ``want`` and none at warning or worse matching ``forbid``. Rows not
met yet are strict xfails whose reason says what goes wrong: meeting one turns its xfail
into a failure, so this table is kept true. Skipped without ../shared beside the checkout.
"""

from __future__ import annotations

import sys

import pytest

from tests.support.paths import REPO

if str(REPO / "bench") not in sys.path:
    sys.path.insert(0, str(REPO / "bench"))

import real_eval

STILL_WRONG: dict[str, str] = {}
"""Rows of expected.tsv not met yet (none since issue 41)."""

ROWS = {row.file: row for row in real_eval.load_rows()} if real_eval.EXPECTED.exists() else {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=STILL_WRONG[n]))
        if n in STILL_WRONG
        else n
        for n in sorted(ROWS)
    ]
    or [
        pytest.param(
            "", marks=pytest.mark.skip(reason=f"{real_eval.EXPECTED} is not beside this checkout")
        )
    ],
)
def test_report_reaches_the_documented_verdict(name: str) -> None:
    row = real_eval.score(ROWS[name])
    assert not row.error, row.error
    assert row.met_want, f"wanted /{row.want}/, found {row.found}"
    assert not row.forbidden, f"warned about {row.forbidden} (forbidden /{row.forbid}/)"
