"""``--query-gpu`` logs of several GPUs without an index column (issue 25 item 3).

nvidia-smi prints one row per GPU per poll, in index order, each with its own
timestamp a few ms after the previous one: the polls are found from the gaps,
each poll is one snapshot, the GPUs numbered by position. Expected figures are
counted here from the rows the test wrote (or read back with a plain loop).
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gputop_hints.sources.files import open_stream
from tests.support.cli import run_cli
from tests.support.paths import FIXTURES

HEADER = "timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]"
L5_4GPU = FIXTURES / "import" / "nvsmi_noindex_4gpu_l5.csv"
"""--query-gpu=timestamp,power.draw,utilization.gpu,memory.used --format=csv -l 5,
4 GPUs, 40 polls: poll 18 lacks GPU 1's row (line 70), the last poll is cut after
two rows and a partial line."""
LMS100_8GPU_SHORT = FIXTURES / "import" / "nvsmi_noindex_8gpu_lms100_short.csv"
"""--query-gpu=timestamp,power.draw,utilization.gpu,memory.used --format=csv -lms 100,
8 GPUs, 80 polls, each poll's rows under one stamp; 52 polls short (1, 2, 4 or 5 rows)."""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=120)


def stamp(t: datetime) -> str:
    return f"{t:%Y/%m/%d %H:%M:%S}.{t.microsecond // 1000:03d}"


def write_log(
    path: Path, gpus: int, polls: int, period_ms: int, short: dict[int, int], seed: int = 3
) -> tuple[dict[int, list[int]], list[int]]:
    """An ``-lms period_ms`` log: ``short`` maps a poll to the GPU whose row is missing.
    Returns each GPU's utilizations over the full polls, and the line numbers of
    the short polls' first rows."""
    rng = random.Random(seed)
    t = datetime(2024, 5, 1, 12, 0, 0, 250000)
    lines = [HEADER]
    util: dict[int, list[int]] = {g: [] for g in range(gpus)}
    short_lines: list[int] = []
    for p in range(polls):
        s = t
        if p in short:
            short_lines.append(len(lines) + 1)
        for g in range(gpus):
            if short.get(p) == g:
                continue
            u = rng.randint(0, 100) if g % 2 else rng.randint(80, 100)
            if p not in short:
                util[g].append(u)
            lines.append(f"{stamp(s)}, {rng.uniform(60, 400):.2f} W, {u} %, {g * 1000 + 500} MiB")
            s += timedelta(milliseconds=rng.randint(1, 5))
        # nvidia-smi sleeps the period after a poll: the next one starts a bit later.
        t += timedelta(milliseconds=period_ms + rng.randint(0, 3))
    path.write_text("\n".join(lines) + "\n")
    return util, short_lines


def report_json(path: Path) -> dict[str, object]:
    result = cli("report", "--json", str(path))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def test_an_8_gpu_lms_100_log_is_read_one_poll_a_tick(tmp_path: Path) -> None:
    path = tmp_path / "node.csv"
    util, short_lines = write_log(path, 8, 300, 100, {57: 2, 211: 6})
    doc = report_json(path)
    sampling = doc["sampling"]
    assert isinstance(sampling, dict)
    assert sampling["interval_s"] == pytest.approx(0.1, abs=0.01)
    assert sampling["samples"] == 298  # 300 polls, 2 short ones dropped
    gpus = doc["gpus"]
    assert isinstance(gpus, list)
    assert [g["index"] for g in gpus] == list(range(8))
    for g in range(8):
        assert gpus[g]["sm_percent"]["mean"] == pytest.approx(statistics.mean(util[g]))
    assert gpus[3]["vram_peak_bytes"] == 3500 * 2**20
    file = doc["file"]
    assert isinstance(file, dict)
    assert file["bad_lines"] == 2
    assert file["first_bad_line"] == short_lines[0]
    assert "GPUs assigned by position within each poll" in file["detail"]
    notes = doc["notes"]
    assert isinstance(notes, list)
    assert any("GPUs assigned by position within each poll" in n and "8 rows" in n for n in notes)
    assert any(n.startswith("2 short poll(s)") for n in notes)


def test_the_text_report_says_how_the_gpus_were_assigned(tmp_path: Path) -> None:
    path = tmp_path / "node.csv"
    write_log(path, 8, 200, 100, {99: 0})
    result = cli("report", str(path))
    assert result.returncode == 0, result.stderr
    assert "200" not in result.stdout.splitlines()[1]  # not one sample a row
    assert "199 samples every 0.1" in result.stdout
    assert "nvidia-smi prints them in index order" in result.stdout
    assert "1 short poll(s)" in result.stdout


def test_the_snapshots_hold_every_gpu_of_a_poll_at_its_first_row_time(tmp_path: Path) -> None:
    path = tmp_path / "node.csv"
    write_log(path, 8, 50, 100, {})
    rows = path.read_text().splitlines()[1:]
    firsts = [r.split(",")[0] for r in rows[::8]]
    stream = open_stream(path)
    snaps = list(stream)
    stream.close()
    assert stream.info.gpu_count == 8
    assert len(snaps) == 50
    assert all([g.index for g in s.gpus] == list(range(8)) for s in snaps)
    start = datetime.strptime(firsts[0], "%Y/%m/%d %H:%M:%S.%f")
    for snap, first in zip(snaps, firsts, strict=True):
        offset = datetime.strptime(first, "%Y/%m/%d %H:%M:%S.%f") - start
        assert snap.timestamp - snaps[0].timestamp == pytest.approx(offset.total_seconds())
    assert snaps[10].gpus[5].sm_percent == float(rows[10 * 8 + 5].split(",")[2].split()[0])


def polls_of(path: Path, boundary_s: float) -> list[list[list[str]]]:
    """The file's rows cut where the time moves on by more than ``boundary_s``."""
    polls: list[list[list[str]]] = []
    last: datetime | None = None
    for line in path.read_text().splitlines()[1:]:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 4:
            continue  # the cut last line
        t = datetime.strptime(cells[0], "%Y/%m/%d %H:%M:%S.%f")
        if last is None or (t - last).total_seconds() > boundary_s:
            polls.append([])
        polls[-1].append(cells)
        last = t
    return polls


def test_a_4_gpu_l_5_log_with_a_failed_query_and_a_cut_end() -> None:
    polls = polls_of(L5_4GPU, 1.0)
    full = [p for p in polls if len(p) == 4]
    assert len(polls) - len(full) == 2  # the fixture as described
    doc = report_json(L5_4GPU)
    sampling = doc["sampling"]
    assert isinstance(sampling, dict)
    assert sampling["interval_s"] == pytest.approx(5.0, abs=0.1)
    assert sampling["samples"] == len(full)
    gpus = doc["gpus"]
    assert isinstance(gpus, list)
    assert len(gpus) == 4
    for g in range(4):
        expected = statistics.mean(float(p[g][2].split()[0]) for p in full)
        assert gpus[g]["sm_percent"]["mean"] == pytest.approx(expected)
    file = doc["file"]
    assert isinstance(file, dict)
    assert file["first_bad_line"] == 70  # the first row of the poll without GPU 1
    assert file["bad_lines"] == 3  # two short polls and the partial last line
    notes = doc["notes"]
    assert isinstance(notes, list)
    assert any(n.startswith("2 short poll(s) (fewer than 4 rows") for n in notes)
    assert any("poll period 5.0" in n for n in notes)


def test_a_single_gpu_log_without_index_is_still_one_row_a_tick(tmp_path: Path) -> None:
    path = tmp_path / "one.csv"
    util, _ = write_log(path, 1, 120, 100, {})
    doc = report_json(path)
    sampling = doc["sampling"]
    assert isinstance(sampling, dict)
    assert sampling["samples"] == 120
    assert sampling["interval_s"] == pytest.approx(0.1, abs=0.01)
    gpus = doc["gpus"]
    assert isinstance(gpus, list)
    assert len(gpus) == 1
    assert gpus[0]["sm_percent"]["mean"] == pytest.approx(statistics.mean(util[0]))
    notes = doc["notes"]
    assert isinstance(notes, list)
    assert not any("poll" in n for n in notes)


@pytest.mark.parametrize(
    ("gpus", "period_ms", "header"), [(2, 1000, True), (8, 100, False), (16, 5000, True)]
)
def test_other_shapes_of_polled_logs(
    tmp_path: Path, gpus: int, period_ms: int, header: bool
) -> None:
    path = tmp_path / "node.csv"
    util, _ = write_log(path, gpus, 60, period_ms, {})
    if not header:  # --format=csv,noheader: the columns told by their units
        path.write_text("\n".join(path.read_text().splitlines()[1:]) + "\n")
    doc = report_json(path)
    sampling = doc["sampling"]
    assert isinstance(sampling, dict)
    assert sampling["samples"] == 60
    assert sampling["interval_s"] == pytest.approx(period_ms / 1000, rel=0.05)
    gpus_out = doc["gpus"]
    assert isinstance(gpus_out, list)
    assert len(gpus_out) == gpus
    last = gpus - 1
    assert gpus_out[last]["sm_percent"]["mean"] == pytest.approx(statistics.mean(util[last]))


def test_a_single_gpu_pausing_after_every_tenth_row_is_not_ten_gpus(tmp_path: Path) -> None:
    """Rows 1 s apart, a 30 s pause after every 10th: runs of one size, but nvidia-smi
    queries the GPUs of one poll milliseconds apart, not a second."""
    path = tmp_path / "one.csv"
    t = datetime(2024, 5, 1, 12, 0, 0)
    lines = [HEADER]
    for n in range(100):
        lines.append(f"{stamp(t)}, 250.00 W, {n % 100} %, 1000 MiB")
        t += timedelta(seconds=31 if n % 10 == 9 else 1)
    path.write_text("\n".join(lines) + "\n")
    doc = report_json(path)
    sampling = doc["sampling"]
    assert isinstance(sampling, dict)
    assert sampling["samples"] == 100
    gpus = doc["gpus"]
    assert isinstance(gpus, list)
    assert len(gpus) == 1
    assert gpus[0]["sm_percent"]["mean"] == pytest.approx(statistics.mean(range(100)))


def test_an_8_gpu_log_with_more_short_polls_than_full_ones() -> None:
    """Short polls of 1, 2, 4 and 5 rows outnumber the full ones (28 of 80), every row
    of a poll under one stamp: read as 8 GPUs polled every 100 ms, the short polls as
    missing readings -- not as one GPU read every 0.1 ms (the stamps shared by a
    varying number of rows)."""
    polls = polls_of(LMS100_8GPU_SHORT, 0.05)
    full = [p for p in polls if len(p) == 8]
    assert len(polls) == 80
    assert len(full) == 28
    assert {len(p) for p in polls} - {8} == {1, 2, 4, 5}
    doc = report_json(LMS100_8GPU_SHORT)
    sampling = doc["sampling"]
    assert isinstance(sampling, dict)
    assert sampling["samples"] == len(full)
    assert sampling["interval_s"] == pytest.approx(0.1, abs=0.01)
    gpus = doc["gpus"]
    assert isinstance(gpus, list)
    assert [g["index"] for g in gpus] == list(range(8))
    for g in range(8):
        expected = statistics.mean(float(p[g][2].split()[0]) for p in full)
        assert gpus[g]["sm_percent"]["mean"] == pytest.approx(expected)
        assert gpus[g]["vram_peak_bytes"] == int(full[0][g][3].split()[0]) * 2**20
    file = doc["file"]
    assert isinstance(file, dict)
    assert file["bad_lines"] == len(polls) - len(full)
    notes = doc["notes"]
    assert isinstance(notes, list)
    assert any(n.startswith(f"{len(polls) - len(full)} short poll(s) (fewer than 8") for n in notes)
    assert any("GPUs assigned by position within each poll" in n for n in notes)
