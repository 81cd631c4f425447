"""Saved dcgm-exporter ``/metrics`` scrapes (Prometheus text exposition).

Expected figures are read from the fixture here with regexes of their own, not with the
reader's parser: the scrapes split at the ``date`` lines, each sample by its name and
``gpu`` label."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gputop_hints.sources.files import open_stream
from gputop_hints.sources.files.dcgm_exporter import parse_labels
from gputop_hints.streams import UnrecognisedFormat
from tests.support.cli import run_cli
from tests.support.logs import date_blocks
from tests.support.logs import read_log as load
from tests.support.paths import FIXTURES

FIXTURE = FIXTURES / "import" / "dcgm_exporter_scrapes.log"
MIB = 2**20
DATE = re.compile(r"^\w{3} (\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) UTC (\d{4})$", re.MULTILINE)


def expected_scrapes() -> list[tuple[float, dict[tuple[str, str], float]]]:
    """(time of the date line, {(metric, gpu): value}) per scrape of the fixture."""
    return [
        (
            stamp,
            {
                (name, gpu): float(value)
                for name, gpu, value in re.findall(
                    r'^(DCGM_\w+)\{gpu="(\d)".*\} (\S+)\n', body, re.MULTILINE
                )
            },
        )
        for stamp, body in date_blocks(FIXTURE.read_text(encoding="utf-8"), DATE)
    ]


def test_scrapes_read_one_snapshot_each_timed_by_their_date_lines() -> None:
    snaps, info, _counters = load(FIXTURE)
    expected = expected_scrapes()
    assert info.format == "dcgm-exporter" and info.gpu_count == 2
    assert info.hostname == "gpu-node-17" and info.interval_s == 10
    assert [s.timestamp for s in snaps] == [t for t, _ in expected]
    for snap, (_, values) in zip(snaps, expected, strict=True):
        assert snap.driver_version == "550.54.15"
        for g in snap.gpus:

            def want(metric: str, g: object = g, values: dict = values) -> float | None:  # type: ignore[type-arg]
                return values.get((metric, str(g.index)))  # type: ignore[attr-defined]

            assert g.name == "NVIDIA A100-SXM4-80GB" and g.uuid.startswith("GPU-")  # type: ignore[union-attr]
            assert g.sm_percent == want("DCGM_FI_DEV_GPU_UTIL")
            assert g.memory_access_percent == want("DCGM_FI_DEV_MEM_COPY_UTIL")
            assert g.temperature_c == want("DCGM_FI_DEV_GPU_TEMP")
            assert g.power_watts == want("DCGM_FI_DEV_POWER_USAGE")
            assert g.sm_clock_mhz == want("DCGM_FI_DEV_SM_CLOCK")
            used, free = want("DCGM_FI_DEV_FB_USED"), want("DCGM_FI_DEV_FB_FREE")
            assert g.vram_used_bytes == (None if used is None else used * MIB)
            total = None if used is None or free is None else (used + free) * MIB
            assert g.vram_total_bytes == total
            assert g.pcie_tx_bytes_per_s == want("DCGM_FI_PROF_PCIE_TX_BYTES")
            assert g.pcie_rx_bytes_per_s == want("DCGM_FI_PROF_PCIE_RX_BYTES")
            for field, metric in (
                ("sm_active_percent", "DCGM_FI_PROF_SM_ACTIVE"),
                ("sm_occupancy_percent", "DCGM_FI_PROF_SM_OCCUPANCY"),
                ("tensor_active_percent", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
                ("dram_active_percent", "DCGM_FI_PROF_DRAM_ACTIVE"),
            ):
                ratio = want(metric)
                assert getattr(g, field) == (None if ratio is None else pytest.approx(ratio * 100))
    # DCGM's blank value for memory temperature (not supported) is no number anywhere.
    assert "9223372036854775794" in FIXTURE.read_text(encoding="utf-8")


def test_the_scrape_cut_short_keeps_what_it_holds_and_counts_the_cut_line() -> None:
    snaps, _info, counters = load(FIXTURE)
    lines = FIXTURE.read_text(encoding="utf-8").split("\n")
    assert counters.bad_lines == 1 and counters.first_bad_line == len(lines)
    assert "not a Prometheus sample" in (counters.first_bad_reason or "")
    last = snaps[-1]
    assert last.gpus[0].memory_access_percent is not None
    assert last.gpus[1].memory_access_percent is None  # its line was cut
    assert last.gpus[1].vram_used_bytes is None and last.gpus[1].sm_percent == 0


def test_pods_say_who_used_each_gpu_and_make_no_processes() -> None:
    snaps, info, counters = load(FIXTURE)
    assert info.header["pods"] == {"GPU 0": ["ml-team/llama-ft-7d9f8-0 (trainer)"]}
    assert counters.found["pods"] == info.header["pods"]
    assert "ml-team/llama-ft-7d9f8-0" in info.detail
    assert all(s.processes == () for s in snaps)


def test_an_escaped_quote_in_a_label_value() -> None:
    assert parse_labels(r'{gpu="0",err_msg="No \"Xid\" since boot",path="a\\b\nc"}') == {
        "gpu": "0",
        "err_msg": 'No "Xid" since boot',
        "path": "a\\b\nc",
    }


SAMPLE = 'DCGM_FI_DEV_GPU_UTIL{{gpu="{gpu}",UUID="GPU-{gpu}"}} {value}'


def test_bad_samples_are_counted_with_line_and_reason_and_the_rest_kept(tmp_path: Path) -> None:
    log = tmp_path / "dcgm.txt"
    rows = [
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
        SAMPLE.format(gpu=0, value=50),
        SAMPLE.format(gpu=1, value=60),
        'DCGM_FI_DEV_FB_USED{gpu="0" UUID="GPU-0"} 100',  # line 5: no comma between labels
        'DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-1"} lots',  # line 6: not a number
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0"} NaN',  # line 7
        'DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-0"} 1.7',  # line 8: a ratio over 1
        'DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-1"} 70.5',
        SAMPLE.format(gpu=0, value=55),
        SAMPLE.format(gpu=1, value=65),
    ]
    log.write_text("\n".join(rows) + "\n", encoding="utf-8")
    snaps, info, counters = load(log)
    assert info.format == "dcgm-exporter"
    assert counters.bad_lines == 4 and counters.first_bad_line == 5
    assert "malformed labels" in (counters.first_bad_reason or "")
    assert counters.found["bad_cells"] == {"DCGM_FI_PROF_SM_ACTIVE": [1, 8]}
    assert [[g.sm_percent for g in s.gpus] for s in snaps] == [[50, 60], [55, 65]]
    assert snaps[0].gpus[1].power_watts == 70.5 and snaps[0].gpus[0].power_watts is None
    assert snaps[0].gpus[0].sm_active_percent is None
    assert "no timestamps: assumed one sample every 1 s" in info.detail
    assert [s.timestamp for s in snaps] == [0, 1]


def test_the_reasons_of_each_bad_value(tmp_path: Path) -> None:
    for value, reason in (("lots", "'lots' is not a number"), ("NaN", "NaN"), ("+Inf", "infin")):
        log = tmp_path / "one.txt"
        lines = (SAMPLE.format(gpu=0, value=1), SAMPLE.format(gpu=1, value=value))
        log.write_text("\n".join(lines) + "\n", encoding="utf-8")
        _snaps, _info, counters = load(log)
        assert counters.bad_lines == 1 and counters.first_bad_line == 2
        assert reason in (counters.first_bad_reason or "")


def test_sample_timestamps_time_the_scrapes(tmp_path: Path) -> None:
    log = tmp_path / "dcgm.txt"
    base = 1_764_842_400_000
    log.write_text(
        "".join(
            f"{SAMPLE.format(gpu=g, value=10 * k + g)} {base + 5000 * k + g}\n"
            for k in range(4)
            for g in (0, 1)
        ),
        encoding="utf-8",
    )
    snaps, info, _counters = load(log)
    assert [s.timestamp for s in snaps] == [base / 1000 + 5 * k for k in range(4)]
    assert info.interval_s == 5
    snaps, info, _counters = load(log, interval_s=2)
    assert info.interval_s == 2 and "(given)" in info.detail


def test_a_help_block_again_starts_a_scrape_though_no_series_repeats(tmp_path: Path) -> None:
    # The pod on GPU 0 was replaced between the scrapes: every series is new.
    log = tmp_path / "dcgm.txt"
    help_ = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
    log.write_text(
        help_
        + 'DCGM_FI_DEV_GPU_UTIL{gpu="0",namespace="a",pod="p1"} 90\n'
        + help_
        + 'DCGM_FI_DEV_GPU_UTIL{gpu="0",namespace="a",pod="p2"} 10\n',
        encoding="utf-8",
    )
    snaps, _info, counters = load(log)
    assert [[g.sm_percent for g in s.gpus] for s in snaps] == [[90], [10]]
    assert counters.found["pods"] == {"GPU 0": ["a/p1", "a/p2"]}


def test_mig_instances_are_the_parent_gpus_instances_not_its_numbers(tmp_path: Path) -> None:
    log = tmp_path / "dcgm.txt"
    labels = 'gpu="0",UUID="GPU-a",modelName="A100"'
    mig = labels + ',GPU_I_PROFILE="3g.40gb",GPU_I_ID="{gi}"'
    log.write_text(
        f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} 50\n"
        f"DCGM_FI_DEV_GPU_UTIL{{{mig.format(gi=1)}}} 80\n"
        f"DCGM_FI_DEV_FB_USED{{{mig.format(gi=1)}}} 1000\n"
        f"DCGM_FI_DEV_FB_FREE{{{mig.format(gi=1)}}} 39000\n"
        f"DCGM_FI_DEV_FB_USED{{{mig.format(gi=2)}}} 500\n"
        f"DCGM_FI_PROF_SM_ACTIVE{{{mig.format(gi=2)}}} 0.25\n",
        encoding="utf-8",
    )
    snaps, _info, counters = load(log)
    (gpu,) = snaps[0].gpus
    assert gpu.temperature_c == 50 and gpu.sm_percent is None and gpu.vram_used_bytes is None
    assert gpu.mig_mode
    one, two = gpu.mig_instances
    assert (one.gpu_instance_id, one.profile, one.vram_used_bytes, one.vram_total_bytes) == (
        1, "3g.40gb", 1000 * MIB, 40000 * MIB,
    )  # fmt: skip
    assert (two.vram_used_bytes, two.vram_total_bytes) == (500 * MIB, None)
    assert two.sm_active_percent == 25
    assert counters.found["mig_series_skipped"] == 1  # the instance's GPU_UTIL


def test_prometheus_text_of_another_exporter_is_not_this_format(tmp_path: Path) -> None:
    log = tmp_path / "node.txt"
    log.write_text(
        "# HELP node_load1 1m load average.\n# TYPE node_load1 gauge\nnode_load1 0.5\n",
        encoding="utf-8",
    )
    with pytest.raises(UnrecognisedFormat, match="no DCGM_FI_ sample"):
        open_stream(log, format="dcgm-exporter")


def test_report_on_saved_scrapes() -> None:
    out = run_cli("report", str(FIXTURE)).stdout
    assert "gpu-node-17: 2026-12-04 10:00:00 -> 2026-12-04 10:00:20" in out
    assert "3 samples every 10 s" in out and "(DCGM profiling)" in out


def test_gpus_of_several_hosts_are_named_by_host(tmp_path: Path) -> None:
    log = tmp_path / "two-nodes.txt"
    log.write_text(
        "".join(
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",Hostname="{h}"}} {10 * n + g}\n'
            for n, h in enumerate(("n1", "n2"))
            for g in (0, 1)
        ),
        encoding="utf-8",
    )
    snaps, info, _counters = load(log)
    assert info.hostname is None and "hosts n1, n2" in info.detail
    assert [(g.index, g.node, g.name, g.sm_percent) for g in snaps[0].gpus] == [
        (0, "n1", "n1 GPU 0", 0), (1, "n1", "n1 GPU 1", 1),
        (2, "n2", "n2 GPU 0", 10), (3, "n2", "n2 GPU 1", 11),
    ]  # fmt: skip


def test_a_timestamp_that_is_no_time_is_a_bad_line_and_the_value_kept(tmp_path: Path) -> None:
    log = tmp_path / "dcgm.txt"
    log.write_text(
        f"{SAMPLE.format(gpu=0, value=5)} 99999999999999999999\n{SAMPLE.format(gpu=0, value=6)}\n",
        encoding="utf-8",
    )
    snaps, _info, counters = load(log)
    assert [s.gpus[0].sm_percent for s in snaps] == [5, 6]
    assert counters.bad_lines == 1 and "is no time" in (counters.first_bad_reason or "")


def test_reserved_framebuffer_and_the_power_limit(tmp_path: Path) -> None:
    """An L4 as dcgm-exporter writes it: 23034 MiB of framebuffer, of which the driver
    reserves 487 (DCGM_FI_DEV_FB_RESERVED): the total is used + free + reserved, 22.5
    GiB, not 22.0. The enforced power limit is the limit; the management limit where
    the exporter's CSV has only that."""
    log = tmp_path / "l4.txt"
    labels = 'gpu="0",UUID="GPU-l4",modelName="NVIDIA L4",Hostname="n1"'
    log.write_text(
        f"DCGM_FI_DEV_FB_USED{{{labels}}} 1200\n"
        f"DCGM_FI_DEV_FB_FREE{{{labels}}} 21347\n"
        f"DCGM_FI_DEV_FB_RESERVED{{{labels}}} 487\n"
        f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} 35.2\n"
        f"DCGM_FI_DEV_POWER_MGMT_LIMIT{{{labels}}} 72\n"
        f"DCGM_FI_DEV_ENFORCED_POWER_LIMIT{{{labels}}} 60\n",
        encoding="utf-8",
    )
    [gpu] = load(log)[0][0].gpus
    assert gpu.vram_total_bytes == 23034 * MIB  # 22.5 GiB
    assert gpu.vram_used_bytes == 1200 * MIB
    assert gpu.power_limit_watts == 60
    log.write_text(
        f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} 35.2\nDCGM_FI_DEV_POWER_MGMT_LIMIT{{{labels}}} 72\n",
        encoding="utf-8",
    )
    [gpu] = load(log)[0][0].gpus
    assert gpu.power_limit_watts == 72
