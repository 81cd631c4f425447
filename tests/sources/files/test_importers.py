"""Importers: the shared real traces, hand-written fixtures, fuzzing, round trips, streaming."""

from __future__ import annotations

import csv
import gzip
import json
import math
import random
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import FORMATS, MappingError, open_stream, parse_mapping
from gputop_hints.streams import (
    METRIC_HOST_CPU,
    METRIC_MEMORY_ACCESS,
    METRIC_PCIE,
    METRIC_PROCESSES,
    METRIC_SM,
    METRIC_SUBSECOND,
    METRIC_THROTTLE,
    METRIC_VRAM,
    ReadCounters,
    StreamInfo,
    UnrecognisedFormat,
)
from tests.support.ci import IN_CI
from tests.support.paths import FIXTURES as FIXTURE_ROOT
from tests.support.paths import TRACES

MIB = 2**20
FIXTURES = FIXTURE_ROOT / "import"


def load(
    path: Path | str,
    *,
    format: str | None = None,
    interval_s: float | None = None,
    mapping: dict[str, str] | None = None,
) -> tuple[list[Snapshot], StreamInfo, ReadCounters]:
    stream = open_stream(path, format=format, interval_s=interval_s, mapping=mapping)
    snaps = list(stream)
    stream.close()
    return snaps, stream.info, stream.counters


def sm(snap: Snapshot, index: int = 0) -> float:
    gpu = snap.gpu(index)
    assert gpu is not None and gpu.sm_percent is not None
    return gpu.sm_percent


def check_valid(snaps: list[Snapshot]) -> None:
    """What every yielded snapshot must satisfy, whatever the input."""
    last = -math.inf
    for s in snaps:
        assert s.source == "replay"
        assert math.isfinite(s.timestamp) and s.timestamp >= last
        last = s.timestamp
        assert s.interval_s > 0
        assert s.host.cpu_percent_per_core == () or all(
            c is None or 0 <= c <= 100 for c in s.host.cpu_percent_per_core
        )
        for g in s.gpus:
            for pct in (g.sm_percent, g.memory_access_percent):
                assert pct is None or 0 <= pct <= 100
            for size in (g.vram_used_bytes, g.vram_total_bytes):
                assert size is None or size >= 0
            for r in (g.pcie_rx_bytes_per_s, g.pcie_tx_bytes_per_s):
                assert r is None or r >= 0


# --- the shared real traces --------------------------------------------------


@pytest.fixture(scope="module")
def traces() -> Path:
    if not TRACES.is_dir():
        if IN_CI:
            pytest.fail(f"shared traces missing at {TRACES} (CI must provide ../shared)")
        pytest.skip(f"shared traces not found at {TRACES}")
    return TRACES


def test_openad_nvidia_smi_csv(traces: Path) -> None:
    path = traces / "openad_gpu_usage.csv"
    with open(path, newline="") as f:
        rows = [[c.strip() for c in r] for r in list(csv.reader(f))[1:]]
    by_gpu: dict[str, list[list[str]]] = {}
    for r in rows:
        by_gpu.setdefault(r[1], []).append(r)
    snaps, info, counters = load(path)
    check_valid(snaps)
    assert info.format == "nvidia-smi-csv"
    assert info.gpu_count == 2
    assert len(snaps) == len(rows) // 2 == 473
    assert counters.bad_lines == 0
    assert info.interval_s is not None and 0.95 <= info.interval_s <= 1.1
    expected_mean = statistics.mean(float(r[3].split()[0]) for r in by_gpu["0"])
    got = statistics.mean(sm(s) for s in snaps)
    assert got == pytest.approx(expected_mean)
    assert 90 < got < 93  # GPU 0 busy at 84-100 %
    g0, g1 = snaps[0].gpus
    assert (g0.vram_used_bytes, g0.vram_total_bytes) == (25073 * MIB, 49140 * MIB)
    assert g1.vram_used_bytes == 15 * MIB and g1.sm_percent == 0
    assert g0.name == "NVIDIA RTX A6000"
    # SM % + memory % exceeds 100 in this trace (e.g. 100 % + 100 %).
    assert max(s.gpus[0].utilization_sum_percent or 0 for s in snaps) == 200
    missing = info.missing
    for metric in (METRIC_PCIE, METRIC_PROCESSES, METRIC_HOST_CPU, METRIC_SUBSECOND):
        assert metric in missing
    assert METRIC_SM not in missing and METRIC_VRAM not in missing
    assert snaps[0].source_detail == "nvidia-smi CSV: openad_gpu_usage.csv"
    assert snaps[0].host.hostname == "unknown" and snaps[0].host.cpu_percent_per_core == ()


def _simple_csv(path: Path) -> list[dict[str, float]]:
    with open(path, newline="") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def test_machine_translation_generic_csv(traces: Path) -> None:
    path = traces / "machine_translation_gpu_usage.csv"
    rows = _simple_csv(path)  # timestamp, gpu_utilization, memory_used, memory_total (MiB)
    snaps, info, _counters = load(path)
    check_valid(snaps)
    assert info.format == "csv" and info.gpu_count == 1
    assert len(snaps) == len(rows) == 135
    assert info.interval_s is not None and 0.45 <= info.interval_s <= 0.6
    expected = statistics.mean(r["gpu_utilization"] for r in rows)
    assert statistics.mean(sm(s) for s in snaps) == pytest.approx(expected)
    assert snaps[-1].gpus[0].vram_used_bytes == int(rows[-1]["memory_used"]) * MIB
    assert snaps[-1].gpus[0].vram_total_bytes == 15360 * MIB
    assert snaps[0].timestamp == pytest.approx(rows[0]["timestamp"])
    assert METRIC_MEMORY_ACCESS in info.missing


def test_rectified_point_flow_generic_csv(traces: Path) -> None:
    path = traces / "rectified_point_flow_gpu_usage.csv"
    rows = _simple_csv(path)  # nvidia-smi field names, but epoch times and no ", "
    snaps, info, _counters = load(path)
    check_valid(snaps)
    assert info.format == "csv"
    assert len(snaps) == len(rows) == 90
    assert info.interval_s == pytest.approx(60.0)
    expected = statistics.mean(r["utilization.gpu"] for r in rows)
    assert statistics.mean(sm(s) for s in snaps) == pytest.approx(expected)
    assert snaps[3].gpus[0].vram_used_bytes == 10544 * MIB
    assert snaps[3].gpus[0].vram_total_bytes == 24576 * MIB


def test_spaceinvaders_wandb(traces: Path) -> None:
    path = traces / "spaceinvaders_wandb-events.jsonl"
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    snaps, info, counters = load(path)
    check_valid(snaps)
    assert info.format == "wandb" and info.gpu_count == 1
    assert len(snaps) == len(lines) == 18
    assert info.interval_s is not None and 25 <= info.interval_s <= 35
    utils = [sm(s) for s in snaps]
    assert utils == [line["system.gpu.0.gpu"] for line in lines]
    # README says "GPU 4-7 %"; the file really holds 3.87 .. 7.13, mean 4.96.
    assert min(utils) == 3.87 and max(utils) == 7.13
    assert statistics.mean(utils) == pytest.approx(4.96, abs=0.01)
    # VRAM is only a share: bytes stay unknown, the share is in the header.
    assert snaps[0].gpus[0].vram_used_bytes is None
    assert METRIC_VRAM in info.missing
    share: dict[str, dict[str, float]] = counters.found["vram_allocated_percent"]  # type: ignore[assignment]
    assert share["0"]["mean"] == pytest.approx(1.91)
    # system.cpu is one number: not spread over pseudo-cores.
    assert snaps[0].host.cpu_percent_per_core == ()
    assert METRIC_HOST_CPU in info.missing
    cpu_stats: dict[str, dict[str, float]] = counters.found["system_cpu_percent"]  # type: ignore[assignment]
    cpu = cpu_stats["all"]
    assert cpu["mean"] == pytest.approx(statistics.mean(x["system.cpu"] for x in lines))
    assert 65 <= cpu["mean"] <= 75  # "CPU about 70 %"
    assert snaps[0].gpus[0].temperature_c == 49.93 and snaps[0].gpus[0].power_watts == 27.79
    # Given the card's size, the share becomes bytes.
    snaps2, info2, _counters2 = load(path, mapping={"vram_total": "8GiB"})
    assert snaps2[0].gpus[0].vram_used_bytes == round(8 * 2**30 * 0.0191)
    assert METRIC_VRAM not in info2.missing


# --- hand-written fixtures ---------------------------------------------------


def test_nvsmi_full_two_gpus_with_na_and_throttle() -> None:
    snaps, info, _counters = load(FIXTURES / "nvsmi_full_2gpu.csv")
    check_valid(snaps)
    assert len(snaps) == 3 and info.gpu_count == 2
    g0, g1 = snaps[0].gpus
    assert g0.uuid == "GPU-11111111-2222-3333-4444-555555555555"
    assert (g0.sm_percent, g0.memory_access_percent) == (97, 60)
    assert (g0.vram_used_bytes, g0.vram_total_bytes) == (40960 * MIB, 81920 * MIB)
    assert (g0.temperature_c, g0.power_watts, g0.power_limit_watts) == (61, 310.5, 400)
    assert (g0.sm_clock_mhz, g0.max_sm_clock_mhz) == (1410, 1410)
    assert (g0.pcie_generation, g0.pcie_width) == (4, 16)
    assert g0.throttle_reasons == () and g1.throttle_reasons == ("sw_power_cap",)
    h0, h1 = snaps[1].gpus
    assert h0.power_watts is None  # [N/A]
    assert h0.throttle_reasons == ("hw_thermal", "sw_power_cap")  # 0x44
    assert h1.sm_percent is None and h1.memory_access_percent is None  # [N/A], [Not Supported]
    assert h1.pcie_generation is None and h1.throttle_reasons is None
    assert METRIC_THROTTLE not in info.missing and METRIC_PCIE in info.missing


def test_nvsmi_noheader_with_units_is_inferred() -> None:
    snaps, info, _counters = load(FIXTURES / "nvsmi_noheader_units.csv")
    check_valid(snaps)
    assert len(snaps) == 3 and info.gpu_count == 2
    g0 = snaps[0].gpus[0]
    assert (g0.sm_percent, g0.memory_access_percent) == (92, 73)
    assert (g0.vram_used_bytes, g0.vram_total_bytes) == (25073 * MIB, 49140 * MIB)
    assert g0.name == "NVIDIA RTX A6000"
    assert "taken as sm" in info.detail


def test_nvsmi_noheader_nounits_needs_map() -> None:
    path = FIXTURES / "nvsmi_noheader_nounits.csv"
    with pytest.raises(UnrecognisedFormat, match="--map"):
        open_stream(path)
    mapping = parse_mapping("time=1,gpu=2,sm=3,mem=4,vram_total=5,vram_used=6")
    snaps, _, _ = load(path, mapping=mapping)
    check_valid(snaps)
    assert [s.gpus[0].sm_percent for s in snaps] == [92, 95, 86]
    assert snaps[2].gpus[0].vram_used_bytes == 25100 * MIB
    assert snaps[0].gpus[0].vram_total_bytes == 49140 * MIB


def test_nvsmi_single_column_is_utilization() -> None:
    snaps, info, _ = load(FIXTURES / "nvsmi_single_column.csv")
    assert [s.gpus[0].sm_percent for s in snaps] == [45, 47, 0, 100, 52]
    assert [s.timestamp for s in snaps] == [0, 1, 2, 3, 4]
    assert info.interval_s == 1.0 and "assumed" in info.detail
    snaps, info, _counters = load(FIXTURES / "nvsmi_single_column.csv", interval_s=0.5)
    assert [s.timestamp for s in snaps] == [0, 0.5, 1.0, 1.5, 2.0]
    # The guess can be overridden: the column is memory-access % after all.
    snaps, _, _ = load(FIXTURES / "nvsmi_single_column.csv", mapping={"mem": "1"})
    assert snaps[0].gpus[0].sm_percent is None and snaps[0].gpus[0].memory_access_percent == 45


def test_nvsmi_no_timestamps_multi_gpu_repeated_header() -> None:
    snaps, info, counters = load(FIXTURES / "nvsmi_no_timestamp_4gpu.csv", interval_s=2.0)
    check_valid(snaps)
    assert len(snaps) == 3 and info.gpu_count == 4 and counters.bad_lines == 0
    assert [g.sm_percent for g in snaps[2].gpus] == [92, 82, 72, 12]
    assert [s.timestamp for s in snaps] == [0, 2, 4]


@pytest.mark.parametrize("name", ["nvsmi_crlf_bom.csv", "nvsmi_crlf_bom.csv.gz", "nvsmi_utf16.csv"])
def test_crlf_bom_gzip_utf16(name: str) -> None:
    snaps, info, counters = load(FIXTURES / name)
    check_valid(snaps)
    assert info.format == "nvidia-smi-csv" and counters.bad_lines == 0
    assert [s.gpus[0].sm_percent for s in snaps] == [81, 82, 78]
    # memory.used is queried twice in this (real-world) command: the first counts.
    assert snaps[0].gpus[0].vram_used_bytes == 5959 * MIB
    assert snaps[0].gpus[0].name == "NVIDIA GeForce RTX 3080 Ti"


def test_dmon_pucvmet() -> None:
    snaps, info, _counters = load(FIXTURES / "dmon_pucvmet.log")
    check_valid(snaps)
    assert info.format == "nvidia-smi-dmon" and len(snaps) == 2
    g0, g1 = snaps[0].gpus
    assert (g0.sm_percent, g0.memory_access_percent, g0.power_watts, g0.temperature_c) == (
        97,
        60,
        310,
        61,
    )
    assert g0.vram_used_bytes == 40960 * MIB and g0.vram_total_bytes is None
    assert g0.pcie_rx_bytes_per_s == 1200 * MIB and g0.pcie_tx_bytes_per_s == 300 * MIB
    assert g1.pcie_rx_bytes_per_s is None  # "-"
    assert g1.throttle_reasons == ("sw_power_cap",)  # pviol 12 %
    assert snaps[1].gpus[0].throttle_reasons == ("sw_thermal",)  # tviol 1
    assert g0.sm_clock_mhz == 1410
    assert METRIC_PCIE not in info.missing
    assert "no timestamps" in info.detail


def test_dmon_u_with_dashes() -> None:
    snaps, info, _counters = load(FIXTURES / "dmon_u.log")
    assert [s.gpus[0].sm_percent for s in snaps] == [12, 85, None, 90]
    assert METRIC_VRAM in info.missing


def test_dmon_date_time_repeated_header_and_bad_line() -> None:
    snaps, info, counters = load(FIXTURES / "dmon_dt.log")
    check_valid(snaps)
    assert len(snaps) == 3 and info.gpu_count == 2
    assert info.interval_s == 2.0
    assert snaps[1].timestamp - snaps[0].timestamp == 2.0
    assert counters.bad_lines == 1 and counters.first_bad_line == 11


def test_wandb_newer_keys() -> None:
    snaps, info, counters = load(FIXTURES / "wandb_new_keys.jsonl")
    check_valid(snaps)
    assert len(snaps) == 3 and info.gpu_count == 2
    assert counters.first_bad_line == 3
    g0, g1 = snaps[0].gpus
    assert g0.vram_used_bytes == 12 * 2**30 and g0.vram_total_bytes == 24 * 2**30
    assert g1.vram_total_bytes == 24 * 2**30  # 6 GiB is 25 %
    assert (g0.power_limit_watts, g0.sm_clock_mhz) == (300, 1800)
    assert snaps[0].host.cpu_percent_per_core == (100.0, 5.0)
    assert METRIC_HOST_CPU not in info.missing and METRIC_VRAM not in info.missing


def test_generic_csv_units_iso_times_trailing_commas() -> None:
    snaps, info, _counters = load(FIXTURES / "generic_gb_iso.csv")
    check_valid(snaps)
    assert [s.gpus[0].sm_percent for s in snaps] == [55, 60, 65]
    assert snaps[0].gpus[0].vram_used_bytes == round(10.5 * 2**30)
    assert snaps[0].gpus[0].vram_total_bytes == 24 * 2**30
    assert snaps[0].gpus[0].memory_access_percent == 20
    assert snaps[0].timestamp == 1736935200.0  # 2025-01-15T10:00:00Z
    assert info.interval_s == 5.0


def test_generic_csv_quoted_newlines_and_semicolons() -> None:
    snaps, _info, counters = load(FIXTURES / "generic_quoted.csv")
    assert counters.bad_lines == 0
    assert [s.gpus[0].sm_percent for s in snaps] == [10, 90, 95]
    assert snaps[1].gpus[0].vram_used_bytes == 2048 * MIB


def test_generic_csv_map_by_name() -> None:
    with pytest.raises(UnrecognisedFormat) as exc:
        open_stream(FIXTURES / "generic_unknown_columns.csv")
    for fmt in FORMATS:
        assert f"{fmt}:" in str(exc.value)
    mapping = {"time": "step", "sm": "lr"}
    snaps, _, _ = load(FIXTURES / "generic_unknown_columns.csv", mapping=mapping)
    assert snaps[0].gpus[0].sm_percent == 0.001


def test_bad_inputs() -> None:
    with pytest.raises(UnrecognisedFormat, match="empty file"):
        open_stream(FIXTURES / "bad_empty.csv")
    with pytest.raises(UnrecognisedFormat, match="binary"):
        open_stream(FIXTURES / "bad_garbage.bin")
    snaps, _info, counters = load(FIXTURES / "bad_truncated.csv")
    assert len(snaps) == 2 and counters.bad_lines == 1 and counters.first_bad_line == 4
    assert "fields" in (counters.first_bad_reason or "")


def test_forced_format_and_unknown_format() -> None:
    with pytest.raises(UnrecognisedFormat, match="nvidia-smi-dmon"):
        open_stream(FIXTURES / "nvsmi_full_2gpu.csv", format="nvidia-smi-dmon")
    with pytest.raises(UnrecognisedFormat, match="choose one of"):
        open_stream(FIXTURES / "nvsmi_full_2gpu.csv", format="excel")
    _, info, _counters = load(FIXTURES / "nvsmi_full_2gpu.csv", format="nvidia-smi-csv")
    assert info.format == "nvidia-smi-csv"


def test_mapping_parse_errors() -> None:
    assert parse_mapping("sm=gpu util, vram_used=mem[GB]") == {
        "sm": "gpu util",
        "vram_used": "mem[GB]",
    }
    with pytest.raises(MappingError):
        parse_mapping("bogus=1")
    with pytest.raises(MappingError):
        parse_mapping("sm")


def test_recording_is_delegated() -> None:
    _, info, _counters = load(FIXTURES / "recording_header_only.jsonl")
    assert info.format == "recording"


def test_backwards_clock_is_stitched(tmp_path: Path) -> None:
    path = tmp_path / "dst.csv"
    path.write_text(
        "timestamp,gpu_util\n100000000,10\n100000001,20\n99996402,30\n99996403,40\n"
    )  # clock falls back an hour (DST) mid-log
    snaps, _info, counters = load(path)
    assert [s.timestamp for s in snaps] == [100000000, 100000001, 100000002, 100000003]
    assert counters.found["clock_jumps_back"] == 1


def test_two_passes_and_context_manager() -> None:
    stream = open_stream(FIXTURES / "dmon_dt.log")
    assert len(list(stream)) == len(list(stream)) == 3
    assert stream.counters.bad_lines == 1
    stream.close()


# --- fuzzing -----------------------------------------------------------------

VALID = [
    "nvsmi_full_2gpu.csv",
    "nvsmi_noheader_units.csv",
    "nvsmi_single_column.csv",
    "dmon_pucvmet.log",
    "dmon_dt.log",
    "wandb_new_keys.jsonl",
    "generic_gb_iso.csv",
    "generic_quoted.csv",
    "nvsmi_table_separators.log",
    "nvsmi_table_mig.log",
    "nvsmi_q_two_dumps.log",
    "nvsmi_q_x.xml",
    "nvsmi_q_d_utilization.log",
    "pmon_dt.log",
    "dcgmi_dmon.log",
    "gpustat.jsonl",
    "gpustat.log",
]


def _import_any(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "input"
        path.write_bytes(data)
        try:
            snaps, _, _ = load(path)
        except UnrecognisedFormat:
            return
        check_valid(snaps)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
def test_fuzz_random_bytes(data: bytes) -> None:
    _import_any(data)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray((FIXTURES / draw(st.sampled_from(VALID))).read_bytes())
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["delete", "insert", "truncate", "replace"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "delete" and data:
            del data[pos : pos + draw(st.integers(1, 20))]
        elif op == "insert":
            data[pos:pos] = draw(st.sampled_from([b",", b'"', b"\n", b"\r\n", b"-", b"#", b"{"]))
        elif op == "truncate":
            del data[pos:]
        else:
            data[pos : pos + 1] = draw(st.binary(min_size=1, max_size=3))
    return bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_fuzz_mutations_of_valid_files(data: bytes) -> None:
    _import_any(data)
    _import_any(gzip.compress(data)[: max(10, len(data) // 2)])  # truncated gzip too


gpu_metrics = st.fixed_dictionaries(
    {
        "sm": st.integers(0, 100),
        "mem": st.integers(0, 100),
        "total": st.integers(1024, 200_000),
        "used_frac": st.floats(0, 1),
        "power": st.one_of(st.none(), st.floats(10, 700).map(lambda x: round(x, 2))),
    }
)


@settings(max_examples=40, deadline=None)
@given(
    ticks=st.lists(st.lists(gpu_metrics, min_size=1, max_size=4), min_size=1, max_size=12),
    header=st.booleans(),
    units=st.booleans(),
    start=st.integers(1_500_000_000, 1_900_000_000),
)
def test_round_trip_nvidia_smi_csv(
    ticks: list[list[dict[str, Any]]], header: bool, units: bool, start: int
) -> None:
    n_gpus = len(ticks[0])
    ticks = [t[:n_gpus] + ticks[0][len(t) :] for t in ticks]  # same GPU count every tick

    def u(value: object, unit: str) -> str:
        return f"{value} {unit}" if units else str(value)

    lines = []
    if header:
        names = ["timestamp", "index", "name", "utilization.gpu", "utilization.memory"]
        names += ["memory.total", "memory.used", "power.draw"]
        suffix = ["", "", "", " [%]", " [%]", " [MiB]", " [MiB]", " [W]"]
        lines.append(
            ", ".join(n + (s if units else "") for n, s in zip(names, suffix, strict=True))
        )
    for k, tick in enumerate(ticks):
        stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(start + k)) + ".000"
        for i, g in enumerate(tick):
            used = int(g["total"] * g["used_frac"])
            power = "[N/A]" if g["power"] is None else u(f"{g['power']:.2f}", "W")
            lines.append(
                f"{stamp}, {i}, NVIDIA H100, {u(g['sm'], '%')}, {u(g['mem'], '%')}, "
                f"{u(g['total'], 'MiB')}, {u(used, 'MiB')}, {power}"
            )
    mapping = None
    if not header and not units:
        mapping = parse_mapping("time=1,gpu=2,sm=4,mem=5,vram_total=6,vram_used=7,power=8")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "gpu.csv"
        path.write_text("\n".join(lines) + "\n")
        if not header and units and any(g["power"] is None for t in ticks for g in t):
            mapping = None  # inference copes with [N/A] cells
        snaps, info, _counters = load(path, mapping=mapping)
    check_valid(snaps)
    assert len(snaps) == len(ticks)
    assert info.gpu_count == n_gpus
    for k, (snap, tick) in enumerate(zip(snaps, ticks, strict=True)):
        assert snap.timestamp == pytest.approx(start + k)
        for gpu, want in zip(snap.gpus, tick, strict=True):
            assert gpu.sm_percent == want["sm"] and gpu.memory_access_percent == want["mem"]
            assert gpu.vram_total_bytes == want["total"] * MIB
            assert gpu.vram_used_bytes == int(want["total"] * want["used_frac"]) * MIB
            if want["power"] is None:
                assert gpu.power_watts is None
            else:
                assert gpu.power_watts == pytest.approx(want["power"])


# --- streaming ---------------------------------------------------------------


def test_streaming_memory_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    pad = "x" * 900  # an unmapped wide column makes the file big without slowing the test
    rng = random.Random(1)
    with open(path, "w") as f:
        f.write("timestamp, index, utilization.gpu [%], memory.used [MiB], vbios_version\n")
        for k in range(8000):
            stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(1_700_000_000 + k))
            for i in range(2):
                f.write(
                    f"{stamp}.000, {i}, {rng.randrange(101)} %, {rng.randrange(9999)} MiB, {pad}\n"
                )
    size = path.stat().st_size
    assert size > 14_000_000
    tracemalloc.start()
    try:
        stream = open_stream(path)
        count = sum(1 for _ in stream)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 8000
    assert peak < size / 10, (peak, size)
