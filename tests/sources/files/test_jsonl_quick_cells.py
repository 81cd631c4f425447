"""The JSON-lines reader's quick cells (paths worked out once per plan) are the careful
``_cells_of``'s, object by object, on the fixtures and on odd objects; and a log of odd
objects reads its values and counts its odd lines."""

from __future__ import annotations

import calendar
import json
from pathlib import Path

from gputop_hints.sources.files._text import Head
from gputop_hints.sources.files.generic_jsonl import JsonPlan, _cells_of, quick_cells, sniff
from tests.support.logs import read_log
from tests.support.paths import FIXTURES

GOOD = {
    "time": "2025-01-15T10:00:00Z",
    "host": "node7",
    "devices": [
        {"name": "H100", "utilization": "90 %", "temp_c": 55,
         "memory": {"used": "70000 MiB", "total": "81559 MiB"}},
        {"name": "H100", "utilization": "0 %", "temp_c": None,
         "memory": {"used": "4 MiB", "total": "81559 MiB"}},
    ],
}  # fmt: skip
ODD_OBJECTS: list[object] = [
    GOOD,
    {**GOOD, "time": "2025-01-15T10:00:02Z", "devices": [
        {"name": "H100", "utilization": "N/A", "memory": {"used": "[Not Supported]"}, "temp_c": 55},
        7,
        {"name": "H100", "utilization": "abc", "memory": 5, "temp_c": True},
    ]},
    {**GOOD, "time": "2025-01-15T10:00:04Z", "devices": "none"},
    {**GOOD, "time": "2025-01-15T10:00:06Z", "devices": [
        {"name": "H100", "utilization": 120, "memory": {"used": 1.5e3, "total": "81559 MiB"}},
    ]},
    {"time": "2025-01-15T10:0x:08Z", "devices": [{"name": "H100", "utilization": 12}]},
    {"devices": [{"utilization": "45 %", "temp_c": 50, "extra": {"deep": 1}}], "time": 3},
    {**GOOD, "time": "2025-01-15T10:00:10+02:00"},
    {**GOOD, "time": None},
    {**GOOD, "time": "2025-01-15T10:00:14Z", "devices": []},
    {**GOOD, "time": "2025-01-15T10:00:16Z"},
]  # fmt: skip


def _odd_text() -> str:
    lines = [json.dumps(obj) for obj in ODD_OBJECTS]
    lines.insert(5, "not json at all")
    lines.insert(7, '{"time": "2025-01-15T10:00:09Z", "devices": [')  # cut short
    return "\n".join(lines) + "\n"


def _plan(path: Path) -> JsonPlan:
    plan = sniff(Head(path), None)
    assert isinstance(plan, JsonPlan), plan
    return plan


def _objects(path: Path) -> list[dict[str, object]]:
    out = []
    for line in path.read_text().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def test_quick_cells_are_the_careful_ones(tmp_path: Path) -> None:
    odd = tmp_path / "odd.jsonl"
    odd.write_text(_odd_text())
    for path in (FIXTURES / "import" / "script_nested.jsonl", odd):
        plan = _plan(path)
        quick = quick_cells(plan)
        objects = _objects(path)
        assert objects
        for obj in objects:
            careful = _cells_of(obj, plan)
            got = quick(obj)
            assert (None if got is None else [list(cells) for cells in got]) == careful


def test_odd_objects_read_their_values_and_count_the_rest(tmp_path: Path) -> None:
    odd = tmp_path / "odd.jsonl"
    odd.write_text(_odd_text())
    snaps, info, counters = read_log(odd)
    assert info.format == "jsonl"
    # the first object's two GPUs, as written
    first = snaps[0].gpus
    assert [g.sm_percent for g in first] == [90.0, 0.0]
    assert [g.vram_used_bytes for g in first] == [70000 * 2**20, 4 * 2**20]
    assert [g.temperature_c for g in first] == [55.0, None]
    # odd lines: 120 % (a cell, the rest kept), 'abc' beside nothing else that reads
    # (the GPU dropped), the line that is not JSON, the cut-short object, a 'devices'
    # that is not a list, a time that does not read
    assert counters.found["bad_cells"] == {"utilization": [1, 4]}
    assert counters.bad_lines == 6
    # the last object reads as written, after all the odd ones
    last = snaps[-1].gpus
    assert [g.sm_percent for g in last] == [90.0, 0.0]


def test_utc_times_read_to_the_second_across_minutes(tmp_path: Path) -> None:
    """ISO times in UTC (the minute's start read once, its seconds added) against
    calendar.timegm; a 60th second does not read, as before, and is counted."""
    stamps = [(10, m, s) for m in (0, 1, 59) for s in (0, 1, 30, 59)] + [(11, 0, 0)]
    lines = [
        json.dumps({"time": f"2025-01-15T{h:02d}:{m:02d}:{s:02d}Z", "gpus": [{"util": 5}]})
        for h, m, s in stamps
    ]
    lines.insert(3, json.dumps({"time": "2025-01-15T10:00:60Z", "gpus": [{"util": 5}]}))
    path = tmp_path / "utc.jsonl"
    path.write_text("\n".join(lines) + "\n")
    snaps, info, counters = read_log(path)
    assert info.format == "jsonl"
    want = [float(calendar.timegm((2025, 1, 15, h, m, s))) for h, m, s in stamps]
    assert [s.timestamp for s in snaps] == want
    assert counters.bad_lines == 1 and counters.first_bad_line == 4
