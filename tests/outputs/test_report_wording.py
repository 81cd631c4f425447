"""Issue 23 item 10: what a person reads in a report -- one duration style, an
episode's mean and range rather than its first tick, and unknown never as zero."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.outputs.report.model import FindingTime
from gputop_hints.outputs.report.render import _finding_block
from gputop_hints.units import duration_text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (2.5, "2.5 s"),
        (45, "45 s"),
        (294, "4 min 54 s"),
        (1440 * 60, "1 d"),
        (7500, "2 h 05 min"),
        (119.9 * 60, "2 h"),
        (3 * 86400 + 4 * 3600, "3 d 4 h"),
        (7587.47 * 3600, "316 d 3 h"),
        (None, "n/a"),
    ],
)
def test_durations_read_as_a_person_writes_them(seconds: float | None, text: str) -> None:
    assert duration_text(seconds) == text


def _finding(sm: float) -> Finding:
    return Finding(
        rule="low-utilization",
        subject=Subject(0),
        severity=Severity.WARNING,
        label="low util",
        summary=f"GPU 0 runs kernels {sm:.0f} % of the time.",
        advice=(),
        evidence=(
            Evidence("SM % (mean)", sm, "< 50"),
            Evidence("host cores busy (mean)", None, "for context", "%", Scope.HOST, met=None),
        ),
    )


def test_a_finding_states_its_episodes_mean_and_range_not_its_first_tick() -> None:
    values = [22.0, 30.0, 41.0, 51.0, 36.0]
    ft = FindingTime(_finding(values[0]), seconds=294.0, episodes=1)
    for v in values:
        ft.add_evidence(_finding(v))
    text = "\n".join(_finding_block(ft, 50.0, 200))
    mean = sum(values) / len(values)
    assert f"SM % (mean): mean {mean:.0f} %, range {min(values):.0f} %-{max(values):.0f} %" in text
    assert "4 min 54 s" in text
    assert "as first shown: GPU 0 runs kernels 22 %" in text
    assert "host cores busy (mean): n/a" in text


def _gpu_only_log(path: Path, dated: bool) -> None:
    t0 = 1764670000
    head = "timestamp, " if dated else ""
    lines = [head + "index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    for i in range(720):  # an hour at 5 s, low utilization
        stamp = time.strftime("%Y/%m/%d %H:%M:%S.000, ", time.gmtime(t0 + 5 * i)) if dated else ""
        lines.append(f"{stamp}0, {(i * 7) % 30} %, 30000 MiB, 81559 MiB")
    path.write_text("\n".join(lines) + "\n")


def _report(log: Path, *options: str) -> str:
    env = dict(os.environ, COLUMNS="200")
    env.pop("GPUTOP_HINTS_CONFIG", None)
    result = subprocess.run(
        [sys.executable, "-m", "gputop_hints", "report", *options, str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_gpu_only_log_never_prints_unknown_as_zero(tmp_path: Path) -> None:
    log = tmp_path / "gpu.csv"
    _gpu_only_log(log, dated=True)
    text = _report(log)
    assert "low-utilization" in text
    assert "(of 0)" not in text and "0 cores" not in text
    assert "host cores busy (mean): n/a" in text
    # Durations in the one style: no decimals of minutes or hours.
    assert not re.search(r"\d+\.\d+ (min|h)\b", text)
    assert "(1 h)" in text


def test_a_log_without_timestamps_shows_elapsed_time_not_1970(tmp_path: Path) -> None:
    log = tmp_path / "gpu.csv"
    _gpu_only_log(log, dated=False)
    text = _report(log)
    assert "1970" not in text
    assert "+0:00:00" in text
    # The spacing is the reader's guess there, and the report says so.
    assert "samples every 1 s (assumed: the file does not say; give --interval)" in text
    given = _report(log, "--interval", "5")
    assert "samples every 5 s\n" in given and "assumed" not in given.splitlines()[1]
    dated = tmp_path / "dated.csv"
    _gpu_only_log(dated, dated=True)
    assert "assumed" not in _report(dated).splitlines()[1]
