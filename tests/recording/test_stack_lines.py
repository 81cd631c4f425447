"""Recordings carry stack readings (issue 45), and ``report`` quotes them.

A ``stack`` line holds a py-spy reading of one process as the recorder took it. Here
the recordings are written through the real :class:`RecordingWriter` from the demo's
ticks, with readings as the recorder writes them: read back, they are the same
reading; a reader skips what it does not know and counts a malformed one; the report
gives each reading to its hints at the time it was taken, and quotes it under the
finding of that process.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from gputop_hints.cli import main
from gputop_hints.outputs.report import report_file
from gputop_hints.outputs.report.render import report_json, report_text
from gputop_hints.recording import RecordingWriter
from gputop_hints.recording.reader import open_recording
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.replay import ReplaySource
from gputop_hints.stacks import (
    Category,
    Frame,
    FrameCount,
    StackReading,
    WorkerReading,
    find_py_spy,
)
from tests.cli.test_once_stacks import SYNC_LINE, SYNCING
from tests.stacks.programs import running
from tests.support.fake_nvml import FakeGpu, FakeNvml, FakeProc

TICKS = 90
STACK_AFTER = 30
"""The reading is written after this tick, taken at its time."""


def _reading(pid: int, name: str = "waiting-for-batch", line: int = 88) -> StackReading:
    """A reading as classify() gives it: 83 % of 40 main-thread samples in ``name`` at
    ``Loader.next_batch (train.py:LINE)``, the rest elsewhere; one busy worker."""
    frame = Frame("Loader.next_batch", "/home/u/train.py", line)
    return StackReading(
        pid,
        40,
        (
            Category(name, 33, 0.825, (FrameCount(frame, 33, True),)),
            Category(
                "other", 7, 0.175, (FrameCount(Frame("main", "/home/u/train.py", 9), 7, True),)
            ),
        ),
        (
            WorkerReading(
                pid + 1,
                40,
                31,
                (FrameCount(Frame("Decode.__call__", "/home/u/aug.py", 12), 31, True),),
                kind="dataloader",
            ),
        ),
        notes=("1 worker sampled",),
    )


def _record(
    path: Path,
    scenario: str = "starved-loader",
    extra: list[tuple[int, str]] | None = None,
    reading_of: Any = _reading,
) -> tuple[int, float]:
    """Record the demo scenario's ticks to ``path`` with a reading of its process after
    tick STACK_AFTER; ``extra``: raw lines written after the given tick. (pid, taken_at)."""
    source = DemoSource(scenario, gpus=1, seed=0)
    pid, taken_at = 0, 0.0
    with RecordingWriter(path) as writer:
        for i in range(TICKS):
            snap = source.sample()
            writer.write(snap)
            if i == STACK_AFTER:
                pid, taken_at = snap.processes[0].pid, snap.timestamp
                assert writer.write_stack(reading_of(pid), taken_at)
            for at, line in extra or ():
                if at == i:
                    writer._emit((line + "\n").encode())
    return pid, taken_at


def test_a_stack_line_reads_back_as_the_same_reading(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    pid, taken_at = _record(path)
    with open_recording(path) as stream:
        ticks = sum(1 for _ in stream)
        [stack] = stream.stacks
        assert ticks == TICKS and stream.counters.bad_lines == 0
    assert (stack.pid, stack.taken_at) == (pid, taken_at)
    assert stack.reading == _reading(pid)
    line = path.read_text().splitlines()[STACK_AFTER + 2 + _records_before(path)]
    assert json.loads(line)["type"] == "stack"


def _records_before(path: Path) -> int:
    """Record lines (not ticks) before the stack line, after the header."""
    lines = path.read_text().splitlines()[1:]
    at = next(i for i, ln in enumerate(lines) if '"type":"stack"' in ln)
    return sum(1 for ln in lines[:at] if ln.startswith("{"))


def test_replay_and_a_reader_that_does_not_know_a_line_type_skip_it(tmp_path: Path) -> None:
    """The compatibility promise: a line type a reader does not know is skipped, not
    counted -- what a reader older than ``stack`` lines does with them, and this one
    with a type newer than it."""
    path = tmp_path / "run.jsonl"
    future = json.dumps({"type": "stack-v9", "pid": 1, "anything": [1, {"x": None}]})
    _record(path, extra=[(50, future)])
    with open_recording(path) as stream:
        snaps = list(stream)
        assert len(snaps) == TICKS and stream.counters.bad_lines == 0
    source = ReplaySource(path)
    played: list[float] = []
    try:
        for _ in range(TICKS + 5):
            snap = source.sample()
            if played and snap.timestamp == played[-1]:
                break  # past the end: replay stays on the last tick
            played.append(snap.timestamp)
    finally:
        source.close()
    assert played == [s.timestamp for s in snaps]
    assert report_file(str(path)).counters.bad_lines == 0


def test_a_malformed_stack_line_is_counted_with_its_number_not_fatal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl"
    no_time = json.dumps({"type": "stack", "pid": 7, "taken_at": "noon"})
    bad_body = json.dumps(
        {**_reading(7).to_dict(), "type": "stack", "taken_at": 1.0, "categories": [{"name": 3}]}
    )
    _record(path, extra=[(60, no_time), (70, bad_body)])
    numbers = [
        i + 1 for i, ln in enumerate(path.read_text().splitlines()) if ln in (no_time, bad_body)
    ]
    with open_recording(path) as stream:  # the reader alone (replay's) counts both
        assert sum(1 for _ in stream) == TICKS
        assert stream.counters.bad_lines == 2 and len(stream.stacks) == 1
    report = report_file(str(path))
    assert report.counters.bad_lines == 2
    assert report.counters.first_bad_line == numbers[0]
    assert "taken_at" in (report.counters.first_bad_reason or "")
    assert any(ft.stack is not None for ft in report.findings)  # the good one still quoted
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    assert f"line {numbers[0]}" in out.out + out.err


def test_report_quotes_where_a_starved_process_waits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl"
    pid, taken_at = _record(path)
    clock = time.strftime("%H:%M:%S", time.localtime(taken_at))
    assert main(["report", str(path)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # as read, whatever the wrapping
    quote = (
        f"where it waits (py-spy, 40 samples at {clock}): 82 % waiting for the next batch "
        "at Loader.next_batch (/home/u/train.py:88)"
    )
    assert quote in text
    # The rules' own stack evidence, as live: the starvation confirmed, the frame named.
    assert "main thread waiting for the next batch (py-spy, 40 samples)" in text
    assert main(["report", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    quoted = [f for f in doc["findings"] if f["stack"] is not None]
    starved = next(f for f in quoted if f["rule"] == "input-starved")
    assert starved["subject"]["pid"] == pid
    stack = starved["stack"]
    assert stack["taken_at"] == taken_at and stack["pid"] == pid and stack["samples"] == 40
    top = stack["categories"][0]
    assert top["name"] == "waiting-for-batch" and top["share"] == 0.825
    assert top["top_frames"][0] == {
        "function": "Loader.next_batch",
        "file": "/home/u/train.py",
        "line": 88,
        "samples": 33,
        "user": True,
    }
    assert stack["workers"][0]["top_frames"][0]["function"] == "Decode.__call__"
    assert all(f["stack"] is None for f in doc["findings"] if f["subject"]["pid"] != pid)


def test_an_item_loop_reading_gives_the_report_host_device_sync_naming_the_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    pid, _ = _record(path, "small-batch", reading_of=lambda p: _reading(p, "host-device-sync", 41))
    report = report_file(str(path))
    sync = next(ft for ft in report.findings if ft.finding.rule == "host-device-sync")
    assert sync.finding.subject.pid == pid
    assert "Loader.next_batch (/home/u/train.py:41)" in sync.finding.summary
    text = " ".join(report_text(report).split())
    assert f"host-device-sync -- pid {pid} on GPU 0" in text
    assert "82 % waiting on the GPU (sync) at Loader.next_batch (/home/u/train.py:41)" in text
    doc = report_json(report)
    assert any(f["rule"] == "host-device-sync" and f["stack"] for f in doc["findings"])


def test_without_stack_lines_nothing_is_quoted(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    source = DemoSource("starved-loader", gpus=1, seed=0)
    with RecordingWriter(path) as writer:
        for _ in range(TICKS):
            writer.write(source.sample())
    report = report_file(str(path))
    assert report.findings and all(ft.stack is None for ft in report.findings)
    assert not any(ft.finding.rule == "host-device-sync" for ft in report.findings)
    assert "where it waits" not in report_text(report)


def test_a_stack_line_names_are_made_visible_in_the_text(tmp_path: Path) -> None:
    """Function and file names are the target's own: no control character reaches the
    terminal (gputop_hints.text), the JSON keeps them as data."""
    path = tmp_path / "run.jsonl"

    def hostile(pid: int) -> StackReading:
        r = _reading(pid)
        bad = Frame("evil\x1b]0;owned\x07", "/tmp/x.py", 1)
        top = Category("waiting-for-batch", 33, 0.825, (FrameCount(bad, 33, True),))
        return StackReading(pid, 40, (top, *r.categories[1:]), r.workers)

    _record(path, reading_of=hostile)
    report = report_file(str(path))
    text = report_text(report, width=200)
    assert "\x1b" not in text and "\x07" not in text
    assert "where it waits" in text
    doc = report_json(report)
    funcs = [
        f["stack"]["categories"][0]["top_frames"][0]["function"]
        for f in doc["findings"]
        if f["stack"]
    ]
    assert funcs and funcs[0] == "evil\x1b]0;owned\x07"


@pytest.mark.skipif(find_py_spy().path is None, reason="py-spy is not installed")
def test_record_samples_a_warned_process_and_report_quotes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: ``record --notify-cmd`` on the fake NVML, whose GPU runs kernels 10 %
    of the time for its one process, a real Python program spinning on ``loss.item()``.
    The hints warn on the GPU (low-utilization, after its 10 s hysteresis) and so on its
    one process; the recorder samples it with a real py-spy in the background and writes
    the reading; ``report`` on the file then names the line, as ``--once`` does live."""
    path = tmp_path / "run.jsonl"
    with running(tmp_path / "train.py", SYNCING) as child:
        procs = [FakeProc(child.pid, sm_util=10, mem_util=5)]
        with FakeNvml([FakeGpu(0, sm=10, power_mw=90_000, processes=procs)]):
            code = main(["record", "-o", str(path), "--duration", "22", "--notify-cmd", "true"])
    err = capsys.readouterr().err
    assert code == 0 and "1 stack reading(s)" in err
    with open_recording(path) as stream:
        assert sum(1 for _ in stream) == 22
        [stack] = stream.stacks
    reading = stack.reading
    assert reading.pid == child.pid and reading.reason is None and reading.samples >= 5
    assert reading.categories[0].name == "host-device-sync"
    assert main(["report", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    sync = next(f for f in doc["findings"] if f["rule"] == "host-device-sync")
    assert f"train.py:{SYNC_LINE})" in sync["summary"] and sync["severity"] == "warning"
    assert sync["stack"]["pid"] == child.pid and sync["stack"]["taken_at"] == stack.taken_at
    assert main(["report", str(path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"% waiting on the GPU (sync) at train ({tmp_path}/train.py:{SYNC_LINE})" in text


def test_record_samples_nothing_on_a_demo_or_with_no_stacks(tmp_path: Path) -> None:
    """A demo's pids are made up: its warnings are never sampled, --notify or not."""
    path = tmp_path / "demo.jsonl"
    argv = ["record", "-o", str(path), "--demo", "starved-loader", "--duration", "30"]
    assert main([*argv, "--notify-cmd", "true"]) == 0
    with open_recording(path) as stream:
        assert sum(1 for _ in stream) == 30 and stream.stacks == []
    assert '"type":"stack"' not in path.read_text()


def test_a_reading_that_finishes_after_the_last_tick_is_written_at_the_stop(
    tmp_path: Path,
) -> None:
    """A sampling that ends between the last tick and the stop: its reading is in the file."""
    from gputop_hints.sampling.record import record

    path = tmp_path / "run.jsonl"
    drains: list[int] = []

    def stacks() -> list[tuple[StackReading, float]]:
        drains.append(len(drains))
        # Nothing was done during the ticks; the reading is done once they are over.
        return [(_reading(4242), 1_700_000_100.0)] if len(drains) > 3 else []

    code = record(
        DemoSource(seed=1), path, interval_s=1.0, duration_s=3.0, pace=False, stacks=stacks
    )
    assert code == 0
    stream = open_recording(path)
    try:
        assert sum(1 for _ in stream) == 3
        assert [(s.pid, s.taken_at) for s in stream.stacks] == [(4242, 1_700_000_100.0)]
    finally:
        stream.close()
