"""A JSON object's time is read once for all its GPUs: the readings, and the lines a
time that does not read costs (line, message), are those of reading it GPU by GPU; the
quick cells fetch a GPU's values under one key together, whatever the key order."""

from __future__ import annotations

import json
from pathlib import Path

from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._table import parse_row, time_of
from gputop_hints.sources.files._text import Head
from gputop_hints.sources.files.generic_jsonl import JsonPlan, _cells_of, quick_cells, sniff
from tests.support.logs import read_log


def _gpu(util: object, used: object, sm: object) -> dict[str, object]:
    return {"utilization": util, "memory": {"used": used, "total": {"mib": 81559}},
            "clocks": {"sm": sm}, "temp": 50}  # fmt: skip


def _log(tmp_path: Path, times: list[object]) -> Path:
    lines = [
        json.dumps({"time": t, "gpus": [_gpu(i % 7, "10 MiB", 1400), _gpu(3, 20, None)]})
        for i, t in enumerate(times)
    ]
    path = tmp_path / "shared.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _plan(path: Path) -> JsonPlan:
    plan = sniff(Head(path), None)
    assert isinstance(plan, JsonPlan), plan
    return plan


def test_a_time_that_does_not_read_costs_its_line_as_row_by_row(tmp_path: Path) -> None:
    times: list[object] = [f"2025-01-15T10:00:{s:02d}Z" for s in range(0, 40, 2)]
    times[5] = "2025-01-15T10:0x:10Z"
    times[9] = "yesterday"
    path = _log(tmp_path, times)
    snaps, info, counters = read_log(path)
    assert info.format == "jsonl"
    assert len(snaps) == 18 and all(len(s.gpus) == 2 for s in snaps)
    assert counters.bad_lines == 2 and counters.first_bad_line == 6
    # the reason is what parse_row raises reading the GPU's own time cell
    plan = _plan(path)
    cells = _cells_of(json.loads(path.read_text().splitlines()[5]), plan)
    assert cells is not None
    try:
        parse_row(cells[0], plan.columns, 6)
    except v.CellError as exc:
        assert counters.first_bad_reason == str(exc)
        assert time_of(str(times[5])) == str(exc)
    else:
        raise AssertionError("the time should not read")


def test_the_time_read_once_is_each_gpus_time(tmp_path: Path) -> None:
    times: list[object] = [f"2025-01-15T10:00:{s:02d}Z" for s in range(0, 40, 2)]
    path = _log(tmp_path, times)
    plan = _plan(path)
    snaps, _info, _counters = read_log(path)
    for snap, line in zip(snaps, path.read_text().splitlines(), strict=True):
        cells = _cells_of(json.loads(line), plan)
        assert cells is not None
        rows = [parse_row(c, plan.columns, 1) for c in cells]
        want = 1736935200.0 + (snap.timestamp - snaps[0].timestamp)  # 2025-01-15T10:00:00Z on
        assert [r.timestamp for r in rows] == [want] * len(rows)
        assert [g.sm_percent for g in snap.gpus] == [r.fields["sm"] for r in rows]


def test_quick_cells_fetch_deep_values_by_first_key(tmp_path: Path) -> None:
    """Two- and three-key paths under one key (memory.used, memory.total.mib) between
    others (clocks.sm): the quick cells are the careful ones, column by column, also
    where a key holds no object."""
    path = _log(tmp_path, [f"2025-01-15T10:00:{s:02d}Z" for s in range(0, 20, 2)])
    plan = _plan(path)
    assert any(len(p) == 3 for _in_gpu, p in plan.paths)
    quick = quick_cells(plan)
    odd = [
        {"time": "2025-01-15T10:01:00Z",
         "gpus": [_gpu(5, "1 MiB", 1), {"memory": 5, "clocks": None}]},
        {"time": "2025-01-15T10:01:02Z", "gpus": [{"memory": {"total": 3, "used": [1]}}, 7]},
        {"time": 3, "gpus": [{"memory": {"total": {"mib": {"x": 1}}, "used": True}}]},
    ]  # fmt: skip
    for obj in [*map(json.loads, path.read_text().splitlines()), *odd]:
        got = quick(obj)
        assert got is not None
        assert [list(cells) for cells in got] == _cells_of(obj, plan)
