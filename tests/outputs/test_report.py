"""The post-mortem report: statistics, time in findings, data quality, exit codes."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputop_hints.hints.engine import HintEngine
from gputop_hints.history import DEFAULT_WINDOW_S, History
from gputop_hints.model import Snapshot
from gputop_hints.outputs.report import (
    PercentStats,
    RateStats,
    Report,
    build_report,
    choose_hint_stride,
    report_json,
    report_text,
)
from gputop_hints.recording import RecordingWriter
from gputop_hints.recording.reader import open_recording
from gputop_hints.sources.demo import DemoSource
from gputop_hints.streams import ReadCounters, StreamInfo


def record_demo(path: Path, scenario: str, n: int, **kwargs: float) -> list[Snapshot]:
    source = DemoSource(scenario, **kwargs)  # type: ignore[arg-type]
    snaps = [source.sample() for _ in range(n)]
    with RecordingWriter(path) as writer:
        for s in snaps:
            writer.write(s)
    return snaps


def engine_times(snapshots: list[Snapshot]) -> dict[tuple[str, str], float]:
    """Seconds each (rule/subtype, subject) is visible when the engine sees every tick."""
    engine = HintEngine()
    history = History(window_s=DEFAULT_WINDOW_S, interval_s=snapshots[0].interval_s)
    out: dict[tuple[str, str], float] = {}
    for snap in snapshots:
        history.append(snap)
        for f in engine.update(history):
            key = (f.rule, str(f.subject))
            out[key] = out.get(key, 0.0) + snap.interval_s
    return out


def report_times(path: Path, stride: int) -> dict[tuple[str, str], float]:
    report = build_report(open_recording(path), hint_stride=stride)
    return {(ft.finding.rule, str(ft.finding.subject)): ft.seconds for ft in report.findings}


def test_percent_and_rate_histograms() -> None:
    values = [float(v % 101) for v in range(1000)]
    ps = PercentStats()
    for v in values:
        ps.add(v)
    ordered = sorted(values)
    assert ps.mean == pytest.approx(sum(values) / len(values))
    for q in (0.5, 0.95):
        exact = ordered[math.ceil(q * len(values)) - 1]
        got = ps.quantile(q)
        assert got is not None and exact - 0.5 <= got <= exact
    rs = RateStats()
    for v in (0.0, 1e3, 1e6, 1e9, 5e9):
        rs.add(v)
    assert rs.peak == 5e9
    p50 = rs.quantile(0.5)
    assert p50 is not None and 1e6 / 1.02 <= p50 <= 1e6


def test_statistics_match_the_snapshots(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    snaps = record_demo(path, "mixed", 120, gpus=8, processes=16)
    report = build_report(open_recording(path), hint_stride=1)
    assert report.samples == 120
    assert report.interval_s == 1.0
    assert report.start == snaps[0].timestamp and report.end == snaps[-1].timestamp
    for g in report.gpus:
        sm = [s.gpus[g.index].sm_percent for s in snaps]
        known = [v for v in sm if v is not None]
        assert g.sm.mean == pytest.approx(sum(known) / len(known))
        exact_p95 = sorted(known)[math.ceil(0.95 * len(known)) - 1]
        p95 = g.sm.quantile(0.95)
        assert p95 is not None and exact_p95 - 0.5 <= p95 <= exact_p95
        assert g.vram_peak_bytes == max(s.gpus[g.index].vram_used_bytes or 0 for s in snaps)
        rx = [s.gpus[g.index].pcie_rx_bytes_per_s or 0.0 for s in snaps]
        assert g.pcie_rx.peak == max(rx)
        assert g.pcie_rx.mean == pytest.approx(sum(rx) / len(rx))


@pytest.mark.parametrize("scenario", ["mixed", "starved-loader", "idle-vram"])
def test_every_tick_report_equals_the_live_engine(tmp_path: Path, scenario: str) -> None:
    path = tmp_path / "run.jsonl"
    snaps = record_demo(path, scenario, 200)
    assert report_times(path, 1) == engine_times(snaps)


@pytest.mark.parametrize(
    "scenario", ["mixed", "starved-loader", "small-batch", "pcie-thrash", "straggler"]
)
def test_strided_report_finds_what_the_live_engine_finds(tmp_path: Path, scenario: str) -> None:
    path = tmp_path / "run.jsonl"
    snaps = record_demo(path, scenario, 300)
    live = engine_times(snaps)
    strided = report_times(path, 5)
    # Findings shown for more than a minute live are found, and their time agrees
    # within the stride's granularity (a few strides per episode).
    steady = {k for k, s in live.items() if s >= 60}
    assert steady <= set(strided)
    for key in steady:
        assert strided[key] == pytest.approx(live[key], abs=30)
    # Nothing steady appears that live never showed.
    assert {k for k, s in strided.items() if s >= 60} <= set(live)


def test_exit_codes_follow_fail_on(tmp_path: Path) -> None:
    path = tmp_path / "idle.jsonl"
    record_demo(path, "idle-vram", 60)
    report = build_report(open_recording(path), hint_stride=1)
    assert report.exit_code(None) == 0
    assert report.exit_code("warning") == 1
    healthy = tmp_path / "healthy.jsonl"
    record_demo(healthy, "healthy", 60)
    calm = build_report(open_recording(healthy), hint_stride=1)
    assert calm.exit_code("warning") == 0
    assert calm.exit_code("critical") == 0
    with pytest.raises(ValueError):
        calm.exit_code("loud")


def test_json_is_plain_json_with_documented_keys(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_demo(path, "mixed", 60)
    doc = report_json(build_report(open_recording(path)))
    text = json.dumps(doc, allow_nan=False)
    assert json.loads(text)["schema_version"] == 1
    assert set(doc) >= {
        "file",
        "sampling",
        "gpus",
        "hints",
        "findings",
        "missing",
        "notes",
        "worst_severity",
    }
    assert {"seconds", "percent", "episodes", "evidence", "advice"} <= set(doc["findings"][0])
    assert {"mean", "p50", "p95", "max"} <= set(doc["gpus"][0]["sm_percent"])


def test_text_report_names_the_parts(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_demo(path, "starved-loader", 120)
    text = report_text(build_report(open_recording(path)), 120)
    assert "120 samples every 1 s" in text
    assert "Time in each finding" in text
    assert "input-starved" in text
    assert "advice:" in text


def test_coarse_sampling_is_called_out(tmp_path: Path) -> None:
    path = tmp_path / "coarse.jsonl"
    source = DemoSource("starved-loader", interval_s=60.0)
    with RecordingWriter(path) as writer:
        for _ in range(10):
            snap = source.sample()
            coarse = [dataclasses.replace(g, sm_samples=()) for g in snap.gpus]
            writer.write(dataclasses.replace(snap, gpus=tuple(coarse)))
    report = build_report(open_recording(path))
    assert any("1 sample per 60 s: too coarse to see input stalls" in n for n in report.notes)


class _Imported:
    """A stream like an importer's: per-GPU numbers only, no processes or host CPU."""

    def __init__(self, snapshots: list[Snapshot]) -> None:
        self.snapshots = snapshots
        self.info = StreamInfo(
            path="smi.csv",
            format="nvidia-smi-csv",
            interval_s=1.0,
            missing=("processes", "host_cpu", "pcie"),
        )
        self.counters = ReadCounters()

    def __iter__(self) -> Iterator[Snapshot]:
        return iter(self.snapshots)

    def close(self) -> None:
        pass


def test_missing_metrics_are_absent_and_rules_not_evaluated() -> None:
    source = DemoSource("healthy")
    snaps = []
    for _ in range(30):
        s = source.sample()
        gpus = tuple(
            dataclasses.replace(g, pcie_rx_bytes_per_s=None, pcie_tx_bytes_per_s=None)
            for g in s.gpus
        )
        host = dataclasses.replace(s.host, cpu_percent_per_core=())
        snaps.append(dataclasses.replace(s, gpus=gpus, processes=(), host=host))
    report = build_report(_Imported(snaps))
    assert "cores-contended" in report.not_evaluated
    assert set(report.not_evaluated["cores-contended"]) == {"processes", "host_cpu"}
    # input-starved still reads the GPU's own trace for a duty cycle (cause unknown)
    assert "input-starved" not in report.not_evaluated
    assert report.not_evaluated["pcie-thrash"][0] == "pcie"
    assert all(g.pcie_rx.count == 0 for g in report.gpus)
    text = report_text(report, 120)
    assert "not evaluated: " in text and "cores-contended (no processes, host_cpu" in text
    assert "n/a" in text  # PCIe: absent, not 0


def test_a_file_without_profiling_does_not_evaluate_the_rules_that_need_it() -> None:
    """tensor-cores-idle judges only on GPM/DCGM tensor and SM activity: a file without
    them (the demo, nvidia-smi logs) says so, one with them (dcgmi dmon SMACT) does not."""
    source = DemoSource("healthy")
    snaps = [source.sample() for _ in range(20)]
    assert not any(g.profiling_known for s in snaps for g in s.gpus)
    report = build_report(_Imported(snaps))
    assert "GPM/DCGM profiling" in report.not_evaluated["tensor-cores-idle"]
    assert "GPM/DCGM profiling in this file)" in report_text(report, 120)
    profiled = [
        dataclasses.replace(
            s, gpus=tuple(dataclasses.replace(g, sm_active_percent=70.0) for g in s.gpus)
        )
        for s in snaps
    ]
    report = build_report(_Imported(profiled))
    assert "GPM/DCGM profiling" not in report.not_evaluated.get("tensor-cores-idle", [])


def test_empty_truncated_and_damaged_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    report = build_report(open_recording(empty))
    assert report.samples == 0
    assert report.exit_code("warning") == 0
    assert "no samples" in report_text(report, 100)

    path = tmp_path / "run.jsonl"
    record_demo(path, "healthy", 20)
    lines = path.read_bytes().split(b"\n")
    lines.insert(5, b"garbage {{{")
    data = b"\n".join(lines)
    path.write_bytes(data[: len(data) - 30])
    report = build_report(open_recording(path))
    assert report.samples == 19
    assert any("malformed line(s) skipped, the first at line 6" in n for n in report.notes)
    assert any("ends mid-line" in n for n in report.notes)


def test_gaps_are_noted(tmp_path: Path) -> None:
    path = tmp_path / "gappy.jsonl"
    snaps = record_demo(path, "healthy", 30)
    with RecordingWriter(path) as writer:
        for i, s in enumerate(snaps):
            writer.write(dataclasses.replace(s, timestamp=s.timestamp + (100 if i >= 15 else 0)))
    report = build_report(open_recording(path))
    assert report.gaps == 1
    assert report.longest_gap_s == pytest.approx(101)


def test_auto_stride_scales_with_size() -> None:
    assert choose_hint_stride(600, 73) == 1  # ten minutes at 8 x 64: every tick
    # a day at 8 GPUs x 64 processes: about every two minutes (bench/report_speed.py)
    assert choose_hint_stride(86_400, 73) == 127
    assert choose_hint_stride(86_400, 3) == 6
    assert choose_hint_stride(0, 10) == 1
    # polled every 100 ms: judged once a second of log time, as live by default
    assert choose_hint_stride(600, 9, interval_s=0.1) == 10
    assert choose_hint_stride(600, 9, interval_s=2.0) == 1
    assert choose_hint_stride(86_400, 73, interval_s=0.1) == 127  # the budget, if coarser


def test_a_log_polled_ten_times_a_second_is_judged_once_a_second() -> None:
    """An 8-GPU ``-lms 100`` log: the hints run on ~1 s of log time, not every 0.1 s
    poll, and find what they find at every poll -- the same rules on the same GPUs."""
    from gputop_hints.sources.files import open_stream

    path = _FIXTURES / "nvsmi_noindex_8gpu_lms100_short.csv"

    def findings(stride: int | None) -> tuple[Report, set[tuple[str, int, str]]]:
        stream = open_stream(path)
        try:
            report = build_report(stream, hint_stride=stride)
        finally:
            stream.close()
        seen = {
            (f.finding.rule, f.finding.subject.gpu_index, f.worst.name) for f in report.findings
        }
        return report, seen

    every, seen_every = findings(1)
    auto, seen_auto = findings(None)
    assert every.hint_stride == 1
    assert auto.hint_stride > 1 and auto.hint_evaluations < every.hint_evaluations
    assert seen_auto == seen_every
    assert "once a second of log time" in " ".join(report_text(auto).split())


_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"
_TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


def _small_logs() -> list[Path]:
    from gputop_hints.sources.files import open_stream

    found = []
    for path in sorted([*_FIXTURES.iterdir(), *(_TRACES.iterdir() if _TRACES.is_dir() else [])]):
        try:
            open_stream(path).close()
        except (ValueError, OSError):
            continue
        found.append(path)
    return found


def test_small_imported_logs_run_the_hints_on_every_tick() -> None:
    from gputop_hints.sources.files import open_stream

    logs = _small_logs()
    assert logs
    for path in logs:
        stream = open_stream(path)
        try:
            report = build_report(stream)
        finally:
            stream.close()
        # Every tick, except that a log polled faster than once a second is judged
        # about once a second of log time (HINT_CADENCE_S).
        if report.interval_s is None or report.interval_s >= 1.0:
            assert report.hint_stride == 1, path.name
        assert report.hint_evaluations == report.samples // report.hint_stride, path.name


def test_long_imported_log_gets_a_stride_from_its_estimated_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputop_hints.outputs.report import build as build_module
    from gputop_hints.sources.files import open_stream

    monkeypatch.setattr(build_module, "HINT_BUDGET", 500)
    monkeypatch.setattr(build_module, "PROBE_MIN_TICKS", 50)
    monkeypatch.setattr(build_module, "PROBE_MIN_BYTES", 20_000)
    ticks = 3000
    path = tmp_path / "gpu.csv"
    with path.open("w") as f:
        f.write("timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n")
        for i in range(ticks):
            stamp = f"2025/01/15 {10 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000"
            f.write(f"{stamp}, 0, {(i * 7) % 101} %, 1000 MiB, 81920 MiB\n")
    stream = open_stream(path)
    try:
        report = build_report(stream)
    finally:
        stream.close()
    assert report.samples == ticks  # the probed ticks are not lost
    exact = choose_hint_stride(ticks, 2, 500)
    # Estimated where the reader read on, not from how far it read ahead: close to exact.
    assert 0.8 * exact <= report.hint_stride <= 1.2 * exact
    assert report.hint_evaluations == ticks // report.hint_stride
    assert report_json(report)["hints"]["stride_ticks"] == report.hint_stride


def test_rules_with_equal_time_are_listed_by_name_whatever_order_they_came_in(
    tmp_path: Path,
) -> None:
    """Two runs of one report print the same text: ties in "Time in each finding" (the
    rules arrive from a set) are broken by the rule's name."""
    path = tmp_path / "run.jsonl"
    record_demo(path, "starved-loader", 60)
    report = build_report(open_recording(path))
    texts = []
    orders = (
        ["small-batch", "input-starved", "idle-holding-vram"],
        ["idle-holding-vram", "small-batch", "input-starved"],
    )
    for order in orders:
        report.rule_seconds = {rule: 30.0 for rule in order}
        text = report_text(report, 120)
        section = text.split("Time in each finding", 1)[1].split("\n\n", 1)[0]
        texts.append([line.split()[0] for line in section.splitlines()[1:]])
    assert texts[0] == texts[1] == ["idle-holding-vram", "input-starved", "small-batch"]


def _vram_by_gpu(path: Path) -> dict[int, tuple[float, list[float]]]:
    """Per GPU index: memory.total and the memory.used readings (MiB), read with the
    csv module from an nvidia-smi --query-gpu CSV (a repeated header row skipped)."""
    import csv

    with path.open(newline="") as f:
        rows = [[cell.strip() for cell in row] for row in csv.reader(f) if row]
    head = rows[0]
    col = {name.split(" [")[0]: i for i, name in enumerate(head)}
    out: dict[int, tuple[float, list[float]]] = {}
    for row in rows[1:]:
        if row == head:
            continue
        total = float(row[col["memory.total"]].removesuffix(" MiB"))
        used = float(row[col["memory.used"]].removesuffix(" MiB"))
        out.setdefault(int(row[col["index"]]), (total, []))[1].append(used)
    return out


@pytest.mark.parametrize("name", ["nvsmi_full_2gpu.csv", "nvsmi_no_timestamp_4gpu.csv"])
def test_imported_log_with_memory_total_reports_vram_percent(name: str) -> None:
    from gputop_hints.sources.files import open_stream

    path = _FIXTURES / name
    expected = _vram_by_gpu(path)
    stream = open_stream(path)
    try:
        report = build_report(stream)
    finally:
        stream.close()
    gpus = {g["index"]: g for g in report_json(report)["gpus"]}
    assert sorted(gpus) == sorted(expected)
    text = report_text(report)
    for index, (total_mib, used_mib) in expected.items():
        g = gpus[index]
        shares = [u / total_mib * 100.0 for u in used_mib]
        assert g["vram_total_bytes"] == int(total_mib) * 2**20
        assert g["vram_used_percent"]["samples"] == len(used_mib)
        assert g["vram_used_percent"]["mean"] == pytest.approx(sum(shares) / len(shares))
        assert g["vram_used_percent"]["max"] == pytest.approx(max(shares))
        assert f"({max(used_mib) / total_mib * 100:.0f}%)" in text


def test_the_process_table_names_each_process_container(tmp_path: Path) -> None:
    """A recording keeps each process's container (or pod, or SLURM job); the report's
    process table names it, and its JSON carries it."""
    snaps = [
        dataclasses.replace(
            s,
            processes=tuple(
                dataclasses.replace(p, container="pod research/bert-7f9c") for p in s.processes
            ),
        )
        for s in [DemoSource("healthy", seed=0).sample() for _ in range(20)]
    ]
    path = tmp_path / "pod.jsonl"
    with RecordingWriter(path) as writer:
        for s in snaps:
            writer.write(s)
    report = build_report(open_recording(path), hint_stride=1)
    assert "in pod research/bert-7f9c" in report_text(report, 120)
    [first, *_] = report_json(report)["processes"]
    assert first["container"] == "pod research/bert-7f9c"
