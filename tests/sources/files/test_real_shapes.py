"""Shapes seen in real GPU logs in public repositories that the readers got wrong
(fixtures written by hand in the same shape; see tests/fixtures/import/README.md)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import closing
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import open_stream
from gputop_hints.streams import ReadCounters, StreamInfo
from tests.support.paths import FIXTURES as FIXTURE_ROOT

MIB = 2**20
FIXTURES = FIXTURE_ROOT / "import"


def load(path: Path, **kwargs: object) -> tuple[list[Snapshot], StreamInfo, ReadCounters]:
    stream = open_stream(path, **kwargs)  # type: ignore[arg-type]
    with closing(stream):
        snaps = list(stream)
    return snaps, stream.info, stream.counters


def test_wandb_panel_export_reads_relative_process_time() -> None:
    # W&B's 'Export panel data' CSV of a system chart: x axis 'Relative Time (Process)'
    # in seconds, one '<run> - system/gpu.N.gpu' column per GPU with its __MIN/__MAX.
    snaps, info, counters = load(FIXTURES / "wandb_panel_export.csv")
    assert [s.timestamp for s in snaps] == [30.418, 60.902, 91.337, 121.8]
    assert 30 < (info.interval_s or 0) < 31  # W&B's ~30 s, not one a second assumed
    assert [s.gpus[0].sm_percent for s in snaps] == [88.5, 91, 12.25, 95]  # not __MIN
    assert [len(s.gpus) for s in snaps] == [2, 2, 2, 1]
    assert info.header is not None
    columns = info.header["columns"]
    assert isinstance(columns, Mapping) and columns["Relative Time (Process)"] == "time"
    assert counters.bad_lines == 0
