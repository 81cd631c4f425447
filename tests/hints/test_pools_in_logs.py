"""A framework's memory pool in a GPU-only log (no process rows): flat from the first
reading at a documented share (signals.device_pool). An inference server idle between
request bursts is not a starved training job, and a pool is not a card about to run out
of memory -- while a card that fills up over the log still is. Logs written here as
``nvidia-smi --query-gpu ... --format=csv -l 5`` writes them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.support.cli import run_cli

T0 = 1733306400
HEADER = "timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"
TOTAL_MIB = 81920


def _report(tmp_path: Path, readings: list[tuple[int, int]], every_s: int = 5) -> dict[str, Any]:
    path = tmp_path / "gpu.csv"
    rows = [
        time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(T0 + k * every_s))
        + f".000, 0, {util} %, {mib} MiB, {TOTAL_MIB} MiB"
        for k, (util, mib) in enumerate(readings)
    ]
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    result = run_cli("report", "--json", str(path))
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _severe(document: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [
        f
        for f in document["findings"]
        if f["rule"] == rule and f["worst_severity"] in ("warning", "critical")
    ]


def _serving(minutes: int) -> list[tuple[int, int]]:
    """vLLM's default pool (0.9 of the card) from the first reading; a burst of requests
    (two readings at 100 %) every 80 readings (6 min 40 s), idle between."""
    pool = round(0.898 * TOTAL_MIB)
    return [(100 if k % 80 in (0, 1) else 0, pool) for k in range(minutes * 12)]


def test_a_server_idle_between_bursts_is_a_pool_not_a_starved_job(tmp_path: Path) -> None:
    document = _report(tmp_path, _serving(120))
    assert _severe(document, "input-starved") == []
    assert _severe(document, "vram-near-limit") == []
    [idle] = _severe(document, "idle-holding-vram")
    assert "has not moved since the first reading" in idle["summary"]
    assert any("--gpu-memory-utilization" in a for a in idle["advice"])
    assert not any("notebook" in a for a in idle["advice"])


def test_the_same_bursts_on_a_card_that_grew_are_judged_as_a_job(tmp_path: Path) -> None:
    # The same duty cycle, the memory growing over the first minutes: no pool.
    readings = [(util, min(30000, 2000 + 400 * k)) for k, (util, _) in enumerate(_serving(120))]
    document = _report(tmp_path, readings)
    assert not any("has not moved" in f["summary"] for f in document["findings"])


def test_tensorflows_whole_card_from_the_first_reading_is_no_oom_risk(tmp_path: Path) -> None:
    # TensorFlow maps the card less its reserve (1.5 GiB on an 8.x card) at start.
    full = TOTAL_MIB - 1536 - 100
    readings = [(95 if k % 10 else 20, full) for k in range(240)]
    assert _severe(_report(tmp_path, readings), "vram-near-limit") == []


def test_a_card_that_fills_up_over_the_log_is_an_oom_risk(tmp_path: Path) -> None:
    readings = [(95, min(TOTAL_MIB - 600, 60000 + 200 * k)) for k in range(240)]
    assert _severe(_report(tmp_path, readings), "vram-near-limit") != []


def test_a_busy_server_bursting_with_its_traffic_is_not_called_starved(tmp_path: Path) -> None:
    # Requests arriving every half minute: bursts and idle readings in turn -- the same
    # two-mode trace a starved loop gives. With the pool flat from the first reading
    # nothing tells traffic from late batches; on a card that grew it is a duty cycle.
    pool = round(0.898 * TOTAL_MIB)
    pattern = [100, 100, 0, 0, 0, 0] * 60
    assert _severe(_report(tmp_path, [(u, pool) for u in pattern]), "input-starved") == []
    grown = [(u, min(30000, 2000 + 400 * k)) for k, u in enumerate(pattern)]
    assert _severe(_report(tmp_path, grown), "input-starved") != []
