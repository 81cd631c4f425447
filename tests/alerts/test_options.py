"""Bad ``--notify`` values and ``notify:`` sections: a clear message naming the file, line
and key, and exit 2 -- before anything is recorded."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import run_cli


def record(tmp_path: Path, *args: str):
    return run_cli("record", "-o", str(tmp_path / "run.jsonl"), "--demo", "--duration", "5", *args)


def test_an_unknown_channel_exits_2(tmp_path: Path) -> None:
    result = record(tmp_path, "--notify", "bell,slack")
    assert result.returncode == 2
    assert "unknown notify channel 'slack' (choose from bell, osc, cmd)" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run.jsonl").exists()


def test_cmd_without_a_command_exits_2(tmp_path: Path) -> None:
    result = run_cli("--demo", "--once", "--notify", "cmd")
    assert result.returncode == 2
    assert "the cmd channel needs a command: --notify-cmd CMD" in result.stderr


def test_an_unbalanced_command_exits_2(tmp_path: Path) -> None:
    result = record(tmp_path, "--notify-cmd", "curl 'https://x")
    assert result.returncode == 2
    assert "cannot split the notify command: No closing quotation" in result.stderr


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_misspelt_key_is_named_with_its_line(tmp_path: Path) -> None:
    config = write(tmp_path, "notify:\n  channels: bell\n  max_per_minut: 3\n")
    result = record(tmp_path, "--config", str(config))
    assert result.returncode == 2
    assert (
        f"{config}:3: notify.max_per_minut: unknown key; did you mean 'notify.max_per_minute'?"
        in result.stderr
    )


def test_a_value_out_of_range_is_named_with_its_line(tmp_path: Path) -> None:
    config = write(tmp_path, "notify:\n  min_interval_s: -5\n")
    result = run_cli("--demo", "--once", "--config", str(config))
    assert result.returncode == 2
    assert f"{config}:2: notify.min_interval_s: -5 is out of range (allowed 0-86400)" in (
        result.stderr
    )


def test_a_bad_channel_in_the_file_is_named_with_its_line(tmp_path: Path) -> None:
    config = write(tmp_path, "input_starved:\n  min_gap_s: 1\nnotify:\n  channels: [bell, pager]\n")
    result = run_cli("config", "--check", str(config))
    assert result.returncode == 2
    assert f"{config}:4: notify.channels: unknown notify channel 'pager'" in result.stderr


def test_a_notify_section_leaves_the_thresholds_as_they_are(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "notify:\n  channels: [bell, osc]\n  min_severity: critical\n  clear_after_s: 30\n",
    )
    assert run_cli("config", "--check", str(config)).stdout == f"{config}: OK\n"
    result = run_cli("--demo", "--once", "--config", str(config))
    assert result.returncode == 0, result.stderr
