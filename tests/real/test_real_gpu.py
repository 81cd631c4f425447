"""Recordings made on a real GPU under known loads (bench/gpu_check.sh on the device
machine, ../shared/DEVICE.md), replayed on every CI run: the load is the ground truth.

Each ``tests/data/real/LOAD.jsonl.gz`` was recorded beside ``bench/gpu_loads.py LOAD``
(its docstring says what each load does). What NVML and GPM must then show follows from
the load's mechanism, with wide margins (a real card, a real driver): a bf16 matmul loop
keeps the tensor pipes busy, the same loop in FP32 does not, a 2 GiB device copy loop
uses DRAM bandwidth, a 256-element add launched back to back keeps a kernel resident on
few SMs, a process that allocated 10 GiB and sleeps runs nothing. The report's findings
(the engine on every tick, as ``gputop-hints report`` runs it) must name the load's
bottleneck. GPM's rows are checked only where the recording has them (a card or site
without GPM records none, with the reason).

Until a session is lent a GPU there are no such recordings, and the test says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import pytest

from gputop_hints.model import Snapshot
from gputop_hints.outputs.report import build_report
from gputop_hints.recording.reader import open_recording

DATA = Path(__file__).resolve().parent.parent / "data" / "real"
GIB = 2**30


@dataclass(frozen=True)
class Expect:
    """What a load must show: findings (any one of ``rules``), and bounds on GPU 0's
    means (``field: (low, high)``; profiling fields only where recorded)."""

    rules: frozenset[str]
    bounds: dict[str, tuple[float, float]]


EXPECT: dict[str, Expect] = {
    "bf16-matmul": Expect(
        frozenset({"compute-bound"}),
        {
            "sm_percent": (85, 100),
            "sm_active_percent": (50, 100),
            "tensor_active_percent": (10, 100),
        },
    ),
    "fp32-matmul": Expect(
        frozenset({"tensor-cores-idle"}),
        {
            "sm_percent": (85, 100),
            "sm_active_percent": (50, 100),
            "tensor_active_percent": (0, 5),
        },
    ),
    "copy": Expect(
        frozenset({"memory-bound"}),
        {"memory_access_percent": (50, 100), "dram_active_percent": (50, 100)},
    ),
    "tiny-kernels": Expect(
        frozenset({"utilization-overstated", "small-batch"}),
        {"sm_percent": (70, 100), "sm_active_percent": (0, 20)},
    ),
    "idle-vram": Expect(frozenset({"idle-holding-vram"}), {"sm_percent": (0, 10)}),
    "starved": Expect(frozenset({"input-starved"}), {}),
    "small-batch": Expect(frozenset({"small-batch", "utilization-overstated"}), {}),
    "pcie": Expect(frozenset({"pcie-thrash"}), {}),
}

RECORDINGS = sorted(DATA.glob("*.jsonl.gz")) if DATA.is_dir() else []


def _load_of(path: Path) -> str:
    return path.name.removesuffix(".jsonl.gz")


def _mean(snaps: list[Snapshot], field: str) -> float | None:
    values = [getattr(s.gpus[0], field) for s in snaps if s.gpus]
    known = [v for v in values if v is not None]
    return statistics.mean(known) if known else None


def check_recording(path: Path) -> None:
    """Assert what ``path``'s load must show (its name says which load)."""
    expect = EXPECT[_load_of(path)]
    with open_recording(path) as stream:
        snaps = list(stream)
    assert len(snaps) >= 10, "too short a recording to judge"
    for field, (low, high) in expect.bounds.items():
        mean = _mean(snaps, field)
        if mean is None and field.endswith("active_percent"):
            continue  # no GPM on this card or site: the reason is in the recording
        assert mean is not None and low <= mean <= high, (path.name, field, mean)
    if _load_of(path) == "idle-vram":
        held = max((p.vram_bytes or 0) for s in snaps for p in s.processes)
        assert held >= 9 * GIB, held
    report = build_report(open_recording(path), hint_stride=1)
    seen = {ft.finding.rule for ft in report.findings}
    assert seen & expect.rules, (path.name, expect.rules, seen)


def test_each_real_recording_reads_as_its_loads_mechanism() -> None:
    if not RECORDINGS:
        pytest.skip(f"no real-GPU recordings in {DATA} yet (bench/gpu_check.sh makes them)")
    assert {_load_of(p) for p in RECORDINGS} <= set(EXPECT)
    for path in RECORDINGS:
        check_recording(path)
