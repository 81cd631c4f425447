"""CSVs with every GPU's values side by side, the GPU numbered in the column names
(PyTorch Lightning's GPUStatsMonitor through CSVLogger, scripts' ``gpu0_util``,
dashboard exports), and headers no reader knows: never read as numbers guessed.

Expected figures are read from the files here with the csv module, not by the
reader under test."""

from __future__ import annotations

import csv
import re
import statistics
from pathlib import Path

import pytest

from gputop_hints.sources.files import UnrecognisedFormat, open_stream
from gputop_hints.sources.files._wide import gpu_column
from tests.support.cli import run_cli
from tests.support.logs import read_log
from tests.support.paths import FIXTURES

MIB = 2**20
LIGHTNING = FIXTURES / "import" / "lightning_gpu_stats.csv"
_GPU_ID = re.compile(r"^gpu_id: (\d+)/(.+) \((.+)\)$")


def _lightning_columns() -> tuple[list[dict[str, str]], dict[int, dict[str, str]]]:
    """The fixture's records, and per GPU number: metric name -> its column."""
    with LIGHTNING.open(newline="", encoding="utf-8") as f:
        records = list(csv.DictReader(f))
    by_gpu: dict[int, dict[str, str]] = {}
    for name in records[0]:
        m = _GPU_ID.match(name)
        if m is not None:
            by_gpu.setdefault(int(m.group(1)), {})[m.group(2)] = name
    return records, by_gpu


def test_lightning_gpu_stats_give_each_gpu_its_own_values() -> None:
    records, by_gpu = _lightning_columns()
    assert sorted(by_gpu) == [0, 1]
    # A sample is a record with a GPU value in it; the loss rows are none.
    sampled = [r for r in records if any(r[c] for cols in by_gpu.values() for c in cols.values())]
    assert len(sampled) < len(records)

    snaps, info, counters = read_log(LIGHTNING)

    assert info.format == "csv"
    assert info.gpu_count == 2
    assert counters.bad_lines == 0
    assert len(snaps) == len(sampled)
    for index, cols in by_gpu.items():
        util = [float(r[cols["utilization.gpu"]]) for r in sampled]
        used = [float(r[cols["memory.used"]]) for r in sampled]
        free = [float(r[cols["memory.free"]]) for r in sampled]
        temps = [r[cols["temperature.gpu"]] for r in sampled]
        read = [s.gpu(index) for s in snaps]
        assert all(g is not None for g in read)
        assert [g.sm_percent for g in read if g] == util
        assert [g.vram_used_bytes for g in read if g] == [round(u * MIB) for u in used]
        assert [g.vram_total_bytes for g in read if g] == [
            round((u + f) * MIB) for u, f in zip(used, free, strict=True)
        ]
        # Temperatures only in the rows logged at a batch's end; unknown (not 0) elsewhere.
        assert [g.temperature_c for g in read if g] == [float(t) if t else None for t in temps]
    assert "numbered in the names" in info.detail
    assert "no timestamps" in info.detail


def test_lightning_report_shows_both_gpus_as_the_file_has_them() -> None:
    records, by_gpu = _lightning_columns()
    result = run_cli("report", str(LIGHTNING))
    assert result.returncode == 0, result.stderr
    for index, cols in by_gpu.items():
        util = [float(r[cols["utilization.gpu"]]) for r in records if r[cols["utilization.gpu"]]]
        mean = round(statistics.mean(util))
        row = re.search(rf"^\s+{index}\s+(\d+)/\d+/\d+", result.stdout, re.MULTILINE)
        assert row is not None, result.stdout
        assert int(row.group(1)) == mean


def test_a_scripts_gpu_numbered_columns_with_epoch_times(tmp_path: Path) -> None:
    path = tmp_path / "gpus.csv"
    lines = ["time,gpu0_util,gpu0_mem_used_mb,gpu1_util,gpu1_mem_used_mb,loss"]
    lines += [
        f"{1733300000 + 5 * k},{90 + k},{20000 + k},{10 + k},512,{1.0 / (k + 1):.3f}"
        for k in range(6)
    ]
    path.write_text("\n".join(lines) + "\n")

    snaps, info, counters = read_log(path)

    assert (info.format, info.gpu_count, info.interval_s) == ("csv", 2, 5.0)
    assert counters.bad_lines == 0
    assert [s.timestamp for s in snaps] == [1733300000.0 + 5 * k for k in range(6)]
    assert [[g.index for g in s.gpus] for s in snaps] == [[0, 1]] * 6
    assert [s.gpus[0].sm_percent for s in snaps] == [90.0 + k for k in range(6)]
    assert [s.gpus[1].sm_percent for s in snaps] == [10.0 + k for k in range(6)]
    assert [s.gpus[0].vram_used_bytes for s in snaps] == [(20000 + k) * MIB for k in range(6)]
    assert {s.gpus[1].vram_used_bytes for s in snaps} == {512 * MIB}


def test_a_dashboard_export_of_one_series_a_gpu(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    rows = [
        '"Time","GPU 0 utilization","GPU 3 utilization"',
        '"2024-12-04 10:00:00",71,5',
        '"2024-12-04 10:00:15",73,',
        '"2024-12-04 10:00:30",75,7',
    ]
    path.write_text("\n".join(rows) + "\n")

    snaps, info, _counters = read_log(path)

    assert info.gpu_count == 2
    assert info.interval_s == 15.0
    assert [[(g.index, g.sm_percent) for g in s.gpus] for s in snaps] == [
        [(0, 71.0), (3, 5.0)],
        [(0, 73.0)],  # GPU 3 has no value in this row: not made up
        [(0, 75.0), (3, 7.0)],
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gpu_id: 0/utilization.gpu (%)", (0, "sm", "%")),
        ("gpu_id: 12/memory.used (MB)", (12, "vram_used", "mb")),
        ("GPU 1 Power Draw [W]", (1, "power", "w")),
        ("gpu3_temp", (3, "temp", None)),
        ("cuda:1 utilization", (1, "sm", None)),
        ("system.gpu.2.gpu", (2, "sm", None)),
        ("train/gpu0/util", (0, "sm", None)),
        ("gpu_id", None),  # an index column of a one-GPU-per-row file
        ("gpu0_loss", None),  # numbered, but no metric we know
        ("gpu_count", None),
        ("epoch", None),
        ("GPU 0", None),  # which metric? not guessed
    ],
)
def test_which_column_names_number_a_gpu(
    name: str, expected: tuple[int, str, str | None] | None
) -> None:
    assert gpu_column(name) == expected


def test_a_header_of_names_no_reader_knows_is_never_read_as_guessed_numbers(
    tmp_path: Path,
) -> None:
    # Before: nvidia-smi's headerless reader dropped the header as one bad line and
    # took the training loop's numbers for utilization, temperature and VRAM.
    path = tmp_path / "train_metrics.csv"
    lines = ["epoch,step,samples_per_s,lr,loss"]
    lines += [f"{k // 3},{49 + 50 * k},{812 + k},0.001,{2.0 / (k + 1):.3f}" for k in range(9)]
    path.write_text("\n".join(lines) + "\n")

    with pytest.raises(UnrecognisedFormat) as caught:
        open_stream(path)
    assert "the first line names columns" in str(caught.value)

    result = run_cli("report", str(path))
    assert result.returncode == 2
    assert "not a format we know" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_loggers_rows_without_a_gpu_value_are_no_samples(tmp_path: Path) -> None:
    path = tmp_path / "one_gpu.csv"
    path.write_text(
        "timestamp,train/gpu_util,train/memory_used_mb,val_loss\n"
        "1733300000,80,1000,\n"
        "1733300002,,,0.5\n"  # the validation loss logged alone
        "1733300004,82,1000,\n"
    )

    snaps, info, counters = read_log(path)

    assert counters.bad_lines == 0
    assert [(s.timestamp, s.gpus[0].sm_percent) for s in snaps] == [
        (1733300000.0, 80.0),
        (1733300004.0, 82.0),
    ]
    assert info.gpu_count == 1
