"""gpustat --json logs read their numbers as json.loads gives them (JSON numbers only:
true/false, strings and null are unknown), one document a line or pretty-printed, with
odd lines counted."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.logs import read_log
from tests.support.paths import FIXTURES

MIB = 2**20


def _docs() -> list[dict[str, object]]:
    lines = (FIXTURES / "import" / "gpustat.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    odd_values = []
    for k, value in enumerate([True, "95", None, 12.5, 0, False, 100]):
        doc = json.loads(lines[0])
        doc["query_time"] = f"2025-01-15T10:01:{k:02d}.000000"
        gpu = doc["gpus"][0]
        gpu["utilization.gpu"] = value
        gpu["temperature.gpu"] = value
        gpu["power.draw"] = value
        gpu["processes"][0]["cpu_percent"] = value
        odd_values.append(doc)
    return [first, *odd_values]


def _expected_number(value: object) -> float | None:
    return float(value) if type(value) in (int, float) else None  # type: ignore[arg-type]


def test_values_are_the_json_numbers(tmp_path: Path) -> None:
    docs = _docs()
    lines = [json.dumps(doc) for doc in docs]
    lines.insert(3, json.dumps(docs[2], indent=2))  # pretty-printed, the same document
    lines.insert(5, "not json")
    lines.insert(7, lines[1][:60])  # cut short
    lines.insert(9, "[1, 2]")
    path = tmp_path / "gpustat_odd.jsonl"
    path.write_text("\n".join(lines) + "\n")
    snaps, info, counters = read_log(path)
    assert info.format == "gpustat"
    shown = [docs[0], docs[1], docs[2], docs[2], *docs[3:]]
    assert len(snaps) == len(shown)
    for snap, doc in zip(snaps, shown, strict=True):
        gpu_doc = doc["gpus"][0]  # type: ignore[index]
        (gpu,) = snap.gpus
        util = _expected_number(gpu_doc["utilization.gpu"])
        assert gpu.sm_percent == (util if util is not None and 0 <= util <= 100 else None)
        assert gpu.temperature_c == _expected_number(gpu_doc["temperature.gpu"])
        assert gpu.power_watts == _expected_number(gpu_doc["power.draw"])
        assert gpu.vram_used_bytes == round(gpu_doc["memory.used"] * MIB)
        (proc,) = snap.processes
        assert proc.cpu_percent == _expected_number(gpu_doc["processes"][0]["cpu_percent"])
    # the line that is not JSON, the cut-short document, the list
    assert counters.bad_lines == 3
