"""Fault matrix, live source: NVML failing at start-up and mid-run.

Only NVML is faked (tests/support/fake_nvml.py injects its errors); processes,
/proc and the views are real. Each test's first docstring line says what was
tried and what the user must see.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pynvml
import pytest

from gputop_hints.cli import main
from gputop_hints.hints.engine import HintEngine
from gputop_hints.history import History
from gputop_hints.model import Snapshot, snapshot_from_dict, snapshot_to_dict
from gputop_hints.outputs.summary import Summary
from gputop_hints.recording import RecordingWriter
from gputop_hints.recording.reader import open_recording
from gputop_hints.sources import SourceUnavailable
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.widgets.gpu_panel import GpuPanel
from tests.support.fake_nvml import GIB, FakeGpu, FakeNvml, FakeProc, make_gpus

SLEEPER = "import time; time.sleep(120)"


@pytest.fixture
def training_pid() -> Iterator[int]:
    """A real process that the fake NVML lists on a GPU."""
    child = subprocess.Popen([sys.executable, "-c", SLEEPER])
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait(timeout=10)


# -- start-up ----------------------------------------------------------------------------


def test_gpu_lost_in_a_static_query_at_start_up_hides_no_other_gpu(training_pid: int) -> None:
    """GpuIsLost from one GPU's static query at start-up: the other GPUs and processes show.

    Before the fix the error escaped start-up and the whole source fell back
    to CPU-only ("NVML failed to initialise").
    """
    gpus = make_gpus(2, pids_per_gpu=[[], [training_pid]], sm=80)
    gpus[0].fail_next("nvmlDeviceGetMaxClockInfo", pynvml.NVML_ERROR_GPU_IS_LOST)
    with FakeNvml(gpus):
        source = LiveSource(detect_job=False)
        snapshot = source.sample()
    assert snapshot.gpu_unavailable_reason is None
    assert [g.index for g in snapshot.gpus] == [0, 1]
    healthy = snapshot.gpus[1]
    assert (healthy.name, healthy.sm_percent) == (gpus[1].name, 80.0)
    assert [p.pid for p in snapshot.processes] == [training_pid]


def test_gpu_lost_before_start_up_is_listed_as_lost_beside_the_healthy_ones() -> None:
    """GPU lost before start-up (no handle): listed as "lost", the other GPUs are sampled."""
    gpus = make_gpus(2, sm=55)
    gpus[0].lost = True
    with FakeNvml(gpus):
        snapshot = LiveSource(detect_job=False).sample()
    lost, healthy = snapshot.gpus
    assert lost.lost and lost.sm_percent is None
    assert not healthy.lost and healthy.sm_percent == 55.0
    assert snapshot.gpu_unavailable_reason is None


def test_transient_unknown_error_on_name_and_uuid_at_start_up_is_retried() -> None:
    """NVML_ERROR_UNKNOWN once on a GPU's name and UUID at start-up: both shown next tick.

    Before the fix they stayed blank (n/a) for the whole session.
    """
    gpus = make_gpus(1)
    gpus[0].fail_next("nvmlDeviceGetName", pynvml.NVML_ERROR_UNKNOWN)
    gpus[0].fail_next("nvmlDeviceGetUUID", pynvml.NVML_ERROR_UNKNOWN)
    with FakeNvml(gpus):
        source = LiveSource(detect_job=False)
        gpu = source.sample().gpus[0]
    assert (gpu.name, gpu.uuid) == (gpus[0].name, gpus[0].uuid)


def test_transient_unknown_error_on_the_handle_at_start_up_is_retried() -> None:
    """NVML_ERROR_UNKNOWN once on a GPU's handle at start-up: name and values shown next tick."""
    gpus = make_gpus(2, sm=70)
    gpus[1].fail_next("nvmlDeviceGetHandleByIndex", pynvml.NVML_ERROR_UNKNOWN)
    with FakeNvml(gpus):
        source = LiveSource(detect_job=False)
        gpu = source.sample().gpus[1]
    assert (gpu.name, gpu.sm_percent, gpu.vram_total_bytes) == (gpus[1].name, 70.0, 80 * GIB)
    assert not gpu.lost


def test_a_static_query_that_keeps_failing_is_retried_at_most_once_a_tick() -> None:
    """GPU name failing with NVML_ERROR_UNKNOWN every time: asked once a tick, values shown."""
    gpus = make_gpus(1, sm=30)
    gpus[0].fail_next("nvmlDeviceGetName", pynvml.NVML_ERROR_UNKNOWN, times=1000)
    with FakeNvml(gpus) as nvml:
        source = LiveSource(detect_job=False)
        ticks = [source.sample() for _ in range(5)]
        asked = nvml.calls["nvmlDeviceGetName"]
    assert asked <= 1 + len(ticks)  # start-up, then once per tick
    assert all(t.gpus[0].name is None and t.gpus[0].sm_percent == 30.0 for t in ticks)


def test_healthy_gpus_are_not_asked_their_static_facts_again() -> None:
    """Healthy GPUs, many ticks: no handle, name, UUID or max-clock query after start-up.

    Retrying what failed at start-up must not add to the per-tick cost of healthy GPUs.
    """
    static = (
        "nvmlDeviceGetHandleByIndex",
        "nvmlDeviceGetName",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetMaxClockInfo",
    )
    with FakeNvml(make_gpus(8)) as nvml:
        source = LiveSource(detect_job=False)
        at_start = {f: nvml.calls[f] for f in static}
        for _ in range(5):
            source.sample()
        assert {f: nvml.calls[f] for f in static} == at_start


def test_no_permission_on_the_gpu_count_says_permission_was_denied() -> None:
    """NoPermission on NVML's device count: says permission was denied and what to check.

    Before the fix the message said "NVML works ... but sees no GPUs".
    """
    with FakeNvml(make_gpus(2), count_error=pynvml.NVML_ERROR_NO_PERMISSION):
        reason = LiveSource(detect_job=False).sample().gpu_unavailable_reason
        with pytest.raises(SourceUnavailable, match="permission denied"):
            LiveSource(detect_job=False, require_gpu=True)
    assert reason is not None
    assert "sees no GPUs" not in reason
    assert "permission denied" in reason
    assert "/dev/nvidia*" in reason and "container" in reason


# -- mid-run -----------------------------------------------------------------------------


def _lost_mid_run(training_pid: int) -> tuple[list[Snapshot], Snapshot]:
    """Live ticks of a GPU near its VRAM limit, then one tick after it fell off the bus.

    The snapshots are re-timed one second apart so that the hint engine's
    hysteresis sees a minute of history without the test waiting a minute.
    """
    gpus = make_gpus(2, sm=90)
    gpus[0].vram_used = 79 * GIB  # 99 %: "VRAM near limit" fires on GPU 0
    gpus[0].processes = [FakeProc(training_pid, used_bytes=78 * GIB, sm_util=90)]
    with FakeNvml(gpus):
        source = LiveSource(detect_job=False)
        before = source.sample()
        gpus[0].lost = True
        after = source.sample()
    start = before.timestamp
    healthy = [dataclasses.replace(before, timestamp=start + i) for i in range(60)]
    return healthy, dataclasses.replace(after, timestamp=start + 60)


def test_gpu_lost_mid_run_says_lost_in_the_snapshot_and_json(training_pid: int) -> None:
    """GPU lost mid-run: snapshot and --json say "lost": true, no metric; other GPU sampled."""
    healthy, lost = _lost_mid_run(training_pid)
    gpu = lost.gpus[0]
    assert gpu.lost and gpu.name is not None
    assert (gpu.sm_percent, gpu.vram_used_bytes, gpu.temperature_c) == (None, None, None)
    assert not lost.gpus[1].lost and lost.gpus[1].sm_percent == 90.0
    doc = json.loads(Summary.of([*healthy, lost]).to_json_text())
    assert [g["lost"] for g in doc["gpus"]] == [True, False]
    # The dict form reads back, and a dict without the key (older output) is not lost.
    assert snapshot_from_dict(snapshot_to_dict(lost)).gpus[0].lost
    old = snapshot_to_dict(lost)
    del old["gpus"][0]["lost"]
    assert not snapshot_from_dict(old).gpus[0].lost


def test_gpu_lost_mid_run_clears_its_findings_at_once(training_pid: int) -> None:
    """GPU lost mid-run with a visible finding: it clears on the next tick, no stale hint."""
    healthy, lost = _lost_mid_run(training_pid)
    engine = HintEngine()
    history = History(window_s=120, interval_s=1.0)
    for snap in healthy:
        history.append(snap)
        engine.update(history)
    assert engine.for_gpu(0), "the VRAM-near-limit finding should be visible before the loss"
    history.append(lost)
    findings = engine.update(history)
    assert [f for f in findings if f.subject.gpu_index == 0] == []


def test_gpu_lost_mid_run_reads_lost_in_the_once_text(training_pid: int) -> None:
    """GPU lost mid-run, --once text: its line says "lost", with no n/a metric rows and no hint."""
    healthy, lost = _lost_mid_run(training_pid)
    lines = Summary.of([*healthy, lost]).to_text(width=120).splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("GPU 0"))
    end = next(i for i, line in enumerate(lines) if line.startswith("GPU 1"))
    assert end - first == 1, lines[first:end]
    assert "lost" in lines[first]


def test_gpu_lost_mid_run_is_recorded_as_lost_and_old_recordings_still_read(
    training_pid: int, tmp_path: Path
) -> None:
    """GPU lost mid-run, recorded: read back as lost; ticks without the column read as before."""
    healthy, lost = _lost_mid_run(training_pid)
    path = tmp_path / "run.jsonl"
    with RecordingWriter(path) as writer:
        for snap in [healthy[-1], lost]:
            writer.write(snap)
    before, after = list(open_recording(path))
    assert [g.lost for g in before.gpus] == [False, False]
    assert [g.lost for g in after.gpus] == [True, False]
    assert after == lost
    # A recording from before the column existed: every GPU array ends at sm_samples.
    lines = path.read_text().splitlines()
    lines[-1] = lines[-1].replace(",true]", "]")
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join(lines) + "\n")
    assert [g.lost for g in list(open_recording(old))[-1].gpus] == [False, False]


async def test_gpu_lost_mid_run_reads_lost_in_the_monitor(training_pid: int) -> None:
    """GPU lost mid-run, monitor: its panel says "lost", not n/a, and shows no hint."""
    healthy, lost = _lost_mid_run(training_pid)
    app = GputopApp(DemoSource("mixed", gpus=2, processes=1, seed=0), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        for snap in [*healthy, lost]:
            app.ingest(snap)
        await pilot.pause()
        panel = app.query_one("#gpu-0", GpuPanel).text_lines()
    assert "lost" in panel[0]
    assert not any("n/a" in line or "VRAM" in line for line in panel), panel


def test_values_nvml_cannot_mean_are_unknown_and_named(capsys: pytest.CaptureFixture[str]) -> None:
    """NVML answers 0xFFFFFFFF for temperature and clock, 130 % SM and more VRAM used
    than the board has: shown as n/a (never 4294967295 °C), named in --json."""
    gpu = FakeGpu(0, temperature=0xFFFFFFFF, sm_clock_mhz=0xFFFFFFFF, sm=130)
    gpu.vram_used = gpu.vram_total * 2
    with FakeNvml([gpu]):
        source = LiveSource()
        try:
            [sample] = source.sample().gpus
        finally:
            source.close()
        assert main(["--once", "--duration", "0.3", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert main(["--once", "--duration", "0.3"]) == 0
        text = capsys.readouterr().out
    assert sample.temperature_c is None and sample.sm_clock_mhz is None
    assert sample.sm_percent is None and sample.vram_used_bytes is None
    assert set(sample.implausible) == {
        "temperature_c", "sm_clock_mhz", "sm_percent", "vram_used_bytes"
    }
    assert set(doc["gpus"][0]["implausible"]) == set(sample.implausible)
    assert "4294967295" not in text


@pytest.mark.parametrize(
    "error",
    [pynvml.NVML_ERROR_NOT_SUPPORTED, pynvml.NVML_ERROR_UNKNOWN],
    ids=["not_supported", "unknown"],
)
def test_a_vram_query_that_fails_mid_run_is_unknown_not_the_last_figure(
    error: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """VRAM query answers, then fails (NotSupported / Unknown): VRAM n/a, named in --json.

    Before the fix NotSupported mid-run showed the host's memory as the GPU's
    VRAM (nvitop's unified-memory fallback) and neither failure was named.
    """
    gpu = FakeGpu(0, vram_used=3 * GIB)
    with FakeNvml([gpu]):
        source = LiveSource(detect_job=False)
        try:
            answered = source.sample().gpus[0]
            gpu.fail_after("nvmlDeviceGetMemoryInfo", error, answers=0)
            failed = source.sample().gpus[0]
        finally:
            source.close()
        gpu.errors.clear()
        gpu.fail_after("nvmlDeviceGetMemoryInfo", error, answers=1)
        assert main(["--once", "--duration", "0.3", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        gpu.errors.clear()
        gpu.fail_after("nvmlDeviceGetMemoryInfo", error, answers=1)
        assert main(["--once", "--duration", "0.3"]) == 0
        text = capsys.readouterr().out
    assert (answered.vram_used_bytes, answered.vram_total_bytes) == (3 * GIB, 80 * GIB)
    assert (failed.vram_used_bytes, failed.vram_total_bytes) == (None, None)
    assert {"vram_used_bytes", "vram_total_bytes"} <= set(failed.implausible)
    assert doc["gpus"][0]["vram_used_bytes"] is None
    assert {"vram_used_bytes", "vram_total_bytes"} <= set(doc["gpus"][0]["implausible"])
    assert "VRAM n/a/n/a" in text

