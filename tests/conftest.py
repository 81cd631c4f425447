"""Shared fixtures: the single-node SLURM cluster (tests/slurm_cluster.py).

Started once per session, only when a test asks for it. Where SLURM is not
installed (or we are not root) the tests that need it skip with the reason --
except in CI (``CI=true``), where that is a failure: CI installs slurm-wlm and
munge and must run them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.slurm_cluster import SlurmCluster, unavailable_reason

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    reason = unavailable_reason()
    if reason is not None:
        if IN_CI:
            pytest.fail(f"{reason} (CI must run the SLURM tests)")
        pytest.skip(reason)
    cluster = SlurmCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
