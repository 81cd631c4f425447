"""Per-process logs: --query-compute-apps and pmon, alone or merged with a GPU log."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from gputop_hints.sources.files import open_stream, open_streams
from gputop_hints.streams import (
    METRIC_PROCESSES,
    METRIC_SM,
    UnrecognisedFormat,
)
from tests.support.ci import IN_CI
from tests.support.paths import FIXTURES as FIXTURE_ROOT
from tests.support.paths import TRACES

MIB = 2**20
FIXTURES = FIXTURE_ROOT / "import"


@pytest.fixture(scope="module")
def traces() -> Path:
    if not TRACES.is_dir():
        if IN_CI:
            pytest.fail(f"shared traces missing at {TRACES} (CI must provide ../shared)")
        pytest.skip(f"shared traces not found at {TRACES}")
    return TRACES


def test_fargo3d_compute_apps_alone(traces: Path) -> None:
    # 32 rows after the header = 16 polls x 2 processes (PIDs 1508004/1508005,
    # one per GPU UUID), every one "1002 MiB": mean and peak 1002 MiB.
    path = traces / "nvsmi_computeapps_fargo3d.csv"
    assert len(path.read_text().splitlines()) == 33
    with closing(open_stream(path, interval_s=10)) as stream:
        snaps = list(stream)
    info, counters = stream.info, stream.counters
    assert info.format == "nvidia-smi-apps" and counters.bad_lines == 0
    assert len(snaps) == 16 and counters.gpu_count == 2
    assert [s.timestamp for s in snaps[:3]] == [0, 10, 20]
    rows = [(p.pid, p.gpu_index, p.vram_bytes, p.name) for s in snaps for p in s.processes]
    assert len(rows) == 32
    assert {r[:2] for r in rows} == {(1508004, 0), (1508005, 1)}
    sizes = [r[2] or 0 for r in rows]
    assert sum(sizes) / len(sizes) == max(sizes) == 1002 * MIB
    assert {r[3] for r in rows} == {"./fargo3d"}
    assert snaps[0].gpus[0].uuid == "GPU-c426578f-6063-0c88-ae91-ebe2d792754d"
    assert snaps[0].gpus[0].sm_percent is None  # a process log says nothing of the GPU
    assert METRIC_SM in info.missing and METRIC_PROCESSES not in info.missing
    assert "numbered in order of appearance" in info.detail


def test_compute_apps_without_header(tmp_path: Path, traces: Path) -> None:
    lines = (traces / "nvsmi_computeapps_fargo3d.csv").read_text().splitlines()[1:]
    path = tmp_path / "apps.csv"
    path.write_text("\n".join(lines) + "\n")
    with closing(open_stream(path)) as stream:
        snaps = list(stream)
    assert len(snaps) == 16 and "default field order" in stream.info.detail


def test_pmon_with_dates_fb_and_a_bad_row() -> None:
    with closing(open_stream(FIXTURES / "pmon_dt.log")) as stream:
        snaps = list(stream)
    info, counters = stream.info, stream.counters
    assert info.format == "nvidia-smi-pmon"
    assert [s.timestamp - snaps[0].timestamp for s in snaps] == [0, 1, 2]
    first = {p.pid: p for p in snaps[0].processes}
    assert first[7001].sm_percent == 95 and first[7001].memory_access_percent == 40
    assert first[7002].sm_percent is None  # "-": no sample, unknown rather than idle
    assert first[7002].vram_bytes == 19990 * MIB
    assert snaps[2].processes == ()  # GPU 0 idle; GPU 1's row does not read
    assert counters.bad_lines == 1 and counters.first_bad_line == 8


def test_gpu_log_and_apps_log_merge_by_time_and_uuid() -> None:
    stream = open_streams([FIXTURES / "merge_apps.csv", FIXTURES / "merge_gpu.csv"])
    with closing(stream):
        snaps = list(stream)
    info, _counters = stream.info, stream.counters
    assert info.format == "nvidia-smi-csv" and METRIC_PROCESSES not in info.missing
    assert "processes from merge_apps.csv" in info.detail
    assert len(snaps) == 5
    for snap in snaps:
        # The apps log meets GPU bbbb first (its own number 0); the UUID puts it on GPU 1.
        assert {(p.pid, p.gpu_index) for p in snap.processes} == {(7001, 1), (7002, 0)}
    assert [s.gpus[1].sm_percent for s in snaps] == [0, 95, 97, 96, 0]


def test_two_logs_need_one_of_each_kind() -> None:
    with pytest.raises(UnrecognisedFormat, match="per-process rows"):
        open_streams([FIXTURES / "merge_gpu.csv", FIXTURES / "nvsmi_full_2gpu.csv"])
    with pytest.raises(UnrecognisedFormat, match="3 given"):
        open_streams([FIXTURES / "merge_gpu.csv"] * 3)
