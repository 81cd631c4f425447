"""The demo's ``gpm`` scenario: H100s whose GPM profiling (SM active, occupancy, tensor,
DRAM) says what utilization cannot, and the hints that decide on it.

What a user without a GPU would notice: the four GPM rows in the GPU panels, a hung
rank that reads 100 % busy with almost no SM holding a warp, an FP32 job whose tensor
cores sit idle, tiny kernels that keep the GPU "busy" on a tenth of its SMs -- and the
other scenarios still without GPM (they model sources that do not profile).
"""

from __future__ import annotations

import math
import statistics

import pytest

from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.model import PROFILING_FIELDS, Snapshot
from gputop_hints.sources.demo import DemoSource, list_scenarios
from gputop_hints.tui.widgets.gpu_panel import GpuPanel
from tests.tui.test_tui import feed, lines_of, make_app

CONTEXT_RULES = {"overlap-explained", "warm-up", "vram-preallocated"}
"""Rules that describe context rather than diagnose (the demo's labels do not cover them)."""


def steady(seconds: float = 60.0) -> tuple[DemoSource, list[Snapshot]]:
    """Snapshots of ``seconds`` once every job of the scene is past its warm-up."""
    source = DemoSource("gpm")
    onset = max(t - source.start_time for t in source.label_onsets.values())
    for _ in range(math.ceil(onset) + 2):
        source.sample()
    return source, [source.sample() for _ in range(round(seconds))]


def mean(snaps: list[Snapshot], gpu: int, field: str) -> float:
    values: list[float | None] = [getattr(s.gpus[gpu], field) for s in snaps]
    known = [v for v in values if v is not None]
    assert len(known) == len(values), field
    return statistics.mean(known)


@pytest.fixture(scope="module")
def gpm() -> list[Snapshot]:
    return steady()[1]


def test_gpm_is_listed_with_its_labels() -> None:
    info = next(s for s in list_scenarios() if s.name == "gpm")
    assert info.default_gpus == 4 and "GPM" in info.description
    assert {
        "compute-bound@gpu:0",
        "tensor-cores-idle@pid:4200",
        "compute-bound@gpu:1",
        "small-batch@pid:4400",
        "utilization-overstated@gpu:2",
        "collective-hang@pid:4600",
    } <= set(info.labels)


def test_every_gpu_reports_profiling_in_range(gpm: list[Snapshot]) -> None:
    for snap in gpm:
        assert [g.name for g in snap.gpus] == ["NVIDIA H100 80GB HBM3"] * 4
        for g in snap.gpus:
            assert g.profiling_known and g.profiling_unavailable is None
            for name in PROFILING_FIELDS:
                value = getattr(g, name)
                assert value is not None and 0.0 <= value <= 100.0, (name, value)
                assert value == round(value)
            # warps resident on the active SMs at most fill them; tensor pipes run on them
            assert g.sm_occupancy_percent <= g.sm_active_percent + 2  # type: ignore[operator]
            assert g.tensor_active_percent <= g.sm_active_percent + 2  # type: ignore[operator]


def test_bf16_training_keeps_the_tensor_cores_busy(gpm: list[Snapshot]) -> None:
    assert mean(gpm, 0, "sm_percent") >= 90
    assert 70 <= mean(gpm, 0, "sm_active_percent") <= 90
    assert 30 <= mean(gpm, 0, "tensor_active_percent") <= 50


def test_fp32_training_has_busy_sms_and_idle_tensor_cores(gpm: list[Snapshot]) -> None:
    assert mean(gpm, 1, "sm_active_percent") >= 75
    assert mean(gpm, 1, "tensor_active_percent") < 1
    assert mean(gpm, 0, "tensor_active_percent") > 20 * max(
        1.0, mean(gpm, 1, "tensor_active_percent")
    )


def test_tiny_kernels_read_busy_on_a_tenth_of_the_sms(gpm: list[Snapshot]) -> None:
    util = mean(gpm, 2, "sm_percent")
    active = mean(gpm, 2, "sm_active_percent")
    assert util >= 80 and 5 <= active <= 20
    main = [p for s in gpm for p in s.processes if p.gpu_index == 2]
    assert statistics.mean(p.cpu_percent or 0.0 for p in main) >= 95


def test_a_hung_rank_reads_full_utilization_with_idle_sms_and_power(
    gpm: list[Snapshot],
) -> None:
    assert min(s.gpus[3].sm_percent or 0.0 for s in gpm) >= 95
    assert mean(gpm, 3, "sm_active_percent") <= 5
    assert mean(gpm, 3, "tensor_active_percent") == 0
    power = [(s.gpus[3].power_watts or 0.0) / (s.gpus[3].power_limit_watts or 1.0) for s in gpm]
    assert statistics.mean(power) < 0.2
    # the healthy job's SMs do work, the hung rank's only spin
    assert mean(gpm, 0, "sm_active_percent") > 10 * mean(gpm, 3, "sm_active_percent")


def test_the_hints_find_exactly_the_labelled_conditions() -> None:
    source = DemoSource("gpm")
    diagnoser = Diagnoser(interval_s=source.interval_s)
    seen: set[str] = set()
    labels: set[str] = set()
    for _ in range(150):
        snap = source.sample()
        labels.update(snap.labels)
        for f in diagnoser.feed(snap):
            if f.rule in CONTEXT_RULES:
                continue
            key = f"{f.rule_label}@{f.subject}"
            on_gpu = f"{f.rule_label}@gpu:{f.subject.gpu_index}"
            seen.add(on_gpu if f.subject.pid is not None and on_gpu in snap.labels else key)
    expected = {lb for lb in labels if not lb.startswith(("warming-up@", "checkpointing@"))}
    assert seen == expected


def test_other_scenarios_do_not_profile() -> None:
    for name in ("mixed", "straggler", "small-batch"):
        source = DemoSource(name)
        for _ in range(15):
            snap = source.sample()
        for g in snap.gpus:
            assert not g.profiling_known, name
            assert g.profiling_unavailable is None and g.profiling_shown_unavailable is None


async def test_the_gpu_panels_show_the_gpm_rows() -> None:
    app, source = make_app("gpm", gpus=None, processes=None)
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 20)
        await pilot.pause()
        text = lines_of(app.query_one("#gpu-3", GpuPanel))
        rows = {line.split()[0]: line for line in text if line.split()}
        for label in ("SMACT", "OCC", "TENS", "DRAM"):
            assert label in rows, text
        assert "100%" in rows["SM"]
        assert "of SM cycles w/ warps" in rows["SMACT"]
