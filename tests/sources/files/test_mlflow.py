"""MLflow system metrics: a run's ``metrics/system/gpu_N_*`` files (the file store),
one metric file alone, and the same names as CSV columns.

Expected figures are read from the fixture files here with ``str.split`` (each line
``<timestamp ms> <value> <step>``), not by the reader under test."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gputop_hints.sources.files import UnrecognisedFormat, open_stream
from gputop_hints.sources.files._header_names import header_columns
from gputop_hints.sources.files._wide import gpu_column
from tests.support.cli import run_cli
from tests.support.logs import read_log
from tests.support.paths import FIXTURES

MLRUNS = FIXTURES / "import" / "mlruns"
RUN = MLRUNS / "0" / "5f1c0e2a9b8d4c7e8a6b3d2f1e0c9b8a"
SYSTEM = RUN / "metrics" / "system"
_GPU_FILE = re.compile(r"^gpu_(\d+)_(.+)$")


def _metric(path: Path) -> dict[int, float]:
    """timestamp ms -> value of one metric file."""
    out: dict[int, float] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        stamp, value, _step = line.split(" ")
        out[int(stamp)] = float(value)
    return out


def _expected() -> dict[int, dict[int, dict[str, float]]]:
    """timestamp ms -> GPU -> metric -> value, from the fixture's files."""
    by_time: dict[int, dict[int, dict[str, float]]] = {}
    for path in sorted(SYSTEM.iterdir()):
        m = _GPU_FILE.match(path.name)
        if m is None:
            continue
        for stamp, value in _metric(path).items():
            by_time.setdefault(stamp, {}).setdefault(int(m.group(1)), {})[m.group(2)] = value
    return by_time


def _total_at_largest_share(gpu: int, amount: str, share: str) -> float:
    amounts = _metric(SYSTEM / f"gpu_{gpu}_{amount}")
    shares = _metric(SYSTEM / f"gpu_{gpu}_{share}")
    stamp = max(shares, key=lambda t: shares[t])
    return amounts[stamp] / shares[stamp] * 100


@pytest.mark.parametrize("given", [RUN, RUN / "metrics", SYSTEM], ids=["run", "metrics", "system"])
def test_an_mlflow_run_folder_reads_every_gpu_joined_by_timestamp(given: Path) -> None:
    expected = _expected()
    snaps, info, counters = read_log(given)

    assert info.format == "mlflow"
    assert info.gpu_count == 2
    assert counters.bad_lines == 0
    assert [round(s.timestamp * 1000) for s in snaps] == sorted(expected)
    for snap in snaps:
        values = expected[round(snap.timestamp * 1000)]
        assert [g.index for g in snap.gpus] == sorted(values)
        for g in snap.gpus:
            v = values[g.index]
            assert g.sm_percent == v["utilization_percentage"]
            # MLflow's megabytes are NVML's bytes / 1e6 (gpu_monitor.py).
            assert g.vram_used_bytes == round(v["memory_usage_megabytes"] * 1e6)
            assert g.power_watts == v["power_usage_watts"]
            assert g.temperature_c is None and g.memory_access_percent is None
    # Totals derived once per GPU, from the sample with the largest share.
    for index in (0, 1):
        total = _total_at_largest_share(index, "memory_usage_megabytes", "memory_usage_percentage")
        limit = _total_at_largest_share(index, "power_usage_watts", "power_usage_percentage")
        gpus = [s.gpu(index) for s in snaps]
        assert {g.vram_total_bytes for g in gpus if g} == {round(total * 1e6 / 2**20) * 2**20}
        assert {g.power_limit_watts for g in gpus if g} == {round(limit)}
    assert "derived" in info.detail
    # The whole-host CPU is one number: summarised, never spread over pseudo-cores.
    cpu = list(_metric(SYSTEM / "cpu_utilization_percentage").values())
    summary = counters.found["system_cpu_percent"]
    assert isinstance(summary, dict)
    assert summary["all"]["n"] == len(cpu)
    assert summary["all"]["mean"] == pytest.approx(sum(cpu) / len(cpu))
    assert (summary["all"]["min"], summary["all"]["max"]) == (min(cpu), max(cpu))
    assert all(s.host.cpu_percent_per_core == () for s in snaps)
    assert "host_cpu" in info.missing


def test_one_mlflow_metric_file_reads_that_metric_of_that_gpu() -> None:
    path = SYSTEM / "gpu_1_utilization_percentage"
    values = _metric(path)
    snaps, info, counters = read_log(path)

    assert info.format == "mlflow"
    assert counters.bad_lines == 0
    assert [round(s.timestamp * 1000) for s in snaps] == sorted(values)
    for snap in snaps:
        (g,) = snap.gpus
        assert g.index == 1
        assert g.sm_percent == values[round(snap.timestamp * 1000)]
        assert g.vram_used_bytes is None and g.power_watts is None
    assert "vram" in info.missing and "power" in info.missing


def test_mlflow_bad_lines_are_counted_with_file_and_line_and_the_rest_kept(
    tmp_path: Path,
) -> None:
    """A line of 4 fields and a value that is not a number, in two files: each counted
    bad naming its file and line; every other value of the run read."""
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    system = run / "metrics" / "system"
    util = system / "gpu_0_utilization_percentage"
    power = system / "gpu_1_power_usage_watts"
    util_lines = util.read_text(encoding="utf-8").splitlines()
    util_lines[2] = util_lines[2] + " 7"  # 4 fields
    util.write_text("\n".join(util_lines) + "\n", encoding="utf-8")
    power_lines = power.read_text(encoding="utf-8").splitlines()
    stamp, _, step = power_lines[2].split(" ")
    power_lines[2] = f"{stamp} n/a {step}"
    power.write_text("\n".join(power_lines) + "\n", encoding="utf-8")

    expected = _expected()
    snaps, info, counters = read_log(run)

    assert info.format == "mlflow"
    assert counters.bad_lines == 2  # the same line number, in two files: both counted
    assert counters.first_bad_line == 3
    reason = counters.first_bad_reason or ""
    assert reason.startswith("gpu_0_utilization_percentage line 3: 4 field(s)")
    # Every timestamp still read; the two bad values unknown, their neighbours kept.
    assert len(snaps) == len(expected)
    bad_time = int(stamp)
    for snap in snaps:
        t = round(snap.timestamp * 1000)
        g0, g1 = snap.gpu(0), snap.gpu(1)
        assert g0 is not None and g1 is not None
        if t == bad_time:
            assert g1.power_watts is None
            assert g1.sm_percent == expected[t][1]["utilization_percentage"]
        else:
            assert g1.power_watts == expected[t][1]["power_usage_watts"]
    assert sum(1 for s in snaps if (g := s.gpu(0)) and g.sm_percent is None) == 1

    result = run_cli("report", str(run))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_mlflow_run_of_bad_lines_only_is_refused_in_words(tmp_path: Path) -> None:
    system = tmp_path / "metrics" / "system"
    system.mkdir(parents=True)
    (system / "gpu_0_utilization_percentage").write_text("when value step\n" * 3)
    with pytest.raises(UnrecognisedFormat, match="gpu_0_utilization_percentage"):
        open_stream(tmp_path)
    result = run_cli("report", str(tmp_path))
    assert result.returncode == 2
    assert "timestamp ms" in result.stderr and "Traceback" not in result.stderr


def test_other_folders_are_refused_saying_what_is_read(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    for folder, says in (
        (tmp_path, "no MLflow GPU metric files"),
        (MLRUNS / "0", "an MLflow experiment folder with 1 run(s)"),
    ):
        result = run_cli("report", str(folder))
        assert result.returncode == 2
        assert "a directory, not a file" in result.stderr
        assert says in result.stderr
        assert "Traceback" not in result.stderr
    with pytest.raises(UnrecognisedFormat, match="reads a file, not a folder"):
        open_stream(RUN, format="csv")


def test_report_on_an_mlflow_run_folder() -> None:
    result = run_cli("report", "--json", str(RUN))
    assert result.returncode == 0, result.stderr
    assert '"mlflow"' in result.stdout


def test_mlflow_names_as_csv_columns_read_as_their_metrics() -> None:
    assert gpu_column("system/gpu_0_utilization_percentage") == (0, "sm", "percentage")
    assert gpu_column("system/gpu_3_memory_usage_megabytes") == (3, "vram_used", "megabytes")
    assert gpu_column("system/gpu_1_power_usage_watts") == (1, "power", "watts")
    # A share of VRAM or of the power limit is not bytes nor watts.
    assert gpu_column("system/gpu_0_memory_usage_percentage") is None
    assert gpu_column("system/gpu_0_power_usage_percentage") is None
    columns, notes = header_columns(
        ["time", "memory_usage_percentage", "memory_usage_megabytes", "power [%]"],
        [["1", "50.0", "40000.0", "80"]],
    )
    assert [(c.role, c.scale) for c in columns] == [("time", 1.0), ("vram_used", 1e6)]
    assert any("memory_usage_percentage" in n and "not read" in n for n in notes)


def test_a_csv_of_mlflow_metric_columns_reads_each_gpu(tmp_path: Path) -> None:
    expected = _expected()
    names = [
        "utilization_percentage",
        "memory_usage_megabytes",
        "memory_usage_percentage",
        "power_usage_watts",
        "power_usage_percentage",
    ]
    header = ["timestamp", "step"] + [f"system/gpu_{i}_{n}" for i in (0, 1) for n in names]
    rows = [",".join(header)]
    for step, stamp in enumerate(sorted(expected)):
        rows.append(
            ",".join(
                [str(stamp), str(step)]
                + [str(expected[stamp][i][n]) for i in (0, 1) for n in names]
            )
        )
    path = tmp_path / "history.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")

    snaps, info, counters = read_log(path)

    assert info.format == "csv"
    assert counters.bad_lines == 0
    assert len(snaps) == len(expected)
    for snap, stamp in zip(snaps, sorted(expected), strict=True):
        for g in snap.gpus:
            v = expected[stamp][g.index]
            assert g.sm_percent == v["utilization_percentage"]
            assert g.vram_used_bytes == round(v["memory_usage_megabytes"] * 1e6)
            assert g.power_watts == v["power_usage_watts"]
            # The percentages are no totals: never read as bytes or watts.
            assert g.vram_total_bytes is None and g.power_limit_watts is None
