"""Fault matrix, hangs: an NVML call that never returns (a wedged driver, a GPU in a bad state).

The fake NVML's :meth:`~tests.support.fake_nvml.FakeGpu.hang` makes every call on
one GPU block until it is released; :class:`~tests.support.fake_nvml.FakeNvml`
releases it on exit, so no test leaves a thread behind. Anything that could
itself hang runs on a daemon thread joined with a generous safety timeout: the
tests assert what happened (it finished, the GPU was named), never how fast.
Each test's first docstring line says what was tried and what the user must see.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gputop_hints.cli import main
from gputop_hints.model import Snapshot
from gputop_hints.recording import RecordingWriter
from gputop_hints.recording.reader import open_recording
from gputop_hints.sampling.record import record
from gputop_hints.sources.live.nvml import NvmlGpus
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.widgets.gpu_panel import GpuPanel
from gputop_hints.tui.widgets.gpu_unavailable_banner import GpuUnavailableBanner
from tests.support.fake_nvml import FakeGpu, FakeNvml, make_gpus

SAFETY_S = 10.0
"""How long a test waits for something that must finish before calling it hung."""


def _in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Run ``target`` on a daemon thread; the list receives its result (or exception)."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(target())
        except BaseException as exc:  # the test reports it
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def _finishes(target: Callable[[], Any]) -> Any:
    """``target()``, failing the test if it has not returned within :data:`SAFETY_S`."""
    thread, out = _in_thread(target)
    thread.join(SAFETY_S)
    assert not thread.is_alive(), f"still running after {SAFETY_S} s: it hung"
    [result] = out
    if isinstance(result, BaseException):
        raise result
    return result


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + SAFETY_S
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


@pytest.fixture
def gpus() -> list[FakeGpu]:
    return make_gpus(2, sm=40)


@pytest.fixture
def nvml(gpus: list[FakeGpu]) -> Iterator[FakeNvml]:
    with FakeNvml(gpus) as fake:
        yield fake  # exit releases a hung GPU


def test_close_returns_while_a_sample_is_stuck_in_nvml(
    gpus: list[FakeGpu], nvml: FakeNvml
) -> None:
    """LiveSource.close() while a tick is stuck in a hung NVML call: close returns.

    Before the fix close waited for the lock the stuck sample() held: the monitor
    could not quit (q, SIGTERM, SIGINT) and an orphan kept spinning.
    """
    source = LiveSource(interval_s=0.5, detect_job=False)
    gpus[1].hang()
    _in_thread(source.sample)
    _wait_until(lambda: gpus[1].blocked_calls > 0)
    _finishes(source.close)
    assert source.sample().gpus == ()  # closed: later ticks report no GPU, at once


def test_a_hung_gpu_is_shown_not_answering_and_the_other_keeps_updating(
    gpus: list[FakeGpu], nvml: FakeNvml
) -> None:
    """One GPU's NVML calls stop returning: it reads "not answering for N s", the other updates.

    Before the fix the whole tick waited for the hung call: no GPU updated again.
    """
    source = LiveSource(interval_s=0.5, detect_job=False)
    gpus[1].hang()
    first: Snapshot = _finishes(source.sample)
    healthy, stuck = first.gpus
    assert healthy.sm_percent == 40.0 and healthy.not_answering_s is None
    assert stuck.not_answering_s is not None and stuck.sm_percent is None
    assert stuck.name == gpus[1].name  # what was learnt before the hang is kept
    gpus[0].sm = 75
    time.sleep(0.05)
    second: Snapshot = _finishes(source.sample)
    assert second.gpus[0].sm_percent == 75.0
    assert second.gpus[1].not_answering_s is not None
    assert second.gpus[1].not_answering_s > stuck.not_answering_s
    assert gpus[1].blocked_calls == 1  # no new call was queued behind the stuck one
    gpus[1].release()
    _wait_until(lambda: _finishes(source.sample).gpus[1].not_answering_s is None)
    assert source.sample().gpus[1].sm_percent == 40.0  # answering again: values return


def test_once_finishes_and_names_the_gpu_that_did_not_answer(
    gpus: list[FakeGpu], nvml: FakeNvml, capsys: pytest.CaptureFixture[str]
) -> None:
    """--once --duration 1 while GPU 1 hangs: it finishes, and the text says "not answering".

    Before the fix --once never finished.
    """
    gpus[1].hang()
    assert _finishes(lambda: main(["--once", "--duration", "1", "--interval", "0.5"])) == 0
    text = capsys.readouterr().out
    [line] = [line for line in text.splitlines() if line.startswith("GPU 1")]
    assert "not answering" in line
    assert _finishes(lambda: main(["--once", "--duration", "1", "--json"])) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [g["not_answering_s"] is not None for g in doc["gpus"]] == [False, True]


def test_record_stops_on_a_stop_request_while_nvml_hangs(
    gpus: list[FakeGpu], nvml: FakeNvml, tmp_path: Path
) -> None:
    """record while GPU 1 hangs, then a stop request (what SIGTERM sends): it stops, file closed.

    Before the fix the recorder never came back from the stuck tick to see the request.
    """
    source = LiveSource(interval_s=0.5, detect_job=False)
    stop = threading.Event()
    err = io.StringIO()
    path = tmp_path / "hang.jsonl"
    gpus[1].hang()
    thread, out = _in_thread(
        lambda: record(source, path, interval_s=0.5, stop=stop, stderr=err)
    )
    _wait_until(lambda: gpus[1].blocked_calls > 0)
    time.sleep(1.0)  # a few ticks while it hangs
    stop.set()
    thread.join(SAFETY_S)
    assert not thread.is_alive(), "the recorder did not stop"
    assert out == [0]
    assert "GPU 1" in err.getvalue() and "not answering" in err.getvalue()
    ticks = list(open_recording(path))
    assert ticks and all(t.gpus[0].sm_percent == 40.0 for t in ticks)
    assert ticks[-1].gpus[1].not_answering_s is not None


def test_record_with_a_duration_finishes_while_nvml_hangs(
    gpus: list[FakeGpu], nvml: FakeNvml, tmp_path: Path
) -> None:
    """record --duration 1 while GPU 1 hangs: it finishes; stderr says GPU 1 did not answer."""
    source = LiveSource(interval_s=0.5, detect_job=False)
    err = io.StringIO()
    gpus[1].hang()
    code = _finishes(
        lambda: record(source, tmp_path / "r.jsonl", interval_s=0.5, duration_s=1, stderr=err)
    )
    assert code == 0
    assert "GPU 1" in err.getvalue() and "not answering" in err.getvalue()


def test_the_monitor_shows_not_answering_and_quits_on_q_while_nvml_hangs(
    gpus: list[FakeGpu], nvml: FakeNvml
) -> None:
    """The monitor while GPU 1 hangs: its panel says "not answering", and q quits.

    Before the fix q never ended the monitor: quitting closed the source, which
    waited for the stuck tick.
    """
    seen: list[str] = []

    async def scenario() -> None:
        source = LiveSource(interval_s=0.25, detect_job=False)
        app = GputopApp(source, interval_s=0.25)
        async with app.run_test(size=(160, 40)) as pilot:
            gpus[1].hang()
            deadline = time.monotonic() + SAFETY_S
            while time.monotonic() < deadline:
                await pilot.pause(0.1)
                snap = app.snapshot
                if snap is not None and snap.gpus[1].not_answering_s is not None:
                    break
            seen.extend(app.query_one("#gpu-1", GpuPanel).text_lines())
            await pilot.press("q")
            await pilot.pause()

    _finishes(lambda: asyncio.run(scenario()))
    assert seen and "not answering" in seen[0], seen


def test_a_not_answering_gpu_is_recorded_so_and_old_readers_read_it_as_unknown(
    gpus: list[FakeGpu], nvml: FakeNvml, tmp_path: Path
) -> None:
    """GPU 1 not answering, recorded: read back not answering; a reader that knows only
    "lost" sees an unknown, not lost, GPU; ticks without the column read as before."""
    source = LiveSource(interval_s=0.5, detect_job=False)
    healthy = _finishes(source.sample)
    gpus[1].hang()
    stuck = _finishes(source.sample)
    path = tmp_path / "run.jsonl"
    with RecordingWriter(path) as writer:
        writer.write(healthy)
        writer.write(stuck)
    before, after = list(open_recording(path))
    assert after == stuck
    assert [g.not_answering_s is None for g in before.gpus] == [True, True]
    assert after.gpus[1].not_answering_s == stuck.gpus[1].not_answering_s
    assert not after.gpus[1].lost
    [*_, last] = path.read_text().splitlines()
    [_, _, gpu_columns, *_] = json.loads(last)
    assert len(gpu_columns[0]) == 11  # a healthy GPU's array is as before the column
    assert gpu_columns[1][11] is False  # "lost" stays false for an old reader


# -- start-up: NVML's own calls, before any GPU is known ---------------------------------

START_UP_CALLS = {
    "init": ("nvmlInitWithFlags",),
    "count": ("nvmlDeviceGetCount", "nvmlDeviceGetCount_v2"),
    "driver_version": ("nvmlSystemGetDriverVersion",),
    "cuda_version": ("nvmlSystemGetCudaDriverVersion", "nvmlSystemGetCudaDriverVersion_v2"),
}


@pytest.mark.parametrize("calls", START_UP_CALLS.values(), ids=START_UP_CALLS.keys())
def test_once_finishes_and_says_nvml_is_not_answering_when_a_start_up_call_hangs(
    calls: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    """Start-up NVML call (init, count, versions) hangs: --once ends, says which is not answering.

    It shows the host only. Before the fix the call ran on the main thread: --once never
    finished (nor did the monitor start, or quit on q / SIGTERM).
    """
    with FakeNvml(make_gpus(2, sm=40)) as nvml:
        nvml.hang_function(*calls)
        code = _finishes(lambda: main(["--once", "--duration", "1", "--interval", "0.5"]))
        text = capsys.readouterr().out
        assert _finishes(lambda: main(["--once", "--duration", "1", "--json"])) == 0
        doc = json.loads(capsys.readouterr().out)
        assert nvml.blocked_function_calls > 0
    assert code == 0
    [line] = [line for line in text.splitlines() if "NVML is not answering" in line]
    named = "nvmlInit" if calls[0] == "nvmlInitWithFlags" else calls[0]
    assert named in line
    assert doc["gpus"] == []
    assert "NVML is not answering" in doc["gpu_unavailable_reason"]


def test_the_monitor_says_nvml_is_not_answering_and_quits_on_q_when_the_count_hangs() -> None:
    """nvmlDeviceGetCount hangs at start-up: the monitor says NVML is not answering; q quits."""
    seen: list[str] = []

    async def scenario() -> None:
        source = LiveSource(interval_s=0.25, detect_job=False)
        app = GputopApp(source, interval_s=0.25)
        async with app.run_test(size=(160, 40)) as pilot:
            await pilot.pause(0.3)
            seen.extend(app.query_one(GpuUnavailableBanner).text_lines())
            await pilot.press("q")
            await pilot.pause()

    with FakeNvml(make_gpus(2)) as nvml:
        nvml.hang_function("nvmlDeviceGetCount", "nvmlDeviceGetCount_v2")
        _finishes(lambda: asyncio.run(scenario()))
    assert "NVML is not answering" in " ".join(seen), seen


def test_inside_a_slurm_job_start_up_finishes_when_gpus_hang_after_their_handle() -> None:
    """In a SLURM job, GPU name / minor number hang at start-up: it starts, GPUs not answering.

    Before the fix the job's GPU ids were asked on the main thread, of GPUs
    whose start-up was still stuck: start-up never finished.
    """
    environ = {"SLURM_JOB_ID": "123", "SLURM_JOB_GPUS": "0,1", "SLURM_JOB_UID": str(os.getuid())}
    with FakeNvml(make_gpus(2, sm=40)) as nvml:
        nvml.hang_function("nvmlDeviceGetName", "nvmlDeviceGetMinorNumber")
        source: LiveSource = _finishes(lambda: LiveSource(interval_s=0.5, environ=environ))
        try:
            snapshot: Snapshot = _finishes(source.sample)
        finally:
            source.close()
    assert source.job is not None and source.job.job_id == "123"
    assert [g.not_answering_s is not None for g in snapshot.gpus] == [True, True]


def test_quitting_ends_a_tick_that_waits_on_a_gpu_which_does_not_answer(
    gpus: list[FakeGpu], nvml: FakeNvml
) -> None:
    """Quit (q, SIGHUP) while a tick waits on a hung GPU: the tick ends now, not at its deadline.

    Before the fix closing the source left the tick waiting until its deadline, and the
    monitor's quit waited on that tick: a lost terminal took 1.4-2.4 s to end the process.
    """
    source = NvmlGpus(interval_s=1.0)
    assert source.start() is None
    source.deadline_s = 3600.0  # a deadline no test waits out: only the close can end it
    gpus[1].hang()
    thread, out = _in_thread(lambda: source.sample(time.time()))
    # GPU 1 is stuck and GPU 0 has answered (under load its read can still be running
    # when GPU 1 blocks: closing then would cut the healthy GPU's tick short too).
    _wait_until(lambda: gpus[1].blocked_calls > 0 and not source._workers[0].in_flight)
    source.close()
    thread.join(SAFETY_S)
    assert not thread.is_alive(), "the tick waited for its deadline after the close"
    [(samples, _)] = out
    assert samples[0].sm_percent == 40.0
    assert samples[1].not_answering_s is not None
