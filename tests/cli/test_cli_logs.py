"""``gputop-hints report`` on the logs people keep, through the command line."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.ci import IN_CI
from tests.support.cli import run_cli
from tests.support.paths import FIXTURES, TRACES


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=120)


@pytest.fixture(scope="module")
def traces() -> Path:
    if not TRACES.is_dir():
        if IN_CI:
            pytest.fail(f"shared traces missing at {TRACES} (CI must provide ../shared)")
        pytest.skip(f"shared traces not found at {TRACES}")
    return TRACES


def test_report_on_an_appended_table_log_puts_findings_on_its_processes(
    traces: Path,
) -> None:
    result = cli("report", str(traces / "nvsmi_table_groupederag_565.log"))
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "1098 samples every 5 s" in text
    # The processes, from the Processes section of the tables, each seen while it ran.
    assert re.search(r"^ +3483863 +0 .* 15\.3GiB +2 min 25 s +python$", text, re.M), text
    assert "no processes in this file" not in text
    # ~25 jobs one after another: the idle readings before a job came (1 MiB, no
    # process) and its model loading are not its loader stalling (they were, once).
    assert "] input-starved" not in text
    assert "[!] low-utilization -- GPU 0" in text
    # The log holds many separate jobs: the hours between them are not one
    # process idling (a process's idle time is bounded by when it was seen).
    assert "911 min" not in text
    # A GPU-only log has no host side: no DataLoader cause is claimed.
    assert "Raise num_workers" not in text


def test_report_json_on_a_table_log_lists_its_processes(traces: Path) -> None:
    result = cli("report", "--json", str(traces / "nvsmi_table_groupederag_565.log"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    procs = {p["pid"]: p for p in doc["processes"]}
    assert len(procs) == 27 and {3483863, 3345194} <= set(procs)
    job = procs[3483863]
    assert job["gpu_index"] == 0 and job["name"] == "python"
    assert job["last_seen"] - job["first_seen"] == 140.0  # its first and last snapshot
    assert not [f for f in doc["findings"] if f["rule"] == "input-starved"]


def test_report_on_a_watch_capture(traces: Path) -> None:
    result = cli("report", str(traces / "nvsmi_watch_hirataken_570.log"))
    assert result.returncode == 0, result.stderr
    assert "1355 samples every 2 s" in result.stdout


def test_report_merges_a_gpu_log_with_a_per_process_log_of_the_same_run() -> None:
    gpu = FIXTURES / "import" / "merge_gpu.csv"
    apps = FIXTURES / "import" / "merge_apps.csv"
    result = cli("report", "--json", str(gpu), str(apps))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert "processes from merge_apps.csv" in report["file"]["detail"]
    assert "processes" not in report["missing"]


def test_report_with_three_files_is_a_usage_error_naming_the_shape_it_takes() -> None:
    gpu = str(FIXTURES / "import" / "merge_gpu.csv")
    result = cli("report", gpu, gpu, gpu)
    assert result.returncode == 2
    assert "a GPU log and a per-process log" in result.stderr
    assert "Traceback" not in result.stderr


def test_format_accepts_every_reader_by_name() -> None:
    result = cli("report", "--help")
    for name in ("nvidia-smi-table", "nvidia-smi-watch", "nvidia-smi-query", "gpustat"):
        assert name in result.stdout


def test_report_on_a_log_without_timestamps_shows_elapsed_time(tmp_path: Path) -> None:
    # A headerless utilization.gpu column: no wall clock, so no 1970 dates either.
    log = tmp_path / "util.csv"
    log.write_text("".join(f"{100 if i % 2 else 0}\n" for i in range(120)), encoding="utf-8")
    out = cli("report", str(log)).stdout
    assert "1970" not in out
    assert "+0:00:00 -> +0:01:59" in out
    assert "input-starved/cause-unknown" in out and "compute-bound" not in out.split("not ev")[0]
