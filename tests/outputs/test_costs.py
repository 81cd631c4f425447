"""What the findings cost (hints.costs): the report's figures against an independent
count from the recording's own lines, and the sharing rules on hand-built ticks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputop_hints.hints.costs import CostMeter, allot
from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Finding, Severity, Subject
from gputop_hints.history import DEFAULT_WINDOW_S, History
from gputop_hints.outputs.cost_text import cost_line
from gputop_hints.outputs.report import build_report, report_json, report_text
from gputop_hints.recording.reader import open_recording
from tests.hints.windows import G, P, Run, Tick
from tests.outputs.test_report import record_demo

WAITING = {"input-starved", "idle-holding-vram", "small-batch", "pcie-thrash", "straggler"}
"""The demo's warnings whose cause is time the GPU waits (docs/hints.md, "What a finding
costs"); memory-bound, throttled clocks and the info findings cost nothing."""


TickLine = tuple[float, dict[int, tuple[float, float]], dict[int, dict[int, int]]]
"""A tick line: its time, each GPU's (SM %, power W), each GPU's process memory by pid."""


def _ticks(path: Path) -> list[TickLine]:
    """Each tick line of a recording read with the json module alone: its time, each
    GPU's (SM %, power W) and each GPU's process memory by pid."""
    lines = path.read_text().splitlines()
    columns = json.loads(lines[0])["tick_columns"]
    at = {name: i for i, name in enumerate(columns["tick"])}
    g_at = {name: i for i, name in enumerate(columns["gpu"])}
    p_at = {name: i for i, name in enumerate(columns["process"])}
    out = []
    for line in lines[1:]:
        row = json.loads(line)
        if not isinstance(row, list):
            continue  # a process, worker, launcher or meta record
        gpus = {
            g[g_at["index"]]: (g[g_at["sm_percent"]], g[g_at["power_watts"]])
            for g in row[at["gpus"]]
        }
        vram: dict[int, dict[int, int]] = {}
        for p in row[at["processes"]]:
            vram.setdefault(p[p_at["gpu_index"]], {})[p[p_at["pid"]]] = p[p_at["vram_bytes"]]
        out.append((row[at["timestamp"]], gpus, vram))
    return out


def _independent(path: Path) -> dict[tuple[int, int | None], tuple[float, float]]:
    """(GPU, pid) -> (GPU-seconds lost, joules): at every tick a waiting warning is shown
    about it (the engine on every tick decides that, as the report with stride 1 does),
    the recording's idle share of its GPU x the process's part of the GPU's memory --
    once a tick, however many findings name it."""
    ticks = _ticks(path)
    engine = HintEngine()
    snaps = list(open_recording(path))
    history = History(window_s=DEFAULT_WINDOW_S, interval_s=snaps[0].interval_s)
    out: dict[tuple[int, int | None], tuple[float, float]] = {}
    for snap, (ts, gpus, vram) in zip(snaps, ticks, strict=True):
        assert snap.timestamp == ts
        history.append(snap)
        subjects = {
            (f.subject.gpu_index, f.subject.pid)
            for f in engine.update(history)
            if f.rule in WAITING and f.severity >= Severity.WARNING
        }
        per_gpu = [gpu for gpu, _ in subjects]
        assert len(per_gpu) == len(set(per_gpu)), "one subject per GPU in these scenarios"
        for gpu, pid in subjects:
            assert gpu is not None
            sm, watts = gpus[gpu]
            tenants = vram.get(gpu, {})
            part = (
                1.0 if pid is None or pid not in tenants else tenants[pid] / sum(tenants.values())
            )
            lost = snap.interval_s * (1.0 - sm / 100.0) * part
            s, j = out.get((gpu, pid), (0.0, 0.0))
            out[(gpu, pid)] = (s + lost, j + lost * watts)
    return out


@pytest.mark.parametrize("scenario", ["mixed", "straggler"])
def test_report_costs_match_an_independent_count(tmp_path: Path, scenario: str) -> None:
    path = tmp_path / f"{scenario}.jsonl"
    record_demo(path, scenario, 240, gpus=8, processes=16)
    doc = report_json(build_report(open_recording(path), hint_stride=1), cost_per_gpu_hour=2.5)
    expected = _independent(path)
    assert expected, "the scenario shows a waiting warning"
    found: dict[tuple[int, int | None], tuple[float, float]] = {}
    for f in doc["findings"]:
        if f["rule"] not in WAITING:
            assert f["lost_gpu_seconds"] == 0.0, f["rule"]
            continue
        key = (f["subject"]["gpu_index"], f["subject"]["pid"])
        s, j = found.get(key, (0.0, 0.0))
        found[key] = (s + f["lost_gpu_seconds"], j + (f["lost_energy_j"] or 0.0))
    assert set(found) == set(expected)
    for key, (lost, joules) in expected.items():
        assert found[key][0] == pytest.approx(lost, rel=1e-6), key
        assert found[key][1] == pytest.approx(joules, rel=1e-6), key
    costs = doc["costs"]
    assert costs["gpu_hours"] == pytest.approx(8 * 240 / 3600)
    total = sum(s for s, _ in expected.values())
    assert costs["lost_gpu_hours"] == pytest.approx(total / 3600, rel=1e-6)
    assert costs["lost_energy_kwh"] == pytest.approx(
        sum(j for _, j in expected.values()) / 3.6e6, rel=1e-6
    )
    assert costs["lost_cost"] == pytest.approx(total / 3600 * 2.5, rel=1e-6)
    assert sum(costs["lost_gpu_hours_by_rule"].values()) == pytest.approx(total / 3600, rel=1e-6)


def test_the_text_report_leads_with_the_cost_line(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    record_demo(path, "mixed", 180, gpus=8, processes=16)
    report = build_report(open_recording(path), hint_stride=1)
    text = report_text(report, 120, cost_per_gpu_hour=3.0)
    line = cost_line(report.costs(), 8, report.duration_s, 3.0)
    assert line.startswith("8 GPUs x 3 min = 24 GPU-min; ")
    assert "input-starved" in line and "drawn meanwhile" in line and "at 3/GPU-h" in line
    head = " ".join(text.splitlines()[:6])  # the line may be wrapped to the width
    assert line in " ".join(head.split())


def test_a_healthy_recording_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "healthy.jsonl"
    record_demo(path, "healthy", 120)
    report = build_report(open_recording(path), hint_stride=1)
    assert report.costs().lost_s == 0.0
    assert "none lost" in report_text(report, 120)


# --- the sharing rules on hand-built ticks ------------------------------------------


def _finding(rule: str, gpu: int, pid: int | None, severity: Severity) -> Finding:
    return Finding(rule, Subject(gpu, pid), severity, rule, "", (), ())


def test_a_shared_gpu_is_split_by_memory_and_never_counted_twice() -> None:
    run = Run().feed(
        [
            Tick(
                gpus=(G(sm=20.0, power=300.0),),
                procs=(P(pid=1, vram_gib=30.0), P(pid=2, vram_gib=10.0)),
            )
        ]
        * 4
    )
    one = allot([_finding("input-starved", 0, 1, Severity.WARNING)], run.history, 4)
    assert [(x.pid, round(x.share, 6)) for x in one] == [(1, 0.6)]  # 80 % idle x 3/4
    both = allot(
        [
            _finding("input-starved", 0, 1, Severity.WARNING),
            _finding("idle-holding-vram", 0, 2, Severity.WARNING),
            _finding("low-utilization", 0, None, Severity.WARNING),
            _finding("input-starved", 0, 1, Severity.WARNING),  # the same pid again
        ],
        run.history,
        4,
    )
    assert sum(x.share for x in both) == pytest.approx(0.8)  # never more than the idle share
    # the processes' own shares first (3/4 and 1/4 of the idle share); none left for the GPU
    assert {x.pid: round(x.share, 6) for x in both} == {1: 0.6, 2: 0.2}
    assert all(x.watts == 300.0 for x in both)


def test_not_working_loses_the_whole_gpu_and_info_costs_nothing() -> None:
    run = Run().feed([Tick(gpus=(G(sm=100.0),), procs=(P(vram_gib=10.0),))] * 3)
    hang = allot([_finding("collective-hang", 0, None, Severity.CRITICAL)], run.history, 3)
    assert [x.share for x in hang] == [1.0]
    assert allot([_finding("input-starved", 0, 4000, Severity.INFO)], run.history, 3) == []
    assert allot([_finding("memory-bound", 0, None, Severity.WARNING)], run.history, 3) == []


def test_a_meter_without_power_claims_no_energy() -> None:
    meter = CostMeter()
    run = Run()
    for _ in range(10):
        run.tick(Tick(gpus=(G(sm=0.0, vram_gib=40.0, power=None),), procs=(P(vram_gib=40.0),)))
        meter.add([_finding("idle-holding-vram", 0, 4000, Severity.WARNING)], run.history)
    totals = meter.totals()
    assert totals.lost_s == pytest.approx(10.0)
    assert totals.energy_j is None and totals.unpowered_s == pytest.approx(10.0)
    assert meter.gpu_seconds == pytest.approx(10.0)


def test_a_seek_starts_the_count_again() -> None:
    """A replay seek restarts the diagnoser: the running figure counts from there, so a
    seek back never counts the replayed stretch twice."""
    meter = CostMeter()
    run = Run()
    finding = _finding("idle-holding-vram", 0, 4000, Severity.WARNING)
    for _ in range(10):
        run.tick(Tick(gpus=(G(sm=0.0, vram_gib=40.0),), procs=(P(vram_gib=40.0),)))
        meter.add([finding], run.history)
    assert meter.totals().lost_s == pytest.approx(10.0)
    meter.restart()
    for _ in range(4):
        run.tick(Tick(gpus=(G(sm=0.0, vram_gib=40.0),), procs=(P(vram_gib=40.0),)))
        meter.add([finding], run.history)
    assert meter.totals().lost_s == pytest.approx(4.0)
    assert meter.gpu_seconds == pytest.approx(4.0)
