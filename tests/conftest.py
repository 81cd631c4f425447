"""Fixtures every test shares.

- ``isolated_environment`` (autouse): no test sees the user's configuration,
  themes, colour preference or time zone. A user theme named ``dark.yaml`` or a
  broken theme in ``~/.config/gputop-hints`` must not change a snapshot; a user's
  ``NO_COLOR`` must not change what a test asserts about colour; dates render in
  UTC. Tests that need one of these set it themselves with ``monkeypatch``.
- ``slurm_cluster``: the single-node SLURM cluster (tests/support/slurm_cluster.py),
  started once per session, only when a test asks for it. Where SLURM is not
  installed (or we are not root) the tests that need it skip with the reason --
  except in CI, where that is a failure: CI installs slurm-wlm and munge and must
  run them.

``bench/`` is put on the import path, so the tests can import the benchmarks'
modules as the benchmarks do (``field`` for the field corpus, ``scoring``,
``demo_eval``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# The package keeps dataclasses' compiled methods in the user's cache directory
# (gputop_hints/_classcache.py): the tests and every process they start keep theirs in
# one of the session's own, set before anything imports the package, and removed after.
_CACHE_HOME = tempfile.mkdtemp(prefix="gputop-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE_HOME
atexit.register(shutil.rmtree, _CACHE_HOME, ignore_errors=True)

BENCH = Path(__file__).resolve().parents[1] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from tests.support.ci import IN_CI  # noqa: E402
from tests.support.slurm_cluster import SlurmCluster, unavailable_reason  # noqa: E402

# Variables through which the user's machine could leak into a test's outcome.
USER_ENVIRONMENT = (
    "GPUTOP_HINTS_CONFIG",
    "GPUTOP_HINTS_ASCII",
    "NO_COLOR",
    "FORCE_COLOR",
    "TEXTUAL",
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_STEP_ID",
    "CUDA_VISIBLE_DEVICES",
)


@pytest.fixture(autouse=True)
def isolated_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """An empty config home, none of the user's overrides, and UTC."""
    config_home = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    for name in USER_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield config_home
    monkeypatch.undo()
    time.tzset()


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
