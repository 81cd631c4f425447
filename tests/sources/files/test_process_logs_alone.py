"""Issue 25 item 5: a per-process log alone gives per-process statistics and the
findings it can support; a merged report names both its files."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support.cli import run_cli
from tests.support.paths import FIXTURES as FIXTURE_ROOT

FIXTURES = FIXTURE_ROOT / "import"
MIB = 2**20


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("report", *args, columns=160)


def _pmon(path: Path, polls: int) -> None:
    """``nvidia-smi pmon -s um -o DT`` (the header of nvidia-smi 535): GPU 0 holds one
    idle process with 30 GB; GPU 1 is shared by two busy ones."""
    lines = [
        "#Date       Time        gpu         pid  type    sm   mem   enc   dec    fb   command",
        "#YYYYMMDD   HH:MM:SS    Idx           #   C/G     %     %     %     %    MB   name",
    ]
    for i in range(polls):
        t = f"10:{i // 60:02d}:{i % 60:02d}"
        day = f" 20250115   {t}"
        lines.append(f"{day}      0       5001     C     0     0     -     -  30000   python")
        lines.append(f"{day}      1       6001     C    40    10     -     -   8000   python")
        lines.append(f"{day}      1       6002     C    30    12     -     -   6000   infer")
    path.write_text("\n".join(lines) + "\n")


def _json(*args: str) -> dict[str, Any]:
    result = _report(*args, "--json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_pmon_alone_gives_process_statistics_and_the_idle_finding(tmp_path: Path) -> None:
    log = tmp_path / "pmon.log"
    # 5 minutes: with no host CPU in the file, idle-holding-vram waits 120 s (a checkpoint
    # save cannot be told from idleness without it).
    _pmon(log, 300)
    # Counted from the file, not from the reader.
    rows = [x.split() for x in log.read_text().splitlines() if not x.startswith("#")]
    sm_6001 = [float(r[5]) for r in rows if r[3] == "6001"]
    data = _json(str(log))
    by_pid = {p["pid"]: p for p in data["processes"]}
    assert set(by_pid) == {5001, 6001, 6002}
    assert by_pid[6001]["sm_percent"]["mean"] == sum(sm_6001) / len(sm_6001)
    assert by_pid[6001]["ticks"] == len(sm_6001)
    assert by_pid[5001]["vram_peak_bytes"] == 30000 * MIB
    gpus = {g["index"]: g for g in data["gpus"]}
    # One process on GPU 0: its SM % is the GPU's. Two on GPU 1: unknown, not a sum.
    assert gpus[0]["sm_percent"]["mean"] == 0 and gpus[0]["sm_percent"]["samples"] == 300
    assert gpus[1]["sm_percent"]["samples"] == 0
    assert "sm_percent" not in data["missing"]
    idle = [f for f in data["findings"] if f["rule"] == "idle-holding-vram"]
    assert [f["subject"]["pid"] for f in idle] == [5001]

    text = _report(str(log)).stdout
    assert "no sm_percent in this file" not in text
    assert "GPU processes (3" in text
    assert "only process" in data["file"]["detail"]


def test_compute_apps_alone_lists_its_processes_with_their_memory() -> None:
    log = FIXTURES / "merge_apps.csv"
    with log.open() as f:
        table = list(csv.reader(f, skipinitialspace=True))
    header, body = table[0], table[1:]
    pid_at = header.index("pid")
    mem_at = next(i for i, h in enumerate(header) if h.startswith("used_gpu_memory"))
    peaks: dict[int, int] = {}
    for row in body:
        mib = int(row[mem_at].split()[0])
        peaks[int(row[pid_at])] = max(peaks.get(int(row[pid_at]), 0), mib)
    data = _json(str(log))
    assert {p["pid"]: p["vram_peak_bytes"] for p in data["processes"]} == {
        pid: mib * MIB for pid, mib in peaks.items()
    }
    text = _report(str(log)).stdout
    for pid in peaks:
        assert any(line.split()[:1] == [str(pid)] for line in text.splitlines())


def test_a_merged_report_names_both_files() -> None:
    gpu, apps = FIXTURES / "merge_gpu.csv", FIXTURES / "merge_apps.csv"
    result = _report(str(gpu), str(apps))
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert str(gpu) in first and str(apps) in first
