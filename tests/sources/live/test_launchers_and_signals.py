"""Launchers found by walking real parent pids; signals sent to real processes."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gputop_hints.model import GpuProcess
from gputop_hints.sources.live.launchers import LauncherFinder
from gputop_hints.sources.live.signals import SignalTarget, send_signal
from gputop_hints.sources.live.source import LiveSource
from tests.sources.live.helpers import two_ticks
from tests.support.fake_nvml import FakeNvml, make_gpus

LAUNCHER_SCRIPT = """\
import subprocess, sys
child = subprocess.Popen(["sleep", "60"])
print(child.pid, flush=True)
child.wait()
"""


@contextlib.contextmanager
def launched(tmp_path: Path, script_text: str) -> Iterator[tuple[int, int]]:
    """A process whose script is named ``torchrun`` and its ``sleep`` child: (launcher, rank)."""
    script = tmp_path / "torchrun"
    script.write_text(script_text)
    launcher = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
    try:
        assert launcher.stdout is not None
        rank = int(launcher.stdout.readline())
        yield launcher.pid, rank
    finally:
        for proc in psutil.Process(launcher.pid).children():
            proc.kill()
        launcher.kill()
        launcher.wait()
        if launcher.stdout is not None:
            launcher.stdout.close()


@pytest.fixture
def torchrun_tree(tmp_path: Path) -> Iterator[tuple[int, int]]:
    with launched(tmp_path, LAUNCHER_SCRIPT) as pids:
        yield pids


def test_a_rank_is_grouped_under_the_torchrun_that_started_it(
    torchrun_tree: tuple[int, int],
) -> None:
    launcher_pid, rank_pid = torchrun_tree
    rank = GpuProcess(pid=rank_pid, gpu_index=0, create_time=psutil.Process(rank_pid).create_time())
    finder = LauncherFinder()
    processes, launchers = finder.attach([rank])
    assert processes[0].launcher_pid == launcher_pid
    assert [(launcher.pid, launcher.kind) for launcher in launchers] == [
        (launcher_pid, "torchrun")
    ]
    finder.attach([rank])
    assert finder.walks == 1  # the walk is made once per process


def test_a_process_without_a_launcher_stays_on_its_own() -> None:
    me = psutil.Process()
    processes, launchers = LauncherFinder().attach(
        [GpuProcess(pid=me.pid, gpu_index=0, create_time=me.create_time())]
    )
    assert processes[0].launcher_pid is None and launchers == ()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def target_of(proc: subprocess.Popen[bytes]) -> SignalTarget:
    real = psutil.Process(proc.pid)
    return SignalTarget(proc.pid, real.username(), "sleep 60", real.create_time())


def test_sigint_is_sent_to_a_live_process(sleeper: subprocess.Popen[bytes]) -> None:
    result = send_signal(target_of(sleeper), "SIGINT", source_kind="live", readonly=False)
    assert result.sent
    assert sleeper.wait(timeout=30) == -2


def test_an_exited_process_is_no_such_process(sleeper: subprocess.Popen[bytes]) -> None:
    target = target_of(sleeper)
    sleeper.kill()
    sleeper.wait()
    result = send_signal(target, "SIGTERM", source_kind="live", readonly=False)
    assert not result.sent and "no such process" in result.message


def test_a_reused_pid_is_not_signalled(sleeper: subprocess.Popen[bytes]) -> None:
    target = target_of(sleeper)
    assert target.create_time is not None
    older = SignalTarget(target.pid, target.user, target.command, target.create_time - 3600)
    result = send_signal(older, "SIGKILL", source_kind="live", readonly=False)
    assert not result.sent and "another process" in result.message
    assert sleeper.poll() is None


@pytest.mark.parametrize(("kind", "readonly"), [("demo", False), ("replay", False), ("live", True)])
def test_demo_replay_and_readonly_never_signal(
    sleeper: subprocess.Popen[bytes], kind: str, readonly: bool
) -> None:
    result = send_signal(target_of(sleeper), "SIGKILL", source_kind=kind, readonly=readonly)
    assert not result.sent
    assert sleeper.poll() is None


@pytest.mark.skipif(psutil.Process().uids().effective == 0, reason="root may signal anyone")
def test_another_users_process_is_not_permitted() -> None:
    init = psutil.Process(1)
    target = SignalTarget(1, init.username(), "init", init.create_time())
    result = send_signal(target, "SIGTERM", source_kind="live", readonly=False)
    assert not result.sent and "not permitted" in result.message


SPINNING_LAUNCHER = """\
import subprocess, sys, time
child = subprocess.Popen(["sleep", "60"])
print(child.pid, flush=True)
end = time.monotonic() + 30
while time.monotonic() < end and child.poll() is None:
    pass  # a launcher busy on a core of its own (a log-tailing loop gone wrong)
"""


@pytest.mark.parametrize(
    ("script_text", "busy"), [(SPINNING_LAUNCHER, True), (LAUNCHER_SCRIPT, False)]
)
def test_the_live_source_measures_each_launchers_own_cpu(
    tmp_path: Path, script_text: str, busy: bool
) -> None:
    with (
        launched(tmp_path, script_text) as (launcher_pid, rank),
        FakeNvml(make_gpus(1, [[rank]])),
    ):
        source = LiveSource(detect_job=False)
        # What the kernel charged the launcher over the same stretch, read independently:
        # a loaded host may give the spinner less than a core, and the source must say so.
        launcher = psutil.Process(launcher_pid)
        used_before, wall_before = sum(launcher.cpu_times()[:2]), time.monotonic()
        first, second = two_ticks(source, 0.6)
        used = sum(launcher.cpu_times()[:2]) - used_before
        share = 100.0 * used / (time.monotonic() - wall_before)
        source.close()
    assert [(x.pid, x.kind) for x in second.launchers] == [(launcher_pid, "torchrun")]
    assert first.launchers[0].cpu_percent is None  # no CPU % before a second reading
    cpu = second.launchers[0].cpu_percent
    assert cpu is not None
    if busy:
        assert share > 20, f"the spinner got {share:.0f} % of a core: the host is too busy"
        assert abs(cpu - share) < 15, (cpu, share)
    else:
        assert cpu < 20, cpu
