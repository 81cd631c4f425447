"""Fixtures the live-source tests share: real processes inside and outside a job."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.sources.live.helpers import children_of

CHILD = """
import os, subprocess, sys, time
if len(sys.argv) > 1:  # spawn a grandchild with an emptied environment
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env={})
print("ready", flush=True)
end = time.monotonic() + 600
while time.monotonic() < end:
    t = time.perf_counter() + 0.01
    while time.perf_counter() < t:
        pass
    time.sleep(0.01)
"""


@pytest.fixture
def job_children() -> Iterator[tuple[subprocess.Popen[str], subprocess.Popen[str]]]:
    """``(member, outsider)``: half-busy processes inside and outside job 990011.

    The member has ``SLURM_JOB_ID`` in its environment and a grandchild with
    an emptied one, whose membership only the process tree can tell.
    """
    env_in = {**os.environ, "SLURM_JOB_ID": "990011"}
    env_out = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    member = subprocess.Popen(
        [sys.executable, "-c", CHILD, "spawn"], env=env_in, stdout=subprocess.PIPE, text=True
    )
    outsider = subprocess.Popen(
        [sys.executable, "-c", CHILD], env=env_out, stdout=subprocess.PIPE, text=True
    )
    try:
        for p in (member, outsider):
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        yield member, outsider
    finally:
        for p in (member, outsider):
            for child in children_of(p.pid):
                with contextlib.suppress(OSError):
                    os.kill(child, 9)
            p.kill()
            p.wait(timeout=5)
            if p.stdout is not None:
                p.stdout.close()
