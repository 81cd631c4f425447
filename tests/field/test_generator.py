"""The field corpus generator: deterministic, and physically plausible in every case."""

from __future__ import annotations

import itertools

import pytest
from field.case import Case
from field.cases import all_cases
from field.hardware import MODELS

from gputop_hints.model import Snapshot

CASES = all_cases()
BY_NAME = {c.name: c for c in CASES}
ONE_PER_FAMILY = sorted({c.family: c.name for c in CASES}.values())


def test_case_names_are_unique_and_every_family_is_there() -> None:
    assert len(BY_NAME) == len(CASES)
    assert {c.family for c in CASES} == {
        "shared",
        "serving",
        "phases",
        "slow",
        "limits",
        "overstated",
        "pcie",
        "single",
        "coarse",
        "attribution",
        "power",
        "frameworks",
    }


@pytest.mark.parametrize("name", ONE_PER_FAMILY)
def test_the_same_case_gives_the_same_snapshots(name: str) -> None:
    case = BY_NAME[name]
    assert case.snapshots() == case.snapshots()


def test_variants_of_one_situation_differ() -> None:
    first = BY_NAME["single/healthy-compute/a100-40-s0"].snapshots()
    other = BY_NAME["single/healthy-compute/v100-s2"].snapshots()
    assert [s.gpus[0].sm_samples for s in first[:20]] != [s.gpus[0].sm_samples for s in other[:20]]


def test_the_corpus_spans_the_boards_links_and_intervals_the_issue_names() -> None:
    boards = {g.model.name for c in CASES for g in c.scenario.gpus}
    assert boards == {m.name for m in MODELS}
    links = {g.model.pcie_generation for c in CASES for g in c.scenario.gpus}
    assert links == {3, 4, 5}
    log_intervals = {c.scenario.interval_s for c in CASES if not c.live}
    assert {5.0, 10.0, 30.0, 60.0} <= log_intervals


def _check_plausible(case: Case, snaps: list[Snapshot]) -> None:
    interval = case.scenario.interval_s
    for a, b in itertools.pairwise(snaps):
        assert b.timestamp - a.timestamp == pytest.approx(interval)
    for snap in snaps:
        for g in snap.gpus:
            assert g.sm_percent is not None and 0 <= g.sm_percent <= 100
            assert g.memory_access_percent is not None and 0 <= g.memory_access_percent <= 100
            assert g.vram_used_bytes is not None and g.vram_total_bytes is not None
            assert 0 <= g.vram_used_bytes <= g.vram_total_bytes
            if g.power_watts is not None:
                assert g.power_limit_watts is not None
                assert 0 < g.power_watts <= g.power_limit_watts * 1.02
            if g.sm_clock_mhz is not None:
                assert g.max_sm_clock_mhz is not None
                assert 0 < g.sm_clock_mhz <= g.max_sm_clock_mhz
            if case.live:
                link = g.pcie_link_bytes_per_s
                assert link is not None
                assert g.pcie_rx_bytes_per_s is not None and g.pcie_tx_bytes_per_s is not None
                assert 0 <= g.pcie_rx_bytes_per_s <= link
                assert 0 <= g.pcie_tx_bytes_per_s <= link
                # NVML's buffer: samples every 1/6 s since the previous tick.
                assert len(g.sm_samples) == round(interval * 6)
                assert all(0 <= s.percent <= 100 for s in g.sm_samples)
                assert all(
                    snap.timestamp - interval < s.timestamp <= snap.timestamp + 1e-6
                    for s in g.sm_samples
                )
            else:
                assert g.sm_samples == ()
                assert g.pcie_rx_bytes_per_s is None
        if not case.live:
            assert snap.processes == ()
            assert snap.host.cpu_percent_per_core == ()
            continue
        assert all(v is not None and 0 <= v <= 100 for v in snap.host.cpu_percent_per_core)
        assert snap.host.iowait_percent is not None and 0 <= snap.host.iowait_percent <= 100
        for gpu in snap.gpus:
            here = [p for p in snap.processes if p.gpu_index == gpu.index]
            assert sum(p.vram_bytes or 0 for p in here) <= (gpu.vram_used_bytes or 0)
            own = [p.sm_percent for p in here if p.sm_percent is not None]
            # Contexts time-slice: per-process shares add up to the device's (rounding aside).
            assert sum(own) <= 100 + len(own)
        for p in snap.processes:
            assert p.sm_percent is None or 1 <= p.sm_percent <= 100
            assert p.cpu_percent is not None and p.cpu_percent >= 0
            assert all(w.cpu_percent is not None and 0 <= w.cpu_percent <= 100 for w in p.workers)


@pytest.mark.parametrize("name", [*ONE_PER_FAMILY, "slow/nfs-load-compute/h100-s2-60min/log-60s"])
def test_generated_data_is_physically_plausible(name: str) -> None:
    case = BY_NAME[name]
    _check_plausible(case, case.snapshots())


def test_a_process_that_runs_no_kernel_has_no_sample_while_its_neighbour_does() -> None:
    snaps = BY_NAME["shared/starved-beside-notebook/a100-40-s0"].snapshots()
    notebook = [p for s in snaps for p in s.processes if p.pid == 5200]
    job = [p for s in snaps for p in s.processes if p.pid == 4100]
    assert notebook and all(p.sm_percent is None for p in notebook)
    assert all((p.cpu_percent or 0) < 3 and not p.workers for p in notebook)
    assert sum(p.sm_percent is not None for p in job) > 0.9 * len(job)


def test_a_1hz_sawtooth_and_a_steady_level_share_a_mean_but_not_their_samples() -> None:
    saw = BY_NAME["slow/sawtooth-1hz/a100-40-s0"].snapshots()
    level = BY_NAME["slow/steady-27/a100-40-s0"].snapshots()

    def mean(snaps: list[Snapshot]) -> float:
        return sum(s.gpus[0].sm_percent or 0 for s in snaps) / len(snaps)

    assert abs(mean(saw) - mean(level)) < 6
    saw_samples = [x.percent for s in saw for x in s.gpus[0].sm_samples]
    level_samples = [x.percent for s in level for x in s.gpus[0].sm_samples]
    assert sum(v < 10 for v in saw_samples) > 0.4 * len(saw_samples)
    assert sum(v > 90 for v in saw_samples) > 0.1 * len(saw_samples)
    assert not any(v < 10 or v > 60 for v in level_samples)


def test_the_default_power_cap_keeps_max_clocks_and_a_lowered_one_pulls_them() -> None:
    default = BY_NAME["limits/default-power-cap/h100-s0"].snapshots()[60:]
    lowered = BY_NAME["limits/lowered-power-limit/a100-80-250w-s0"].snapshots()[60:]
    capped = [s.gpus[0] for s in default if "sw_power_cap" in (s.gpus[0].throttle_reasons or ())]
    assert len(capped) > len(default) / 2
    assert all(g.sm_clock_mhz == g.max_sm_clock_mhz for g in capped)
    busy = [s.gpus[0] for s in lowered if s.gpus[0].sm_clock_mhz != s.gpus[0].max_sm_clock_mhz]
    assert len(busy) > 0.9 * len(lowered)
    assert all(g.power_limit_watts == 250.0 for g in busy)
    assert max(g.sm_clock_mhz or 0 for g in busy) < 0.9 * 1410


def test_a_hung_collective_reads_busy_at_near_idle_power_except_on_the_hung_rank() -> None:
    snaps = BY_NAME["overstated/collective-hang/one-rank-hung-2/4xa100-80-s0"].snapshots()
    late = snaps[-60:]
    for s in late:
        for g in s.gpus:
            assert g.power_watts is not None and g.power_limit_watts is not None
            if g.index == 2:
                assert g.sm_percent == 0
            else:
                assert g.sm_percent == 100
                assert g.power_watts < 0.3 * g.power_limit_watts


def test_pageable_copies_sit_at_a_third_of_a_gen4_link() -> None:
    snaps = BY_NAME["pcie/pageable-copies/a100-40-gen4-s0"].snapshots()
    link = snaps[0].gpus[0].pcie_link_bytes_per_s
    assert link is not None
    copying = [
        s.gpus[0].pcie_rx_bytes_per_s or 0
        for s in snaps
        if (s.gpus[0].pcie_rx_bytes_per_s or 0) > 1e9
    ]
    assert copying and all(0.3 * link <= v <= 0.45 * link for v in copying)
    assert 10e9 <= max(copying) <= 13e9
