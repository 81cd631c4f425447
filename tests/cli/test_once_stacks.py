"""``--once`` / ``--json`` read the warned processes' own stacks (issue 45).

The GPU is the fake NVML (at nvitop's libnvml boundary), kept 40 % busy; the process it
lists is a real Python program whose main thread spins on ``x = t.item()``, sampled by
a real py-spy. The one-off summary warns on it (small-batch), samples it, and the
findings then carry the stack: host-device-sync names the line, and the small-batch
finding has the main thread's row as evidence.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputop_hints.cli import main
from gputop_hints.stacks import find_py_spy
from tests.stacks.programs import running
from tests.support.fake_nvml import FakeGpu, FakeNvml, FakeProc

SYNCING = """
class Loss:
    def item(self):
        return sum(range(20000))


def train():
    loss = Loss()
    print("ready", flush=True)
    while True:
        x = loss.item()


train()
"""
"""A training loop whose main thread spends its time in ``loss.item()`` (line 11)."""
SYNC_LINE = 11

needs_py_spy = pytest.mark.skipif(find_py_spy().path is None, reason="py-spy is not installed")


@pytest.fixture
def syncing_pid(tmp_path: Path) -> Iterator[int]:
    with running(tmp_path / "train.py", SYNCING) as child:
        yield child.pid


def _warned_or_skip(doc: dict[str, Any], pid: int) -> None:
    """Skip, with the figure, when the run gave no warning on ``pid`` because the child
    did not have its core (what small-batch needs) during it; fail if it had."""
    if any(f["severity"] != "info" and f["subject"]["pid"] == pid for f in doc["findings"]):
        return
    cpu = next((p["cpu_percent"] for p in doc["processes"] if p["pid"] == pid), None)
    if cpu is not None and cpu < 85.0:
        pytest.skip(f"the host was contended: the spinning child got {cpu:.0f} % of a core")
    raise AssertionError(f"no warning on {pid} though it had {cpu} % of a core")


def _once(
    pid: int, capsys: pytest.CaptureFixture[str], *args: str, sm: int = 40, watts: int = 90
) -> tuple[int, str]:
    procs = [FakeProc(pid, sm_util=sm, mem_util=5)]
    gpu = FakeGpu(0, sm=sm, power_mw=watts * 1000, processes=procs)
    with FakeNvml([gpu]):
        code = main(["--once", "--duration", "1", *args])
    return code, capsys.readouterr().out


@needs_py_spy
def test_json_carries_the_warned_process_reading_and_the_findings_its_evidence(
    syncing_pid: int, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _once(syncing_pid, capsys, "--json")
    assert code == 0
    doc = json.loads(out)
    _warned_or_skip(doc, syncing_pid)
    [reading] = doc["stacks"]
    assert reading["pid"] == syncing_pid and reading["reason"] is None
    assert reading["samples"] >= 5
    top = reading["categories"][0]
    assert top["name"] == "host-device-sync" and top["words"] == "waiting on the GPU (sync)"
    frame = top["top_frames"][0]
    assert frame["file"].endswith("train.py") and frame["line"] == SYNC_LINE and frame["user"]
    rules = {f["rule"]: f for f in doc["findings"] if f["subject"]["pid"] == syncing_pid}
    assert f"train.py:{SYNC_LINE})" in rules["host-device-sync"]["summary"]
    assert rules["host-device-sync"]["severity"] == "warning"  # the GPU is 40 % busy
    assert any(
        e["metric"].startswith("main thread waiting on the GPU (sync) (py-spy")
        for e in rules["small-batch"]["evidence"]
    )


@needs_py_spy
def test_text_says_where_the_warned_process_waits(
    syncing_pid: int, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _once(syncing_pid, capsys)
    assert code == 0
    if "Where it waits" not in out:  # not warned: the child had no core to itself?
        row = next(ln.split() for ln in out.splitlines() if ln.split()[:1] == [str(syncing_pid)])
        cpu = float(row[5].rstrip("%"))
        if cpu < 85.0:
            pytest.skip(f"the host was contended: the spinning child got {cpu:.0f} % of a core")
    assert "syncs with the GPU" in out
    line = next(ln for ln in out.splitlines() if "Where it waits" in ln)
    assert line.strip().startswith(f"PID {syncing_pid}: Where it waits (py-spy, ")
    assert "% waiting on the GPU (sync) at train (train.py:" in " ".join(out.split())


def test_no_stacks_samples_nothing(syncing_pid: int, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _once(syncing_pid, capsys, "--json", "--no-stacks")
    doc = json.loads(out)
    _warned_or_skip(doc, syncing_pid)
    assert code == 0 and doc["stacks"] == []
    assert any(f["rule"] == "small-batch" for f in doc["findings"])  # warned, not sampled
    assert not any(f["rule"] == "host-device-sync" for f in doc["findings"])


def test_a_process_nothing_warns_about_is_not_sampled(
    syncing_pid: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GPU kept busy at full power: no warning, so --once costs nothing more."""
    code, out = _once(syncing_pid, capsys, "--json", sm=97, watts=600)
    doc = json.loads(out)
    assert code == 0
    assert not any(
        f["severity"] in ("warning", "critical") and f["subject"]["pid"] == syncing_pid
        for f in doc["findings"]
    )
    assert doc["stacks"] == []


def test_the_demo_samples_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """A demo's pids are made up (never this machine's): its warnings are not sampled."""
    assert main(["--demo", "starved-loader", "--once", "--json", "--duration", "2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any(f["severity"] == "warning" and f["subject"]["pid"] for f in doc["findings"])
    assert doc["stacks"] == []


def test_without_py_spy_the_reading_says_how_to_install_it(
    syncing_pid: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No py-spy on PATH nor beside the interpreter: one entry for the warned pid, whose
    reason says how to install it; the text summary says the same under the hints."""
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    code, out = _once(syncing_pid, capsys, "--json")
    _warned_or_skip(json.loads(out), syncing_pid)
    [reading] = json.loads(out)["stacks"]
    assert code == 0
    assert reading["pid"] == syncing_pid and reading["samples"] == 0
    assert reading["categories"] == [] and "pip install py-spy" in reading["reason"]
    code, out = _once(syncing_pid, capsys)
    assert f"PID {syncing_pid}: Where it waits: not read -- py-spy is not installed" in out


def test_a_gpu_wide_warning_samples_the_one_process_on_that_gpu() -> None:
    """low-utilization (no pid) on a GPU with one process: that process's stack is the
    GPU's story, so it is sampled; on a GPU shared by two, nobody is picked for it."""
    from gputop_hints.hints.findings import Finding, Severity, Subject
    from gputop_hints.sampling.once_stacks import warned_processes
    from tests.hints.windows import T0, G, P, Tick, snapshot

    snap = snapshot(
        Tick(
            gpus=(G(index=0), G(index=1)),
            procs=(P(pid=11, gpu=0), P(pid=21, gpu=1), P(pid=22, gpu=1)),
        ),
        T0,
        1.0,
    )

    def gpu_wide(gpu: int) -> Finding:
        return Finding("low-utilization", Subject(gpu), Severity.WARNING, "", "", (), ())

    assert [p.pid for p in warned_processes([gpu_wide(0)], snap)] == [11]
    assert warned_processes([gpu_wide(1)], snap) == []
    info = Finding("low-utilization", Subject(0), Severity.INFO, "", "", (), ())
    assert warned_processes([info], snap) == []
