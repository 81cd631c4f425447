"""The stack sampler against real Python processes, read by real py-spy.

Each target is a small program written here, started as a child, that prints
``ready`` once it is in the loop the test reads. Skipped (with the reason) only
where py-spy is absent.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputop_hints.stacks import (
    INSTALL_REASON,
    PtraceEnv,
    classify,
    find_py_spy,
    refusal_reason,
    sample,
)
from tests.stacks.programs import WAITING_FOR_BATCH, start_program

PY_SPY = find_py_spy().path
needs_py_spy = pytest.mark.skipif(PY_SPY is None, reason="py-spy is not installed")


def _start(tmp_path: Path, source: str, python: str = sys.executable) -> subprocess.Popen[str]:
    return start_program(tmp_path / "target.py", source, python)


@pytest.fixture
def target(tmp_path: Path) -> Iterator[object]:
    started: list[subprocess.Popen[str]] = []

    def start(source: str) -> subprocess.Popen[str]:
        proc = _start(tmp_path, source)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


@needs_py_spy
def test_blocked_in_queue_get_under_next_reads_waiting_for_batch(target) -> None:
    proc = target(WAITING_FOR_BATCH)
    reading = classify(sample(proc.pid, samples=4, period_s=0.05))
    assert reading.reason is None
    assert reading.samples == 4
    top = reading.categories[0]
    assert top.name == "waiting-for-batch"
    assert top.share == 1.0
    assert top.top_frames[0].frame.function.endswith("__next__")
    assert top.top_frames[0].user


@needs_py_spy
def test_spinning_in_getitem_reads_loading_in_main_naming_it(target) -> None:
    proc = target(
        """
        class Images:
            def __getitem__(self, index):
                total = 0
                while True:
                    total += sum(range(200))

        def train():
            print("ready", flush=True)
            Images()[0]

        train()
        """
    )
    reading = classify(sample(proc.pid, samples=4, period_s=0.05))
    loading = reading.category("loading-in-main")
    assert loading is not None and loading.share == 1.0
    named = loading.top_frames[0].frame
    assert named.function.endswith("__getitem__")
    assert named.file.endswith("target.py")


@needs_py_spy
def test_a_line_calling_item_reads_host_device_sync_with_that_line(target, tmp_path) -> None:
    proc = target(
        """
        import time

        class Loss:
            def item(self):
                time.sleep(0.01)
                return 0.5

        def train():
            t = Loss()
            print("ready", flush=True)
            while True:
                x = t.item()

        train()
        """
    )
    reading = classify(sample(proc.pid, samples=6, period_s=0.05))
    sync = reading.category("host-device-sync")
    assert sync is not None and sync.share >= 0.5  # a few samples may land on the loop line
    line = (tmp_path / "target.py").read_text().splitlines().index("        x = t.item()") + 1
    frame = sync.top_frames[0].frame
    assert (Path(frame.file).name, frame.line) == ("target.py", line)
    assert frame.function == "train"


@needs_py_spy
def test_a_line_copying_to_the_device_reads_copying_to_gpu_with_that_line(target, tmp_path) -> None:
    """From pageable memory the host stages a ``.to(device)`` copy itself: the main
    thread's time is in the copy, named by the line that asks for it (a method named
    ``to`` is a wrapper: its caller's line)."""
    proc = target(
        """
        class Pageable:
            def to(self, device, non_blocking=False):
                total = 0
                while True:
                    total += sum(range(200))

        def train():
            device = "cuda:0"
            print("ready", flush=True)
            while True:
                batch = Pageable().to(device)

        train()
        """
    )
    reading = classify(sample(proc.pid, samples=6, period_s=0.05))
    copying = reading.category("copying-to-gpu")
    assert copying is not None and copying.share >= 0.5
    line = (tmp_path / "target.py").read_text().splitlines().index(
        "        batch = Pageable().to(device)"
    ) + 1
    frame = copying.top_frames[0].frame
    assert (Path(frame.file).name, frame.line, frame.function) == ("target.py", line, "train")


@needs_py_spy
def test_a_pid_that_does_not_exist_says_it_is_gone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: its pid names no process now
    reading = classify(sample(proc.pid, samples=3, period_s=0.01))
    assert reading.samples == 0
    assert reading.reason == f"process {proc.pid} is gone"


def _can_refuse() -> str | None:
    if os.geteuid() != 0:
        return "needs root to start a target as another user"
    for tool in ("setpriv", "su"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    if not Path("/usr/bin/python3").is_file():
        return "needs /usr/bin/python3 (runnable by nobody)"
    return None


@needs_py_spy
@pytest.mark.skipif(_can_refuse() is not None, reason=str(_can_refuse()))
def test_a_refused_target_gives_the_plain_reason(tmp_path) -> None:
    """A real refusal: the target runs as nobody, and py-spy runs as root without
    CAP_SYS_PTRACE (dropped from its bounding set by setpriv), which Linux refuses."""
    code = "import os, time; print(os.getpid(), flush=True); time.sleep(60)"
    su = subprocess.Popen(
        ["su", "-s", "/bin/sh", "nobody", "-c", f'exec /usr/bin/python3 -c "{code}"'],
        stdout=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd="/",
    )
    assert su.stdout is not None
    pid = int(su.stdout.readline())  # su stays the parent: the target is its child
    try:
        dropped = tmp_path / "py-spy-without-ptrace"
        dropped.write_text(
            "#!/bin/sh\nexec setpriv --bounding-set=-sys_ptrace --inh-caps=-sys_ptrace "
            f'{PY_SPY} "$@"\n'
        )
        dropped.chmod(0o755)
        reading = classify(sample(pid, samples=3, period_s=0.01, py_spy=str(dropped)))
        assert reading.samples == 0
        assert reading.reason is not None
        assert f"not allowed to read process {pid}'s stacks" in reading.reason
        assert "CAP_SYS_PTRACE" in reading.reason
        assert "Permission denied" in reading.reason  # py-spy's own words, quoted
    finally:
        os.kill(pid, signal.SIGKILL)
        su.wait()


@pytest.mark.parametrize(
    ("scope", "says"),
    [
        (None, "Yama is absent: a process of the same user may be read"),
        (0, "ptrace_scope is 0: a process of the same user may be read"),
        (1, "gputop-hints run -- python train.py"),
        (2, "ptrace_scope is 2: only a process with CAP_SYS_PTRACE"),
        (3, "ptrace_scope is 3: nobody may read"),
    ],
)
def test_the_refusal_reason_names_what_would_allow_it(scope: int | None, says: str) -> None:
    text = refusal_reason(4242, PtraceEnv(scope, 1000, False, False), "Permission denied")
    assert text.startswith("py-spy was not allowed to read process 4242's stacks")
    assert "uid 1000, without CAP_SYS_PTRACE" in text
    assert says in text
    assert text.endswith("py-spy said: Permission denied")
    assert "--cap-add" not in text


def test_in_a_container_without_the_capability_the_reason_names_cap_add() -> None:
    text = refusal_reason(7, PtraceEnv(1, 0, False, True))
    assert "we run as root, without CAP_SYS_PTRACE" in text
    assert "--cap-add SYS_PTRACE" in text
    with_cap = refusal_reason(7, PtraceEnv(1, 0, True, True))
    assert "--cap-add" not in with_cap


def test_a_missing_py_spy_gives_the_install_reason(tmp_path, monkeypatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    found = find_py_spy(path_env=str(empty), executable=str(empty / "python"))
    assert found.path is None
    assert found.reason == INSTALL_REASON
    assert "pip install py-spy" in INSTALL_REASON and "[stacks]" in INSTALL_REASON
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(sys, "executable", str(empty / "python"))
    reading = classify(sample(os.getpid(), samples=2))
    assert reading.samples == 0
    assert reading.reason == INSTALL_REASON
