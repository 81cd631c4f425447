"""JSON lines from people's own scripts: flat objects per GPU, or a list of GPU objects.

Expected figures come from reading the fixtures with the json module line by line,
not from the reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gputop_hints.sources.files import open_stream
from gputop_hints.streams import UnrecognisedFormat
from tests.support.logs import read_log
from tests.support.paths import FIXTURES

IMPORT = FIXTURES / "import"
MIB = 2**20


def _parsed(line: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _objects(path: Path) -> tuple[list[dict[str, Any]], list[int]]:
    """The lines that parse as JSON objects, and the numbers of those that do not."""
    lines = path.read_text().splitlines()
    parsed = [_parsed(line) for line in lines]
    good = [p for p in parsed if p is not None]
    return good, [n for n, p in enumerate(parsed, start=1) if p is None]


def test_flat_objects_one_per_gpu_per_poll() -> None:
    path = IMPORT / "script_flat.jsonl"
    snaps, info, counters = read_log(path)
    objects, bad = _objects(path)
    assert info.format == "jsonl" and info.gpu_count == 2
    polls = sorted({round(o["timestamp"]) for o in objects})
    assert len(snaps) == len(polls)
    assert info.interval_s == polls[1] - polls[0]
    for obj in objects:
        snap = next(s for s in snaps if abs(s.timestamp - obj["timestamp"]) < 1)
        gpu = snap.gpu(obj["gpu_index"])
        assert gpu is not None
        assert gpu.sm_percent == obj["gpu_util"]  # None for the null one
        assert gpu.memory_access_percent == obj["mem_util"]
        assert gpu.vram_used_bytes == obj["memory_used_mb"] * MIB
        assert gpu.vram_total_bytes == obj["memory_total_mb"] * MIB
        assert gpu.temperature_c == obj["temperature"]
        assert gpu.power_watts == obj["power_w"]
    # the object cut short and the line that is not JSON are bad records, with their
    # line numbers; the objects after the cut one still read
    assert counters.bad_lines == len(bad) == 2
    assert counters.first_bad_line == bad[0]


def test_nested_list_without_index_strings_with_units() -> None:
    path = IMPORT / "script_nested.jsonl"
    snaps, info, counters = read_log(path)
    objects, bad = _objects(path)
    assert not bad and counters.bad_lines == 0
    assert info.format == "jsonl" and info.gpu_count == 2
    assert "numbered by their place" in info.detail
    assert len(snaps) == len(objects)
    for snap, obj in zip(snaps, objects, strict=True):
        for place, dev in enumerate(obj["devices"]):
            gpu = snap.gpu(place)
            assert gpu is not None and gpu.name == dev["name"]
            assert gpu.sm_percent == float(dev["utilization"].split()[0])
            assert gpu.vram_used_bytes == int(dev["memory"]["used"].split()[0]) * MIB
            assert gpu.vram_total_bytes == int(dev["memory"]["total"].split()[0]) * MIB
            assert gpu.temperature_c == dev["temp_c"]
    assert snaps[1].timestamp - snaps[0].timestamp == 2.0
    assert snaps[0].timestamp == 1736935200.0  # 2025-01-15T10:00:00Z


def test_gpustat_documents_still_read_as_gpustat() -> None:
    _snaps, info, _counters = read_log(IMPORT / "gpustat.jsonl")
    assert info.format == "gpustat"


def test_json_without_a_metric_key_says_which_keys_it_saw(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"step": 1, "loss": 2.5}\n{"step": 2, "loss": 2.4}\n')
    with pytest.raises(UnrecognisedFormat) as err:
        open_stream(path)
    message = str(err.value)
    assert "jsonl: JSON lines, but no key names a GPU metric (keys: step, loss)" in message
    assert "--map" in message


def test_map_names_a_key_the_aliases_miss(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(
        "".join(json.dumps({"t": 1736935200 + i, "busy": 10 * i}) + "\n" for i in range(5))
    )
    stream = open_stream(path, mapping={"sm": "busy"})
    try:
        snaps = list(stream)
    finally:
        stream.close()
    assert [s.gpus[0].sm_percent for s in snaps] == [0, 10, 20, 30, 40]
