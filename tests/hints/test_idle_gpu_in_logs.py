"""idle-holding-vram in logs without per-process rows (nvidia-smi CSVs, W&B, dmon):
the GPU itself, idle with memory in use, found as ``holder-unknown`` -- and not for a
GPU that only pauses, holds a bare context, or reads idle in too few coarse readings.
Logs written here as ``nvidia-smi --query-gpu ... --format=csv`` writes them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli

T0 = 1733306400
HEADER = "timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"


def _log(tmp_path: Path, readings: list[tuple[int, int]], every_s: int = 1) -> Path:
    """(utilization %, MiB used) a reading, ``every_s`` apart."""
    path = tmp_path / "gpu.csv"
    rows = [
        time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(T0 + k * every_s))
        + f".000, 0, {util} %, {mib} MiB, 81920 MiB"
        for k, (util, mib) in enumerate(readings)
    ]
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return path


def _report(path: Path) -> dict[str, Any]:
    result = run_cli("report", "--json", str(path))
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _findings(path: Path) -> list[dict[str, Any]]:
    findings: list[dict[str, Any]] = _report(path)["findings"]
    return findings


def _idle(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in findings if f["rule"] == "idle-holding-vram"]


def test_a_gpu_idle_for_ten_minutes_holding_memory(tmp_path: Path) -> None:
    busy = [(97, 20480)] * 60
    idle = [(0, 20480)] * 600
    findings = _findings(_log(tmp_path, busy + idle))

    [found] = _idle(findings)
    assert found["subtype"] == "holder-unknown"
    assert found["subject"] == {"gpu_index": 0, "pid": None}
    assert found["worst_severity"] == "critical"  # past 5 minutes
    assert "no per-process rows" in found["summary"]
    assert "--query-compute-apps" in found["advice"][0]
    # It says why the GPU is underused: low-utilization only before it was shown.
    low = [f for f in findings if f["rule"] == "low-utilization"]
    assert all(f["seconds"] < 130 for f in low)


def test_two_minutes_of_pause_is_not_yet_idle(tmp_path: Path) -> None:
    # A checkpoint save or an evaluation on the CPU looks like this in a GPU-only log.
    readings = [(97, 20480)] * 60 + [(0, 20480)] * 100 + [(97, 20480)] * 60
    assert _idle(_findings(_log(tmp_path, readings))) == []


def test_a_bare_context_is_no_memory_held(tmp_path: Path) -> None:
    readings = [(0, 500)] * 600  # under 1 GiB: a CUDA context, nothing loaded
    assert _idle(_findings(_log(tmp_path, readings))) == []


def test_a_coarse_log_ending_idle_is_a_teardown_not_idleness(tmp_path: Path) -> None:
    # One reading every 5 s or a minute is a draw of the duty cycle (the GPU's last
    # second or so): 40 zeros in a row bound it, they do not show that nothing ran.
    # And they come after the run's last activity: the run's teardown, which the GPU's
    # verdict says (memory still held) -- not a run at a low level.
    readings = [(95, 30000)] * 30 + [(0, 30000)] * 40
    document = _report(_log(tmp_path, readings, every_s=5))
    findings = document["findings"]
    assert _idle(findings) == []
    assert not any(f["rule"] == "low-utilization" for f in findings)
    [verdict] = document["verdicts"]
    assert verdict["verdict"] == "busy"
    assert verdict["phases"]["teardown_s"] == pytest.approx(40 * 5)
    assert "still holding 29.3 GiB at the end" in verdict["summary"]


def test_a_gpu_that_works_in_bursts_is_not_idle(tmp_path: Path) -> None:
    readings = [(100, 20480), (0, 20480), (0, 20480)] * 200
    assert _idle(_findings(_log(tmp_path, readings))) == []


def test_an_hour_of_idle_readings_a_minute_apart_is_idle(tmp_path: Path) -> None:
    """One reading a minute: each is a draw of the duty cycle, and 60 at idle in a row
    bound it under 5 % (3/60, 95 %) -- a GPU holding 30 GiB that runs next to nothing.
    Said with that bound; 40 such readings are not enough (see the test above)."""
    readings = [(95, 30000)] * 10 + [(0, 30000)] * 70
    findings = _findings(_log(tmp_path, readings, every_s=60))
    [found] = _idle(findings)
    assert found["subtype"] == "holder-unknown" and found["worst_severity"] == "critical"
    assert "60 at idle bound its kernels under 5.0 % of the time" in found["summary"]
    short = _findings(_log(tmp_path, [(95, 30000)] * 10 + [(0, 30000)] * 50, every_s=60))
    assert _idle(short) == []
