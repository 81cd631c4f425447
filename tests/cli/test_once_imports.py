"""``--once`` loads only what a one-off summary uses (issue 49 item 3: its start-up CPU).

Each run is a child Python that runs the real CLI -- on the fake NVML (at nvitop's libnvml
boundary) with a real sleeping process on its GPU, or on the demo -- and then lists what
landed in ``sys.modules``. The stack reader (py-spy's sampler and its thread pool) is
loaded only where a process is warned on (tests/cli/test_once_stacks.py reads one), and
the monitor's key list only for ``--help``, the SLURM job's membership and ``scontrol``
callers only where a job is followed, and on a plain node (no job in the environment or
the cgroup) not even the job detection.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from gputop_hints.sources.live.slurm.proc_files import may_run_in_job

NOT_ON_THE_ONCE_PATH = (
    "gputop_hints.stacks",
    "gputop_hints.tui.keys",
    "concurrent.futures",
    "textual",
    "rich",
    "gputop_hints.sources.live.slurm.membership",
    "gputop_hints.sources.live.slurm.scontrol",
)

ON_A_PLAIN_NODE_NOT = (
    "gputop_hints.sources.live.slurm.detect",
    "gputop_hints.sources.live.slurm.parse",
)
"""Not loaded where this process runs in no SLURM job (the demo still asks, for its header)."""

_CHILD = """
import contextlib, io, json, sys
{setup}
from gputop_hints.cli import main

out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = main({argv!r})
assert rc == 0, rc
assert out.getvalue().strip(), "no summary printed"
loaded = sorted(m for m in {modules!r} if m in sys.modules)
print(json.dumps(loaded))
"""

_FAKE_NODE = """
from tests.support.fake_nvml import FakeNvml, make_gpus
FakeNvml(make_gpus(1, [[{pid}]])).install()
"""


@pytest.fixture
def sleeper() -> Iterator[int]:
    proc = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL)
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _loaded(
    argv: list[str], setup: str = "", modules: tuple[str, ...] = NOT_ON_THE_ONCE_PATH
) -> list[str]:
    code = _CHILD.format(setup=setup, argv=argv, modules=modules)
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "GPUTOP_HINTS_CONFIG" and not k.startswith("SLURM_")
    }
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_once_on_a_gpu_node_loads_no_stack_reader_and_no_key_list(
    sleeper: int, json_out: bool
) -> None:
    argv = ["--once", "--duration", "0.25", "--interval", "0.25"] + (["--json"] if json_out else [])
    modules: tuple[str, ...] = NOT_ON_THE_ONCE_PATH
    if not may_run_in_job({}):  # a CI runner inside a SLURM job detects it, rightly
        modules += ON_A_PLAIN_NODE_NOT
    assert _loaded(argv, _FAKE_NODE.format(pid=sleeper), modules) == []


def test_once_on_the_demo_loads_no_stack_reader_and_no_key_list() -> None:
    assert _loaded(["--demo", "--once", "--duration", "1"]) == []


def test_help_still_ends_with_the_monitor_keys() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gputop_hints", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "keys in the monitor:" in result.stdout
    assert "keys in replay, besides:" in result.stdout
