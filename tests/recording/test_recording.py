"""Recordings: exact round trips, gzip, rotation, damaged files, killed recorders."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gputop_hints.model import Snapshot
from gputop_hints.recording import FORMAT, RecordingWriter
from gputop_hints.recording.reader import count_ticks, looks_like_recording, open_recording
from gputop_hints.sampling.record import record
from gputop_hints.sources.demo import DemoSource
from gputop_hints.streams import UnrecognisedFormat
from tests.support.paths import REPO


def demo_snapshots(n: int, scenario: str = "mixed", **kwargs: Any) -> list[Snapshot]:
    """Demo ticks, process tree (launchers) and all."""
    source = DemoSource(scenario, **kwargs)
    return [source.sample() for _ in range(n)]


def write(path: Path, snapshots: list[Snapshot], **kwargs: int) -> RecordingWriter:
    with RecordingWriter(path, **kwargs) as writer:
        for snap in snapshots:
            writer.write(snap)
    return writer


def without_cost(snap: Snapshot) -> Snapshot:
    """The demo's snapshots are deterministic except the simulator's own cost."""
    return dataclasses.replace(snap, sample_duration_s=None)


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_round_trip_is_exact_on_every_demo_scenario(tmp_path: Path, name: str) -> None:
    snapshots = demo_snapshots(40, "mixed", gpus=8, processes=64)
    for scenario in ("healthy", "starved-loader", "straggler"):
        snapshots += demo_snapshots(10, scenario)
    path = tmp_path / name
    write(path, snapshots)
    stream = open_recording(path)
    assert list(stream) == snapshots
    assert stream.counters.bad_lines == 0
    assert stream.info.format == "recording"
    assert stream.info.gpu_count == 8
    assert count_ticks(path) == len(snapshots)


def test_decoders_refuse_a_model_whose_fields_moved() -> None:
    """The decoders build samples by position: a model field added or moved must stop
    the import with a message naming the class, never shift every value by one."""
    from dataclasses import fields

    from gputop_hints.model import GpuProcess
    from gputop_hints.recording.format import _fields_in_order

    names = tuple(f.name for f in fields(GpuProcess))
    _fields_in_order(GpuProcess, names)
    with pytest.raises(TypeError, match="GpuProcess fields changed"):
        _fields_in_order(GpuProcess, (names[1], names[0], *names[2:]))


def test_header_describes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    write(path, demo_snapshots(3, "mixed", gpus=2, processes=4))
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["format"] == FORMAT
    assert header["schema_version"] == 1
    assert header["interval_s"] == 1.0
    assert header["hostname"] == "demo-node"
    assert [g["index"] for g in header["gpus"]] == [0, 1]
    assert header["tick_columns"]["tick"][:3] == ["timestamp", "sample_duration_s", "gpus"]
    ticks = [line for line in lines if line.startswith("[")]
    assert len(ticks) == 3
    # Static records are written once, not every tick.
    processes = [line for line in lines if '"type":"process"' in line]
    assert len(processes) == 4


def _with_worker_commands(snap: Snapshot) -> Snapshot:
    """Every second worker an inductor compile worker, the rest forks of the main process."""
    return dataclasses.replace(
        snap,
        processes=tuple(
            dataclasses.replace(
                p,
                workers=tuple(
                    dataclasses.replace(
                        w,
                        command=(
                            "python -m torch/_inductor/compile_worker/__main__.py --workers=8"
                            if i % 2
                            else p.command
                        ),
                    )
                    for i, w in enumerate(p.workers)
                ),
            )
            for p in snap.processes
        ),
    )


def test_worker_command_lines_round_trip_and_older_records_read_as_unknown(
    tmp_path: Path,
) -> None:
    snapshots = [_with_worker_commands(s) for s in demo_snapshots(5, "healthy")]
    assert any(w.command for s in snapshots for p in s.processes for w in p.workers)
    path = tmp_path / "run.jsonl"
    write(path, snapshots)
    assert list(open_recording(path)) == snapshots
    # A recording from before worker commands: its worker records have no "command".
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for rec in lines:
        if isinstance(rec, dict):
            rec.pop("command", None) if rec.get("type") == "worker" else None
    path.write_text("\n".join(json.dumps(rec) for rec in lines) + "\n")
    old = list(open_recording(path))
    assert all(w.command is None for s in old for p in s.processes for w in p.workers)
    assert [len(p.workers) for s in old for p in s.processes] == [
        len(p.workers) for s in snapshots for p in s.processes
    ]


def test_frameworks_round_trip_and_unknown_names_from_a_file_are_dropped(
    tmp_path: Path,
) -> None:
    snapshots = [
        dataclasses.replace(
            s,
            processes=tuple(
                dataclasses.replace(p, frameworks=("tensorflow",)) for p in s.processes
            ),
        )
        for s in demo_snapshots(3, "healthy")
    ]
    path = tmp_path / "run.jsonl"
    write(path, snapshots)
    assert list(open_recording(path)) == snapshots
    # A file naming something else (or from before frameworks) reads as none known.
    text = path.read_text().replace('"tensorflow"', '"\\u001b[31mevil"')
    path.write_text(text)
    assert all(p.frameworks == () for s in open_recording(path) for p in s.processes)


def test_profiling_percentages_round_trip_and_stay_out_of_files_without_them(
    tmp_path: Path,
) -> None:
    plain = demo_snapshots(3, "healthy")
    profiled = [
        dataclasses.replace(
            s,
            gpus=tuple(
                dataclasses.replace(
                    g, sm_active_percent=80.5, sm_occupancy_percent=None,
                    tensor_active_percent=12.0, dram_active_percent=33.25,
                )
                for g in s.gpus
            ),
        )
        for s in plain
    ]
    path = tmp_path / "run.jsonl"
    write(path, profiled)
    assert list(open_recording(path)) == profiled
    write(path, plain)  # no source that profiles: the tick lines are as before
    ticks = [json.loads(x) for x in path.read_text().splitlines() if x.startswith("[")]
    assert all(len(g) == 11 for t in ticks for g in t[2])
    assert list(open_recording(path)) == plain


def test_unknown_records_and_keys_are_ignored(tmp_path: Path) -> None:
    snapshots = demo_snapshots(3, "healthy")
    path = tmp_path / "run.jsonl"
    write(path, snapshots)
    lines = path.read_text().splitlines()
    lines.insert(1, json.dumps({"type": "from-the-future", "x": 1}))
    lines[0] = json.dumps({**json.loads(lines[0]), "new_key": [1, 2]})
    path.write_text("\n".join(lines) + "\n")
    assert list(open_recording(path)) == snapshots


def test_newer_schema_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"format": FORMAT, "schema_version": 99}) + "\n")
    with pytest.raises(UnrecognisedFormat, match="newer"):
        open_recording(path)


def test_looks_like_recording_for_plain_and_gzip(tmp_path: Path) -> None:
    for name in ("a.jsonl", "a.jsonl.gz"):
        path = tmp_path / name
        write(path, demo_snapshots(2, "healthy"))
        assert looks_like_recording(path.read_bytes()[:4096])
    assert not looks_like_recording(b"timestamp, name, utilization.gpu [%]\n")
    assert not looks_like_recording(b"\x1f\x8bgarbage")
    assert not looks_like_recording(b"")


def test_gzip_is_told_by_magic_bytes_not_the_name(tmp_path: Path) -> None:
    snapshots = demo_snapshots(3, "healthy")
    path = tmp_path / "run.gz"
    write(path, snapshots)
    renamed = tmp_path / "run.jsonl"
    path.rename(renamed)
    assert list(open_recording(renamed)) == snapshots


def test_rotation_keeps_each_file_readable_alone(tmp_path: Path) -> None:
    snapshots = demo_snapshots(60, "mixed", gpus=2, processes=6)
    path = tmp_path / "run.jsonl"
    writer = write(path, snapshots, max_bytes=20_000, keep=3)
    assert writer.rotations >= 3
    files = [path, *(path.with_name(f"run.jsonl.{i}") for i in (1, 2, 3))]
    assert all(f.exists() for f in files)
    assert not path.with_name("run.jsonl.4").exists()
    read = [list(open_recording(f)) for f in reversed(files)]
    flat = [s for part in read for s in part]
    # The newest files hold the newest ticks, in order and exact; the oldest were dropped.
    assert flat == snapshots[-len(flat) :]
    assert all(part for part in read)
    for f in files:
        assert f.stat().st_size < 20_000 + 10_000


def test_empty_file_is_a_stream_with_no_snapshots(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    stream = open_recording(path)
    assert list(stream) == []
    assert "empty" in stream.info.detail


def test_garbage_is_refused_not_crashed_on(tmp_path: Path) -> None:
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(os.urandom(3000))
    with pytest.raises(UnrecognisedFormat):
        open_recording(path)


def test_malformed_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    snapshots = demo_snapshots(6, "healthy")
    path = tmp_path / "run.jsonl"
    write(path, snapshots)
    lines = path.read_text().splitlines()
    tick_lines = [i for i, line in enumerate(lines) if line.startswith("[")]
    bad = tick_lines[2]
    lines[bad] = "[1, 2, not json"
    lines.insert(tick_lines[4], '["wrong", "shape"]')
    path.write_text("\n".join(lines) + "\n")
    stream = open_recording(path)
    got = list(stream)
    assert got == [s for i, s in enumerate(snapshots) if i != 2]
    assert stream.counters.bad_lines == 2
    assert stream.counters.first_bad_line == bad + 1


def test_truncated_last_line_loses_only_that_tick(tmp_path: Path) -> None:
    snapshots = demo_snapshots(5, "healthy")
    path = tmp_path / "run.jsonl"
    write(path, snapshots)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    stream = open_recording(path)
    assert list(stream) == snapshots[:-1]
    assert stream.truncated
    assert stream.counters.first_bad_reason == "truncated last line"


def test_cut_gzip_stream_reads_up_to_the_cut(tmp_path: Path) -> None:
    snapshots = demo_snapshots(8, "healthy")
    path = tmp_path / "run.jsonl.gz"
    write(path, snapshots)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    stream = open_recording(path)
    got = list(stream)
    assert 0 < len(got) < len(snapshots)
    assert got == snapshots[: len(got)]
    assert stream.truncated


def test_nan_and_infinity_are_written_as_unknown(tmp_path: Path) -> None:
    (snap,) = demo_snapshots(1, "healthy")
    gpu = dataclasses.replace(snap.gpus[0], power_watts=float("nan"))
    odd = dataclasses.replace(snap, gpus=(gpu, *snap.gpus[1:]))
    path = tmp_path / "run.jsonl"
    write(path, [odd])
    (back,) = open_recording(path)
    assert back.gpus[0].power_watts is None


# -- the recorder as a process ---------------------------------------------------------

RECORDER = """
import sys
from gputop_hints.sampling.record import record
from gputop_hints.sources.demo import DemoSource
sys.exit(record(DemoSource("mixed", gpus=2, processes=6), sys.argv[1], interval_s=0.25))
"""


def _start_recorder(path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", RECORDER, str(path)],
        cwd=REPO,
        stderr=subprocess.PIPE,
    )


def _wait_for_ticks(path: Path, n: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.exists() and count_ticks(path) >= n:
            return
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    raise AssertionError("the recorder wrote too little")


def test_sigkilled_recorder_loses_at_most_the_last_tick(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    proc = _start_recorder(path)
    _wait_for_ticks(path, 6, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)  # waits, and closes the pipes
    stream = open_recording(path)
    got = list(stream)
    stream.close()
    expected = demo_snapshots(len(got) + 1, "mixed", gpus=2, processes=6)
    assert len(got) >= 6
    assert [without_cost(s) for s in got] == [without_cost(s) for s in expected[: len(got)]]
    assert stream.counters.bad_lines <= 1
    # Each tick was flushed whole: at most the line being written is partial.
    whole = path.read_bytes().count(b"\n")
    assert whole >= len(got)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_close_a_gzip_recording_cleanly(tmp_path: Path, sig: int) -> None:
    path = tmp_path / "run.jsonl.gz"
    proc = _start_recorder(path)
    _wait_for_ticks(path, 4, proc)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    summary = err.decode()
    assert "ticks" in summary and str(path) in summary
    # A complete gzip stream (trailer written): gzip reads it to the end without error.
    with gzip.open(path, "rb") as f:
        text = f.read().decode()
    assert text.endswith("\n")
    stream = open_recording(path)
    got = list(stream)
    stream.close()
    assert len(got) >= 4 and not stream.truncated and stream.counters.bad_lines == 0


def test_record_stops_after_duration_and_reports(tmp_path: Path) -> None:
    import io

    path = tmp_path / "run.jsonl"
    err = io.StringIO()
    seen: list[Snapshot] = []
    code = record(
        DemoSource("healthy"),
        path,
        interval_s=1.0,
        duration_s=5.0,
        on_tick=seen.append,
        stderr=err,
    )
    assert code == 0
    assert len(seen) == 5
    assert list(open_recording(path)) == seen
    assert "5 ticks" in err.getvalue()


def test_record_to_an_unwritable_path_returns_1(tmp_path: Path) -> None:
    import io

    blocker = tmp_path / "file"
    blocker.write_text("")
    err = io.StringIO()
    code = record(
        DemoSource("healthy"),
        blocker / "sub" / "run.jsonl",
        interval_s=1.0,
        duration_s=2.0,
        stderr=err,
    )
    assert code == 1
    assert "cannot write" in err.getvalue()


def test_live_source_over_fake_nvml_round_trips_in_real_time(tmp_path: Path) -> None:
    from gputop_hints.sources.live.source import LiveSource
    from tests.support.fake_nvml import FakeNvml, make_gpus

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        gpus = make_gpus(2, pids_per_gpu=[[child.pid], []], sm=40, pcie_rx_kib=1000)
        path = tmp_path / "live.jsonl.gz"
        seen: list[Snapshot] = []
        with FakeNvml(gpus):
            source = LiveSource()
            try:
                code = record(source, path, interval_s=0.3, duration_s=1.2, on_tick=seen.append)
            finally:
                source.close()
    finally:
        child.kill()
        child.wait()
    assert code == 0
    assert len(seen) == 4
    back = list(open_recording(path))
    assert back == seen
    assert back[-1].source == "live"
    assert [p.pid for p in back[-1].processes] == [child.pid]
    assert back[-1].gpus[0].pcie_rx_bytes_per_s == 1000 * 1024


def test_the_format_and_writer_stand_below_the_sources() -> None:
    """recording/ depends only on the model: importing it loads no source, so the
    reader in sources/ can build on it without an import cycle."""
    code = (
        "import sys, gputop_hints.recording\n"
        "print(sorted(m for m in sys.modules if m.startswith('gputop_hints.sources')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def _second_tick_sm_written_as(
    tmp_path: Path, written: str, reasons: list[str] | None = None
) -> list[Snapshot]:
    """A 4-tick recording whose second tick has GPU 0's SM % written as ``written`` (text
    put in the line as it stands, separator included) and, if given, throttle reasons;
    checks that both the full read and the report's fast path read that SM % as unknown
    and count the line, and returns the full read's snapshots."""
    path = tmp_path / "run.jsonl"
    write(path, demo_snapshots(4, "healthy"))
    lines = path.read_text().splitlines()
    i = [n for n, line in enumerate(lines) if line.startswith("[")][1]
    tick = json.loads(lines[i])
    tick[2][0][1] = "@"
    if reasons is not None:
        tick[2][0][9] = reasons
    lines[i] = json.dumps(tick, separators=(",", ":")).replace(',"@"', written)
    path.write_text("\n".join(lines) + "\n")
    stream = open_recording(path)
    got = list(stream)
    assert len(got) == 4
    assert got[1].gpus[0].sm_percent is None
    assert stream.counters.bad_lines == 1
    lazy = open_recording(path)
    sm = [t.gpus[0][1] for t in lazy.lazy_ticks()]
    assert sm[1] is None and None not in (sm[0], sm[2], sm[3])
    assert lazy.counters.bad_lines == 1
    return got


@pytest.mark.parametrize("token", ["1e400", "1E+400", "-1e999"])
@pytest.mark.parametrize("reasons", [["sw_power_cap"], ["hw_slowdown_engaged_here"] * 12])
def test_huge_exponents_are_unknown_however_many_words_the_line_holds(
    tmp_path: Path, token: str, reasons: list[str]
) -> None:
    """A number past any measurement written with an exponent, next to throttle reasons
    with few or many letters e: that GPU's SM % reads as unknown and the line is counted,
    by both the full read and the report's fast path."""
    got = _second_tick_sm_written_as(tmp_path, "," + token, reasons)
    assert got[1].gpus[0].throttle_reasons == tuple(reasons)


@pytest.mark.parametrize("space", [" ", "\t", "\r", "\r\t "])
def test_an_integer_past_64_bits_after_any_json_space_is_unknown(
    tmp_path: Path, space: str
) -> None:
    """JSON allows a space, tab or carriage return before a number: a 20-digit integer
    after any of them is past any measurement, read as unknown and the line counted --
    by the full read and by the report's fast path -- never handed on as a number."""
    _second_tick_sm_written_as(tmp_path, "," + space + "9" * 20)


def test_a_job_across_nodes_keeps_each_gpus_node(tmp_path: Path) -> None:
    """``record --prometheus URL --job ID`` writes every GPU's node: a replay groups them
    as the live view did (uneven-nodes runs there too). Older files read with no node."""
    source = DemoSource("healthy", gpus=4, processes=4, seed=0)
    snapshots = []
    for _ in range(3):
        snap = source.sample()
        gpus = tuple(
            dataclasses.replace(g, node=("node-a", "node-b")[g.index // 2], name=f"GPU {g.index}")
            for g in snap.gpus
        )
        snapshots.append(dataclasses.replace(snap, gpus=gpus, processes=(), source="prometheus"))
    path = tmp_path / "job.jsonl"
    with RecordingWriter(path) as writer:
        for snap in snapshots:
            writer.write(snap)
    got = list(open_recording(path))
    assert [[g.node for g in s.gpus] for s in got] == [["node-a", "node-a", "node-b", "node-b"]] * 3
    assert got == snapshots
