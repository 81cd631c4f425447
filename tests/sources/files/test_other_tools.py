"""dcgmi dmon and gpustat logs (hand-written from the tools' documented output,
see tests/fixtures/import/README.md), with broken variants."""

from __future__ import annotations

from contextlib import closing

import pytest

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import open_stream
from gputop_hints.streams import (
    METRIC_MEMORY_ACCESS,
    METRIC_PROCESSES,
    ReadCounters,
    StreamInfo,
)
from tests.support.cli import run_cli
from tests.support.paths import FIXTURES as FIXTURE_ROOT

MIB = 2**20
FIXTURES = FIXTURE_ROOT / "import"


def load(name: str, **kwargs: object) -> tuple[list[Snapshot], StreamInfo, ReadCounters]:
    stream = open_stream(FIXTURES / name, **kwargs)  # type: ignore[arg-type]
    with closing(stream):
        snaps = list(stream)
    return snaps, stream.info, stream.counters


def test_dcgmi_dmon_by_name_with_a_bad_power_cell() -> None:
    snaps, info, counters = load("dcgmi_dmon.log", interval_s=0.5)
    assert info.format == "dcgmi-dmon" and info.gpu_count == 2
    assert [s.timestamp for s in snaps] == [0, 0.5, 1.0]
    g0 = [s.gpus[0] for s in snaps]
    assert [g.sm_percent for g in g0] == [95, 97, 96]  # GPUTL, not the SMACT ratio
    assert [g.memory_access_percent for g in g0] == [40, 42, None]  # N/A: unknown
    assert g0[0].vram_used_bytes == 20000 * MIB and g0[0].temperature_c == 61
    assert g0[2].power_watts is None and g0[2].temperature_c == 62  # the row is kept
    assert counters.found["bad_cells"] == {"POWER": [1, 9]}


def test_dcgmi_dmon_by_field_id_scales_ratios_and_skips_instances() -> None:
    snaps, info, _counters = load("dcgmi_dmon_ids.log")
    assert len(snaps) == 2 and info.gpu_count == 1  # the GPU-I row is not a GPU
    assert [s.gpus[0].sm_percent for s in snaps] == [85, 90]  # GRACT 0.85 -> 85 %
    assert [s.gpus[0].memory_access_percent for s in snaps] == [30, 35]  # DRAMA
    assert snaps[0].gpus[0].vram_used_bytes == 10240 * MIB
    assert "no timestamps" in info.detail


def test_dcgmi_profiling_fields_are_carried_as_percentages() -> None:
    """SMACT/SMOCC/TENSO/DRAMA (by field id, then by name) reach the model as
    percentages; N/A and a ratio above 1 are unknown, never a value."""
    snaps, info, _counters = load("dcgmi_dmon_profiling.log", interval_s=1.0)
    assert info.format == "dcgmi-dmon" and len(snaps) == 3
    g0 = [s.gpus[0] for s in snaps]
    assert [g.sm_percent for g in g0] == [97, 98, 99]  # GPUTL stays utilization
    assert [g.sm_active_percent for g in g0] == pytest.approx([91.2, 93.0, 5.0])
    assert [g.sm_occupancy_percent for g in g0][:2] == pytest.approx([45.5, None])
    assert g0[2].sm_occupancy_percent is None  # 1.7 of the maximum cannot be
    assert [g.tensor_active_percent for g in g0] == pytest.approx([30.1, 31.0, 0.0])
    assert [g.dram_active_percent for g in g0] == pytest.approx([40.2, 41.0, 90.0])
    assert [g.memory_access_percent for g in g0] == pytest.approx([40.2, 41.0, 90.0])
    assert all(s.gpus[1].sm_active_percent == 0 for s in snaps)


def test_logs_without_profiling_fields_leave_them_unknown() -> None:
    snaps, _info, _counters = load("dcgmi_dmon_ids.log")
    g = snaps[0].gpus[0]
    assert g.dram_active_percent == pytest.approx(30.0)  # field 1005 is DRAMA
    assert (g.sm_active_percent, g.sm_occupancy_percent, g.tensor_active_percent) == (
        None,
        None,
        None,
    )


def test_gpustat_json_lines_with_processes_and_a_cut_document() -> None:
    snaps, info, counters = load("gpustat.jsonl")
    assert info.format == "gpustat" and info.hostname == "node1"
    assert len(snaps) == 2 and info.interval_s == 5
    assert [s.gpus[0].sm_percent for s in snaps] == [95, 0]
    (p,) = snaps[1].processes
    assert (p.pid, p.user, p.name, p.vram_bytes, p.cpu_percent) == (
        1234,
        "ana",
        "python",
        19000 * MIB,
        2.0,
    )
    assert METRIC_PROCESSES not in info.missing and METRIC_MEMORY_ACCESS in info.missing
    assert counters.bad_lines == 1 and "cut short" in (counters.first_bad_reason or "")


def test_gpustat_text_lines() -> None:
    snaps, info, counters = load("gpustat.log")
    assert info.format == "gpustat" and len(snaps) == 3 and info.gpu_count == 2
    assert [s.timestamp - snaps[0].timestamp for s in snaps] == [0, 5, 10]
    first = snaps[0].gpus[0]
    assert (first.sm_percent, first.temperature_c, first.power_watts) == (95, 45, 250)
    assert (first.vram_used_bytes, first.vram_total_bytes) == (20000 * MIB, 81920 * MIB)
    assert {(p.pid, p.user, p.vram_bytes) for p in snaps[1].processes} == {
        (1234, "ana", 19000 * MIB),
        (999, "bob", 1000 * MIB),
    }
    assert [g.index for g in snaps[2].gpus] == [1]  # GPU 0's line does not read
    assert counters.bad_lines == 1 and counters.first_bad_line == 8


def _report(*args: str) -> str:
    result = run_cli("report", *args, columns=160)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_report_of_a_dcgmi_log_shows_its_profiling_figures() -> None:
    """The report prints a DCGM profiling table whose means are the log's own."""
    log = FIXTURES / "dcgmi_dmon_profiling.log"
    # Count independently: GPU 0's SMACT / TENSO ratios in the file, by column.
    smact, tenso = [], []
    for line in log.read_text().splitlines():
        cells = line.split()
        if cells[:2] == ["GPU", "0"]:
            smact.append(float(cells[2]))
            tenso.append(float(cells[4]))
    text = _report(str(log), "--interval", "1")
    assert "(DCGM profiling)" in text
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if "(DCGM profiling)" in x)
    cells = next(x for x in lines[start + 1 :] if x.split()[:1] == ["0"]).split()
    assert cells[1].split("/")[0] == f"{sum(smact) / len(smact) * 100:.0f}"
    assert cells[3].split("/")[0] == f"{sum(tenso) / len(tenso) * 100:.0f}"


def test_report_without_profiling_fields_has_no_profiling_table() -> None:
    assert "(DCGM profiling)" in _report(str(FIXTURES / "dcgmi_dmon.log"), "--interval", "1")
    assert "(DCGM profiling)" not in _report(str(FIXTURES / "nvsmi_full_2gpu.csv"))
