"""The command line as a user meets it: help, version, --once, --json, errors and exit codes.

Everything runs the real entry point in a subprocess (``python -m gputop_hints``),
with no terminal attached -- the way a batch job or a pipe runs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gputop_hints import __version__
from gputop_hints.sources.demo import list_scenarios


def run(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.pop("GPUTOP_HINTS_CONFIG", None)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "gputop_hints", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"gputop-hints {__version__}"


def test_help_names_what_a_newcomer_needs() -> None:
    result = run("--help")
    assert result.returncode == 0
    for needle in ("--demo", "--once", "--json", "--interval", "--require-gpu", "srun", "q quit"):
        assert needle in result.stdout


def test_list_scenarios_lists_every_scenario_and_marks_the_default() -> None:
    result = run("--list-scenarios")
    assert result.returncode == 0
    for info in list_scenarios():
        assert info.name in result.stdout
    assert "(default)" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--interval", "0.1"), "0.25-60"),
        (("--interval", "abc"), "not a number"),
        (("--demo", "no-such-scenario"), "no-such-scenario"),
        (("--gpus", "4"), "only apply to --demo"),
        (("--demo", "--gpus", "9"), "outside 1-8"),
        (("--window", "1", "--interval", "1"), "at least two samples"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(args: tuple[str, ...], message: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_require_gpu_without_a_driver_exits_2_and_says_why() -> None:
    result = run("--require-gpu", "--once")
    assert result.returncode == 2
    assert "NVML" in result.stderr
    assert result.stdout == ""


def test_without_a_driver_once_reports_cpu_only_mode() -> None:
    result = run("--once", "--duration", "1")
    assert result.returncode == 0, result.stderr
    assert "No GPU panels" in result.stdout
    assert "--demo" in result.stdout
    assert "CPU" in result.stdout


def test_no_terminal_falls_back_to_the_one_off_summary() -> None:
    result = run("--demo", "--duration", "1")
    assert result.returncode == 0, result.stderr
    assert "not a terminal" in result.stderr
    assert "GPU 0" in result.stdout


def test_once_samples_for_the_duration_asked_even_below_the_interval() -> None:
    """``--once --duration 0.5`` took two samples a whole default interval (1 s) apart;
    now they are the half second asked apart, and the costs cover that half second."""
    data = _json("--demo", "--once", "--json", "--duration", "0.5")
    assert data["sampling"]["samples"] == 2
    assert data["sampling"]["interval_s"] == 0.5
    assert data["sampling"]["duration_s"] == 0.5  # the demo's simulated clock
    costs = data["costs"]
    assert costs["gpu_hours"] == pytest.approx(4 * 2 * 0.5 / 3600)  # 4 GPUs, 2 ticks
    assert costs["lost_gpu_hours"] > 0  # the mixed demo wastes GPU time from the start


def test_once_text_for_the_starved_demo_reads_like_a_report() -> None:
    result = run("--demo", "starved-loader", "--once")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "source: DEMO" in out
    assert "GPU 0" in out and "SM" in out and "VRAM" in out and "PCIe" in out
    assert "python train.py" in out
    assert "num_workers=" in out  # the hint and its advice
    assert "\x1b[" not in out  # plain text: no escape sequences in a batch log


def _json(*args: str) -> dict[str, Any]:
    result = run(*args)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert isinstance(data, dict)
    return data


def test_json_document_has_every_field_of_the_model() -> None:
    doc = _json("--once", "--json", "--demo", "starved-loader")
    assert doc["schema_version"] == 1
    assert doc["source"] == "demo"
    assert doc["sampling"]["samples"] == 3
    for key in (
        "hostname",
        "cpu_percent_per_core",
        "allowed_cores",
        "iowait_percent",
        "memory_used_bytes",
        "memory_total_bytes",
        "load_average",
        "stats",
    ):
        assert key in doc["host"], key
    gpu = doc["gpus"][0]
    for key in (
        "index",
        "name",
        "uuid",
        "sm_percent",
        "memory_access_percent",
        "vram_used_bytes",
        "vram_total_bytes",
        "pcie_rx_bytes_per_s",
        "pcie_tx_bytes_per_s",
        "pcie_generation",
        "pcie_width",
        "pcie_link_bytes_per_s",
        "temperature_c",
        "power_watts",
        "power_limit_watts",
        "sm_clock_mhz",
        "max_sm_clock_mhz",
        "throttle_reasons",
        "sm_samples",
        "stats",
    ):
        assert key in gpu, key
    assert 0 <= gpu["stats"]["sm_percent"]["mean"] <= 100
    proc = doc["processes"][0]
    for key in (
        "pid",
        "gpu_index",
        "vram_bytes",
        "sm_percent",
        "cpu_percent",
        "workers",
        "workers_cpu_percent",
        "rss_bytes",
        "state",
        "user",
        "command",
    ):
        assert key in proc, key
    # num_workers=0: the main process is pegged and there are no workers.
    assert proc["cpu_percent"] > 85
    assert proc["workers"] == []
    rules = {(f["rule"], f["subtype"]) for f in doc["findings"]}
    assert ("input-starved", "num-workers-0") in rules


def test_json_keeps_unknown_values_null_not_zero() -> None:
    doc = _json("--once", "--json", "--demo", "starved-no-process-util")
    assert doc["processes"][0]["sm_percent"] is None
    starved = [f for f in doc["findings"] if f["rule"] == "input-starved"]
    assert starved and starved[0]["evidence_scope"] == "device"


def test_json_without_a_driver_is_valid_and_explains() -> None:
    doc = _json("--json", "--duration", "1")
    assert doc["gpus"] == []
    assert doc["processes"] == []
    assert "NVML" in doc["gpu_unavailable_reason"]
    assert len(doc["host"]["cpu_percent_per_core"]) == os.cpu_count()


def test_json_for_a_big_simulated_node() -> None:
    doc = _json("--json", "--demo", "--gpus", "8", "--processes", "64", "--duration", "1")
    assert len(doc["gpus"]) == 8
    assert len(doc["processes"]) == 64


def test_usage_names_the_subcommands_and_shared_options_may_come_first(tmp_path: Path) -> None:
    """The top-level usage lists record/replay/report/config/explain; --config before a
    subcommand is passed to it (``gputop-hints --config x.yaml config --show``)."""
    usage = subprocess.run(
        [sys.executable, "-m", "gputop_hints", "--bogus"],
        capture_output=True, text=True, timeout=30, check=False,
    )
    assert usage.returncode == 2
    assert "{record,replay,report,export,config,explain}" in usage.stderr
    config = tmp_path / "c.yaml"
    config.write_text("general:\n  window_s: 10\n")
    shown = subprocess.run(
        [sys.executable, "-m", "gputop_hints", "--config", str(config), "config", "--show"],
        capture_output=True, text=True, timeout=30, check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"in effect               {config} (--config)" in shown.stdout


def test_once_shows_each_gpus_gpm_line_where_it_profiles() -> None:
    """``--once`` names what fills the busy time where the GPU gives GPM (the demo's
    ``gpm`` scene) and its compute-bound advice points at those figures; a scene
    without profiling shows no such line and keeps pointing at DCGM."""
    result = run("--once", "--demo", "gpm")
    assert result.returncode == 0, result.stderr
    gpm = re.findall(
        r"^   GPM SM active +(\d+)% \(\d+%\) +occupancy +(\d+)% \(\d+%\) +tensor +(\d+)% "
        r"\(\d+%\) +DRAM bw +(\d+)% \(\d+%\)$",
        result.stdout,
        re.M,
    )
    assert len(gpm) == 4, result.stdout
    doc = _json("--once", "--json", "--demo", "gpm")
    for (active, occupancy, tensor, dram), gpu in zip(gpm, doc["gpus"], strict=True):
        assert int(active) == round(gpu["sm_active_percent"])
        assert int(tensor) == round(gpu["tensor_active_percent"])
        assert 0 <= int(occupancy) <= 100 and 0 <= int(dram) <= 100
    assert "GPM shows how full: SMs active" in result.stdout
    plain = run("--once", "--demo", "healthy")
    assert plain.returncode == 0, plain.stderr
    assert "GPM" not in plain.stdout and "DCGM's sm_occupancy" in plain.stdout
