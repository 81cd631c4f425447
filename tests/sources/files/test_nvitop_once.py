"""Logs of ``nvitop -1`` (``nvitop --once``) outputs appended by a shell loop.

The fixture is real nvitop 1.7.2 output (on the project's fake NVML: see the fixtures'
README). Expected figures are read from it here with regexes of their own, not with the
reader's parser: the outputs split at nvitop's date lines, each GPU by its values row,
each process by its row of the Processes box."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from nvitop.tui.library.libcurses import CursesShortcuts

from tests.support.cli import run_cli
from tests.support.logs import date_blocks
from tests.support.logs import read_log as load
from tests.support.paths import FIXTURES

FIXTURE = FIXTURES / "import" / "nvitop_once.log"
GIB = 2**30
MIB = 2**20
DATE = re.compile(r"^\w{3} (\w{3}) (\d\d) (\d\d):(\d\d):(\d\d) (\d{4})$", re.MULTILINE)
VALUES = re.compile(
    r"^│ (N/A|\d+%)\s+(\d+)C\s+(P\d+)\s+(\d+)W / (\d+)W │\s+([\d.]+)GiB / ([\d.]+)GiB │"
    r"\s+(\d+)%",
    re.MULTILINE,
)
NAME = re.compile(r"^│\s+(\d)  (H100[^│]*?)\s+On │(.*)$", re.MULTILINE)
PROCESS = re.compile(
    r"^│\s+(\d)\s+(\d+) C\s+(\S+)\s+([\d.]+)GiB\s+(\d+)\s+(\d+)\s+([\d.]+)\s+[\d.]+\s+\S+"
    r"  (.+?)\s*│$",
    re.MULTILINE,
)
CPU = re.compile(r"^\[ CPU: \S* ([\d.]+)%", re.MULTILINE)
LOAD = re.compile(r"Load Average:\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")




def outputs(text: str) -> list[tuple[float, str]]:
    """(time of nvitop's date line, the text of its output) for each output."""
    return date_blocks(text, DATE)


def test_each_output_is_one_snapshot_timed_by_its_date_line_with_every_gpu_value() -> None:
    snaps, info, counters = load(FIXTURE)
    expected = outputs(FIXTURE.read_text(encoding="utf-8"))
    assert info.format == "nvitop" and info.gpu_count == 2
    assert len(expected) == 4 and len(snaps) == 4
    assert counters.bad_lines == 0
    assert info.interval_s == 3.0
    for snap, (stamp, text) in zip(snaps, expected, strict=True):
        assert snap.timestamp == stamp
        assert snap.driver_version == "550.54.15" and snap.cuda_driver_version == "12.4"
        values = VALUES.findall(text)
        names = NAME.findall(text)
        assert len(values) == len(snap.gpus) == 2
        for gpu, (_fan, temp, _perf, power, cap, used, total, util), (index, name, rest) in zip(
            snap.gpus, values, names, strict=True
        ):
            assert gpu.index == int(index) and gpu.name == name
            assert gpu.sm_percent == float(util)
            assert gpu.temperature_c == float(temp)
            assert gpu.power_watts == float(power) and gpu.power_limit_watts == float(cap)
            assert gpu.vram_used_bytes == round(float(used) * GIB)
            assert gpu.vram_total_bytes == round(float(total) * GIB)
            bandwidth = re.search(r"MBW: \S* (\d+)%", rest)
            expected_mbw = float(bandwidth.group(1)) if bandwidth else None
            assert gpu.memory_access_percent == expected_mbw
        load_average = LOAD.search(text)
        assert load_average is not None
        assert snap.host.load_average == tuple(float(x) for x in load_average.groups())
        assert snap.host.hostname == "vm" and snap.host.cpu_percent_per_core == ()
        used = re.search(r"^\[ MEM: .*USED: ([\d.]+)GiB \]", text, re.MULTILINE)
        assert used is not None
        assert snap.host.memory_used_bytes == round(float(used.group(1)) * GIB)
    # Only the 160-column output drew the MBW bars.
    assert [any(g.memory_access_percent is not None for g in s.gpus) for s in snaps] == [
        False,
        False,
        False,
        True,
    ]


def test_processes_keep_pid_gpu_user_memory_sm_and_the_command() -> None:
    snaps, _info, _counters = load(FIXTURE)
    expected = outputs(FIXTURE.read_text(encoding="utf-8"))
    for snap, (_stamp, text) in zip(snaps, expected, strict=True):
        rows = PROCESS.findall(text)
        assert len(rows) == len(snap.processes) == 3
        for proc, (gpu, pid, user, mem, sm, gmbw, cpu, command) in zip(
            snap.processes, rows, strict=True
        ):
            assert (proc.gpu_index, proc.pid, proc.user) == (int(gpu), int(pid), user)
            assert proc.vram_bytes == round(float(mem) * GIB)
            assert proc.sm_percent == float(sm)
            assert proc.memory_access_percent == float(gmbw)
            assert proc.cpu_percent == float(cpu)
            assert proc.command == command
            program = command.split()[0]
            cut = " " not in command and command.endswith("..")  # cut in its first word
            assert proc.name == (command if cut else program.rsplit("/", 1)[-1])
    # The widest output shows whole command lines, the 80-column ones cut them.
    assert snaps[-1].processes[0].command.endswith("train.py --lr 3e-4")
    assert snaps[0].processes[0].command.endswith("..")
    assert snaps[0].processes[0].name == "/root/.pyenv/v.."
    assert snaps[-1].processes[0].name == "python3"


def test_fan_perf_state_and_host_cpu_are_summarised_in_the_header() -> None:
    _snaps, info, counters = load(FIXTURE)
    text = FIXTURE.read_text(encoding="utf-8")
    fans = [float(f[:-1]) for f, *_ in VALUES.findall(text)[1::2]]  # GPU 1's rows
    cpu = [float(x) for x in CPU.findall(text)]
    assert counters.found["fan_percent_peak"] == {"1": max(fans)}
    assert counters.found["perf_states"] == {"0": {"P0": 4}, "1": {"P0": 4}}
    summary = counters.found["system_cpu_percent"]
    assert isinstance(summary, dict)
    assert summary["all"]["n"] == 4
    assert summary["all"]["mean"] == pytest.approx(sum(cpu) / len(cpu))
    assert (summary["all"]["min"], summary["all"]["max"]) == (min(cpu), max(cpu))
    assert "host_cpu" in info.missing and "system_cpu_percent" in info.detail


def test_an_output_cut_short_is_one_bad_record_at_its_date_line_and_the_rest_kept(
    tmp_path: Path,
) -> None:
    """nvitop_once.log with its third output cut in the Processes box, the fourth's
    separator glued onto the cut line, and the whole file cut in the last GPU box."""
    lines = FIXTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    third = next(i for i, line in enumerate(lines) if line.startswith("=") and i > 50)
    fourth = next(i for i, line in enumerate(lines) if line.startswith("=") and i > third + 1)
    cut_at = fourth - 4  # the second process row of the third output
    damaged = [*lines[: cut_at - 1], lines[cut_at - 1][:30], *lines[fourth:]]
    last_gpu_box = max(i for i, line in enumerate(damaged) if line.startswith("│   1  H100"))
    damaged = damaged[: last_gpu_box + 1]
    path = tmp_path / "gpu.log"
    path.write_text("".join(damaged), encoding="utf-8")
    snaps, info, counters = load(path)
    assert info.format == "nvitop"
    assert len(snaps) == 2  # the first two outputs, whole
    assert counters.bad_lines == 2
    assert counters.first_bad_line == third + 2  # nvitop's date line of the third output
    assert counters.first_bad_reason is not None
    assert "cut short" in counters.first_bad_reason
    assert "Processes box" in counters.first_bad_reason
    done = run_cli("report", str(path))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_a_damaged_value_is_a_bad_line_and_the_output_kept(tmp_path: Path) -> None:
    text = FIXTURE.read_text(encoding="utf-8").replace("51C", "5xC", 1)
    path = tmp_path / "gpu.log"
    path.write_text(text, encoding="utf-8")
    snaps, _info, counters = load(path)
    assert len(snaps) == 4
    assert snaps[0].gpus[0].temperature_c is None
    line = text.splitlines().index(next(x for x in text.splitlines() if "5xC" in x)) + 1
    assert counters.bad_lines == 1 and counters.first_bad_line == line
    assert counters.first_bad_reason == "GPU 0: not a number: '5xC'"


def test_ascii_output_reads_the_same(tmp_path: Path) -> None:
    """``nvitop -1 --ascii``: nvitop's own translation of its box drawing."""
    text = FIXTURE.read_text(encoding="utf-8")
    path = tmp_path / "gpu.log"
    path.write_text(text.translate(CursesShortcuts.ASCII_TRANSTABLE), encoding="utf-8")
    snaps, info, _counters = load(path)
    plain, _plain_info, _ = load(FIXTURE)
    assert info.format == "nvitop"
    assert [s.gpus for s in snaps] == [s.gpus for s in plain]
    assert [s.processes for s in snaps] == [s.processes for s in plain]


def test_commands_from_the_file_reach_the_terminal_escaped(tmp_path: Path) -> None:
    text = FIXTURE.read_text(encoding="utf-8").replace(
        "/root/.pyenv/v..", "\x1b]0;owned\x07\x1b[2Jx", 1
    )
    path = tmp_path / "gpu.log"
    path.write_text(text, encoding="utf-8")
    snaps, _info, _counters = load(path)
    assert snaps[0].processes[0].command.startswith("\x1b]0;owned")  # kept as data
    done = run_cli("report", str(path), columns=200)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout


def test_nvidia_smi_tables_are_not_read_as_nvitop() -> None:
    _snaps, info, _counters = load(FIXTURES / "import" / "nvsmi_table_separators.log")
    assert info.format == "nvidia-smi-table"


IDLE_NA = FIXTURES / "import" / "nvitop_once_idle_na.log"


def test_no_processes_unknown_values_and_graphics_processes() -> None:
    """nvitop_once_idle_na.log: an output with no processes, one whose GPU reads N/A
    (no utilization, temperature or power), one of 4 GPUs whose processes on GPU 2
    have N/A GPU memory and on GPU 3 are graphics (``G``)."""
    snaps, info, counters = load(IDLE_NA)
    text = IDLE_NA.read_text(encoding="utf-8")
    expected = outputs(text)
    assert info.format == "nvitop" and counters.bad_lines == 0
    assert len(snaps) == len(expected) == 3
    assert "No running processes found" in expected[0][1] and snaps[0].processes == ()
    na_row = re.search(r"^│ N/A\s+N/A\s+P0\s+N/A / (\d+)W │", expected[1][1], re.MULTILINE)
    assert na_row is not None
    (gpu,) = snaps[1].gpus
    assert (gpu.sm_percent, gpu.temperature_c, gpu.power_watts) == (None, None, None)
    assert gpu.power_limit_watts == float(na_row.group(1))
    rows = re.findall(r"^│\s+(\d)\s+(\d+) ([CG])\s+\S+\s+(N/A|\d+MiB) ", expected[2][1], re.M)
    assert len(rows) == len(snaps[2].processes) == 12
    for proc, (gpu_index, pid, _kind, memory) in zip(snaps[2].processes, rows, strict=True):
        assert (proc.gpu_index, proc.pid) == (int(gpu_index), int(pid))
        assert proc.vram_bytes == (None if memory == "N/A" else int(memory[:-3]) * MIB)
    assert counters.found["perf_states"] == {
        "0": {"P0": 3},
        "1": {"P0": 2},
        "2": {"P0": 1},
        "3": {"P0": 1},
    }


def test_force_color_output_reads_as_the_plain_one() -> None:
    """nvitop_once_color.log: ``nvitop -1 --force-color``, round 0 of nvitop_once.log's
    loop; the same values as that fixture's first output (but for the host lines)."""
    path = FIXTURES / "import" / "nvitop_once_color.log"
    assert "\x1b[" in path.read_text(encoding="utf-8")
    snaps, info, counters = load(path)
    plain, _info, _counters = load(FIXTURE)
    assert info.format == "nvitop" and counters.bad_lines == 0
    (snap,) = snaps
    assert snap.gpus == plain[0].gpus
    assert [(p.pid, p.gpu_index, p.vram_bytes, p.sm_percent, p.user) for p in snap.processes] == [
        (p.pid, p.gpu_index, p.vram_bytes, p.sm_percent, p.user) for p in plain[0].processes
    ]
    assert snap.host.hostname == "vm" and snap.host.load_average is not None
    assert counters.found["system_cpu_percent"]["all"]["n"] == 1  # type: ignore[index]
