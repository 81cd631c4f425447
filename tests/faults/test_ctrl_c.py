"""Fault matrix, Ctrl-C in the full-screen monitor: it quits, exit status 130.

Users of top, htop and nvitop leave with Ctrl-C, and the README promises 130 (what
a shell reports for a program ended by SIGINT). In the full TUI the terminal is in
raw mode, so Ctrl-C arrives as a key: Textual's own binding only showed
``Press [b]ctrl+q[/b] to quit the app`` (its markup printed as it is) and stayed.
The terminal cases run the installed console script in a private tmux server;
the hung-NVML case drives the app with the fake NVML, as tests/faults/test_hangs.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputop_hints.model import JobInfo, Snapshot
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.tui.app import GputopApp
from tests.support.fake_nvml import FakeNvml, make_gpus
from tests.support.tmux_harness import SCRIPT, Tmux, tmux_session

SAFETY_S = 10.0
"""How long a quit may take before the test calls it hung (never asserted as a time)."""


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    yield from tmux_session()


def _quits_on_ctrl_c(tmux: Tmux, ready: str) -> None:
    tmux.wait_for(ready)
    tmux.keys("C-c")
    status = tmux.wait_until_exited()
    screen = tmux.screen()
    assert "Traceback" not in screen and "[b]" not in screen and "ctrl+q" not in screen, screen
    assert status == 130, screen


@pytest.mark.tmux
def test_ctrl_c_in_the_demo_monitor_quits_with_130(tmux: Tmux) -> None:
    """Ctrl-C in the full TUI (--demo): it quits, exit status 130, no markup or traceback shown.

    Before the fix it showed 'Press [b]ctrl+q[/b] to quit the app' and stayed."""
    tmux.start([str(SCRIPT), "--demo"], width=120, height=40)
    _quits_on_ctrl_c(tmux, "PID")


@pytest.mark.tmux
def test_ctrl_c_over_the_help_screen_quits_with_130(tmux: Tmux) -> None:
    """Ctrl-C with the help screen open (a screen binds Ctrl-C to copy): it quits, 130."""
    tmux.start([str(SCRIPT), "--demo"], width=120, height=40)
    tmux.wait_for("PID")
    tmux.keys("?")
    _quits_on_ctrl_c(tmux, "esc Back")


@pytest.mark.tmux
def test_ctrl_c_in_replay_quits_with_130(tmux: Tmux, tmp_path: Path) -> None:
    """Ctrl-C while replaying a recording of the demo: it quits, exit status 130."""
    recording = tmp_path / "x.jsonl"
    record = [str(SCRIPT), "record", "--demo", "-o", str(recording), "--duration", "2"]
    subprocess.run(
        [*record, "--interval", "0.25"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    tmux.start([str(SCRIPT), "replay", str(recording)], width=120, height=40)
    _quits_on_ctrl_c(tmux, "PID")


def test_ctrl_c_quits_with_130_while_an_nvml_call_hangs() -> None:
    """Ctrl-C in the live monitor while GPU 1 hangs in NVML: it quits, return code 130.

    The tick stuck in NVML runs on the sampler's thread; quitting closes the source,
    which wakes it (as q and SIGTERM do)."""
    codes: list[int | None] = []

    async def scenario() -> None:
        source = LiveSource(interval_s=0.25, detect_job=False)
        app = GputopApp(source, interval_s=0.25)
        async with app.run_test(size=(160, 40)) as pilot:
            gpus[1].hang()
            deadline = time.monotonic() + SAFETY_S
            while gpus[1].blocked_calls == 0 and time.monotonic() < deadline:
                await pilot.pause(0.05)
            assert gpus[1].blocked_calls > 0
            await pilot.press("ctrl+c")
            await pilot.pause()
        codes.append(app.return_code)

    gpus = make_gpus(2, sm=40)
    with FakeNvml(gpus):  # its exit releases the hung GPU
        thread = threading.Thread(target=lambda: asyncio.run(scenario()), daemon=True)
        thread.start()
        thread.join(SAFETY_S)
        assert not thread.is_alive(), "Ctrl-C did not end the monitor: it hung"
    assert codes == [130]


class ClusterView(DemoSource):
    """Demo GPUs presented as a job across two nodes, as ``--prometheus`` shows one."""

    kind = "prometheus"

    def sample(self) -> Snapshot:
        snap = super().sample()
        gpus = tuple(dataclasses.replace(g, node=f"node-{g.index % 2}") for g in snap.gpus)
        return dataclasses.replace(snap, gpus=gpus, processes=(), source="prometheus")


class JobView(DemoSource):
    """Demo GPUs inside an attached SLURM job (``srun --jobid ... gputop-hints``)."""

    def sample(self) -> Snapshot:
        job = JobInfo(job_id="4242", step_id="0", name="train", cpus=(0, 1), gpu_indices=(0,))
        return dataclasses.replace(super().sample(), job=job)


@pytest.mark.parametrize(
    ("view", "keys_first"),
    [
        (ClusterView, ()),
        (JobView, ()),
        (DemoSource, ("slash", "x")),  # the filter bar's input has Ctrl+C as copy
        (DemoSource, ("question_mark",)),
    ],
    ids=["cluster view", "job view", "filter bar open", "help open"],
)
async def test_ctrl_c_quits_with_130_in_the_job_and_cluster_views(
    view: type[DemoSource], keys_first: tuple[str, ...]
) -> None:
    """Ctrl-C in the cluster (--prometheus) and job views, over the filter bar and help: 130."""
    source = view("healthy", gpus=2, processes=4, seed=0)
    app = GputopApp(source, autostart=False)
    async with app.run_test(size=(140, 40)) as pilot:
        app.ingest(source.sample())
        await pilot.pause()
        for key in keys_first:
            await pilot.press(key)
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 130
