"""Rows sharing one timestamp without a GPU column: a node's GPUs of one poll, or one
GPU read faster than its stamps' resolution (see gputop_hints/sources/files/_bursts.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

from tests.sources.files.test_real_shapes import FIXTURES, MIB
from tests.support.logs import read_log as load


def test_a_script_polling_faster_than_its_seconds_is_one_gpu() -> None:
    # 'Date,Time,...' to the second, 45 readings in one second: one GPU, not 45.
    snaps, info, counters = load(FIXTURES / "script_subsecond_polls.csv")
    assert info.gpu_count == 1 and counters.gpu_count == 1
    assert {len(s.gpus) for s in snaps} == {1}
    assert len(snaps) == 45 + 44 + 45 + 12  # every reading kept
    times = [s.timestamp for s in snaps]
    assert all(b > a for a, b in itertools.pairwise(times))
    # spread evenly over their second: the first second's 45 readings 1/45 s apart
    assert times[0] == 1614866700.0  # 2021-03-04 14:05:00 UTC
    assert abs(times[1] - times[0] - 1 / 45) < 1e-6
    assert abs(times[45] - times[0] - 1) < 1e-6  # the next second starts on it
    assert abs(times[45 + 1] - times[45] - 1 / 44) < 1e-6
    g = snaps[3].gpus[0]
    assert (g.sm_percent, g.temperature_c, g.power_watts) == (93, 60, 183)
    assert g.vram_used_bytes == 9876 * MIB
    assert abs((info.interval_s or 0) - 1 / 45) < 1e-9
    assert "one GPU's successive readings" in info.detail  # the assumption is said
    assert "more than a node's 16 GPUs" in info.detail


def _write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_a_varying_count_per_stamp_is_one_gpu(tmp_path: Path) -> None:
    # 3 or 4 readings a second (a loop's rate against the clock): a poll of a node's
    # GPUs does not grow and shrink.
    counts = [3, 4, 3, 3, 4, 3, 4, 3]
    rows = [
        f"2024-06-01 10:00:{sec:02d},{50 + k},1000"
        for sec, n in enumerate(counts)
        for k in range(n)
    ]
    snaps, info, _ = load(_write(tmp_path / "g.csv", "time,gpu_util,mem_used_mb", rows))
    assert info.gpu_count == 1 and {len(s.gpus) for s in snaps} == {1}
    assert len(snaps) == sum(counts)
    assert abs(snaps[1].timestamp - snaps[0].timestamp - 1 / 3) < 1e-6
    assert "the count varies" in info.detail


def test_nvidia_smi_gpus_sharing_a_stamp_stay_gpus(tmp_path: Path) -> None:
    # --query-gpu=timestamp,... without index on a 4-GPU node: one row per GPU per
    # poll, the same millisecond stamp; the same count every poll.
    rows = [
        f"2024/05/01 12:00:{5 * p:02d}.117, {100 + i} W, {10 * i} %, {1000 * (i + 1)} MiB"
        for p in range(6)
        for i in range(4)
    ]
    header = "timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]"
    snaps, info, _ = load(_write(tmp_path / "n.csv", header, rows))
    assert [len(s.gpus) for s in snaps] == [4] * 6
    assert [g.sm_percent for g in snaps[0].gpus] == [0, 10, 20, 30]
    assert info.interval_s == 5
    assert "successive readings" not in info.detail


def test_gpus_named_differently_in_one_stamp_stay_gpus(tmp_path: Path) -> None:
    # names differing within a stamp tell GPUs apart even when their count varies
    rows = [
        f"2024-06-01 10:00:{sec:02d},{name},{50 + k},1000"
        for sec, n in enumerate([2, 3, 2, 3])
        for k, name in enumerate(["A100", "T4", "V100"][:n])
    ]
    snaps, info, _ = load(_write(tmp_path / "m.csv", "time,name,gpu_util,mem_used_mb", rows))
    assert [len(s.gpus) for s in snaps] == [2, 3, 2, 3]
    assert "successive readings" not in info.detail
