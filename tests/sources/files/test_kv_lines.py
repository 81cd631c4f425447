"""Training logs with GPU readings in their lines (``GPU 0: util 95% mem 31.2GB/80GB``,
``gpu_util=95%``): fixtures written in the shapes such scripts log (see
tests/fixtures/import/README.md). Expected figures come from the fixture text here,
with regexes of this test's own."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from gputop_hints.sources.files import UnrecognisedFormat, open_stream
from tests.support.cli import run_cli
from tests.support.logs import read_log
from tests.support.paths import FIXTURES

GIB = 2**30
MIB = 2**20
LOGGING = FIXTURES / "import" / "kv_logging_2gpu.log"
PAIRS = FIXTURES / "import" / "kv_pairs_1gpu.log"
_GPU_PART = re.compile(
    r"GPU (\d): util (\d+)% mem ([\d.]+)GB/([\d.]+)GB temp (\d+)C power (\d+)W/(\d+)W"
)
_STAMP = re.compile(r"^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),\d{3} ")


def _local(stamp: re.Match[str]) -> float:
    y, mo, d, h, mi, s = (int(x) for x in stamp.groups())
    return time.mktime((y, mo, d, h, mi, s, 0, 0, -1))


def test_logging_lines_give_each_named_gpu_its_readings() -> None:
    text = LOGGING.read_text().splitlines()
    expected: dict[int, list[tuple[float, float | None, int, int, float, float, float]]] = {}
    times: list[float] = []
    for line in text:
        parts = _GPU_PART.findall(line)
        if not parts:
            continue
        stamp = _STAMP.match(line)
        assert stamp is not None
        times.append(_local(stamp))
        for gpu, util, used, total, temp, power, limit in parts:
            expected.setdefault(int(gpu), []).append(
                (
                    times[-1],
                    float(util) if int(util) <= 100 else None,  # 140 %: unknown
                    round(float(used) * GIB),
                    round(float(total) * GIB),
                    float(temp),
                    float(power),
                    float(limit),
                )
            )
    impossible = sum(1 for line in text for p in _GPU_PART.findall(line) if int(p[1]) > 100)
    assert impossible == 1

    snaps, info, counters = read_log(LOGGING)

    assert info.format == "kv-lines"
    assert info.gpu_count == 2
    assert [s.timestamp for s in snaps] == times
    for index, rows in expected.items():
        got = [
            (
                s.timestamp,
                g.sm_percent,
                g.vram_used_bytes,
                g.vram_total_bytes,
                g.temperature_c,
                g.power_watts,
                g.power_limit_watts,
            )
            for s in snaps
            for g in s.gpus
            if g.index == index
        ]
        assert got == rows
    # The impossible reading counts its line bad, by name; its other readings stay.
    assert counters.bad_lines == impossible
    assert counters.first_bad_reason is not None
    assert counters.first_bad_reason.startswith("util: 140%")
    # Lines with no GPU reading (banner, losses, the CPU's, a checkpoint) are no samples.
    assert counters.found["other_lines"] == len([t for t in text if t.strip()]) - len(times)


def test_the_cpus_util_and_ram_are_never_read_as_a_gpus() -> None:
    cpu_lines = [line for line in LOGGING.read_text().splitlines() if "CPU: util" in line]
    assert cpu_lines
    snaps, _info, _counters = read_log(LOGGING)
    # No sample at a CPU line's time, and no GPU ever at the CPU's 12 % or 88 %.
    cpu_times = {_local(m) for m in (_STAMP.match(line) for line in cpu_lines) if m}
    assert not cpu_times & {s.timestamp for s in snaps}
    assert {g.sm_percent for s in snaps for g in s.gpus}.isdisjoint({12.0, 88.0})


def test_key_value_pairs_of_one_unnamed_gpu_with_the_time_as_a_pair() -> None:
    text = PAIRS.read_text()
    pairs = re.findall(r"gpu_util=(\d+)% gpu_mem_used_mb=(\d+) gpu_temp=(\d+) time=([\d.]+)", text)

    snaps, info, counters = read_log(PAIRS)

    assert info.format == "kv-lines"
    assert "read as GPU 0" in info.detail
    assert counters.bad_lines == 0
    assert [(s.timestamp, [g.index for g in s.gpus]) for s in snaps] == [
        (float(t), [0]) for *_, t in pairs
    ]
    assert [s.gpus[0].sm_percent for s in snaps] == [float(u) for u, *_ in pairs]
    assert [s.gpus[0].vram_used_bytes for s in snaps] == [int(m) * MIB for _, m, *_ in pairs]
    assert [s.gpus[0].temperature_c for s in snaps] == [float(t) for _, _, t, _ in pairs]
    # cpu_util and the host's mem_used_mb are not the GPU's.
    assert counters.found["other_lines"] == text.count("cpu_util=") + 1  # + the banner


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("GPU0: util 91% | GPU1: util 12%", {0: 91.0, 1: 12.0}),
        ("gpu=3 util=77 mem_used=1000", {3: 77.0}),
        ("cuda:1 gpu_util 64%", {1: 64.0}),
        ("gpu0_util=50 gpu1_util=60", {0: 50.0, 1: 60.0}),
        ("host util 99% | GPU 2 Load: 45%", {2: 45.0}),
        ("epoch=3 step=10 util=95%", {}),  # a bare util with no GPU named: whose?
        ("GPU: 95% | CPU: 50% | Mem: 12GB", {0: 95.0}),  # the Mem after CPU is the host's
        ("GPU0: 97%, 30112MiB", {0: 97.0}),
        ("INFO - GPU stats - utilization=93 memory_used=30112", {0: 93.0}),
    ],
)
def test_whose_reading_a_name_is(tmp_path: Path, line: str, expected: dict[int, float]) -> None:
    path = tmp_path / "run.log"
    path.write_text("".join(f"{line}\n" for _ in range(3)) + "gpu_util=1%\n" * 3)
    snaps, _info, _counters = read_log(path)
    first = {g.index: g.sm_percent for g in snaps[0].gpus}
    assert first == (expected or {0: 1.0})


def test_a_log_that_only_mentions_gpus_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(
        "Using GPU 0 and GPU 1\nEpoch 1/10 loss 2.3\nEpoch 2/10 loss 1.9\nsaved model (1.2GB)\n"
    )
    with pytest.raises(UnrecognisedFormat) as caught:
        open_stream(path)
    assert "kv-lines: 0 line(s) with a GPU reading" in str(caught.value)
    result = run_cli("report", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_report_reads_a_logging_log_end_to_end() -> None:
    result = run_cli("report", str(LOGGING))
    assert result.returncode == 0, result.stderr
    assert "GPU readings in log lines" in run_cli("report", "--json", str(LOGGING)).stdout
    rows = re.findall(r"^\s+(\d)\s+(\d+)/\d+/\d+", result.stdout, re.MULTILINE)
    means = {
        int(g): round(sum(u) / len(u))
        for g in ("0", "1")
        for u in [
            [
                int(p[1])
                for line in LOGGING.read_text().splitlines()
                for p in _GPU_PART.findall(line)
                if p[0] == g and int(p[1]) <= 100
            ]
        ]
    }
    assert {int(g): int(m) for g, m in rows} == means


def test_sizes_as_scripts_write_them(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text(
        "".join(
            f"step {k} loss 2.{k} gpu_util={90 + k}% gpu_mem {30 + k}.5G GPU Memory: 12 \n"
            for k in range(4)
        )
    )
    snaps, _info, counters = read_log(path)
    # '30.5G' is GiB (PyTorch's and most scripts' messages); a bare '12' says no unit:
    # left out, not counted bad.
    assert [s.gpus[0].vram_used_bytes for s in snaps] == [
        round((30.5 + k) * GIB) for k in range(4)
    ]
    assert counters.bad_lines == 0
