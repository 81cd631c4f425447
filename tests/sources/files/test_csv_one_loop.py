"""The generic/nvidia-smi CSV reader's one loop (records, rows, ticks) reads as the
stages it merges: raw_records -> _RowReader.rows -> assemble."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _csvio, open_stream
from gputop_hints.sources.files._table import Assembler, assemble

_HEADER = "timestamp,gpu_utilization,memory_used,memory_total\n"


def _text() -> str:
    rows = []
    t = 1746556382.0
    for i in range(600):
        t += 0.5
        row = f"{t:.4f},{(i // 7) % 3 * 10}, {i % 2 * 100}, 15360\n"
        k = i % 41
        if i % 205 == 3:
            row = "\x00\x00" + row
        elif k == 7:
            row = f'"{t}",1,"2",15360\n'
        elif k == 11:
            row = "\n"
        elif k == 13:
            row = _HEADER
        elif k == 17:
            row = f"{t:.4f},abc,1,15360\n"
        elif k == 19:
            row = "notatime,1,1,15360\n"
        elif k == 23:
            row = f"{t - 100:.4f},1,1,15360\n"
        elif k == 29:
            row = f"{t:.4f},1,1,15360\n{t + 0.1:.4f},1,1,15360\n"  # two rows in a tick
        elif k == 31:
            row = f'"{t},1\n2",3,4\n'
        rows.append(row)
    return _HEADER + "".join(rows)


def _read(path: Path) -> tuple[list[Snapshot], object]:
    stream = open_stream(path)
    snaps = list(stream)
    counters = vars(stream.counters).copy()
    stream.close()
    return snaps, counters


def _stages(
    self: _csvio._RowReader, lines: Iterable[tuple[int, str]], assembler: Assembler
) -> Iterator[Snapshot]:
    return assemble(self.rows(lines), assembler)


@pytest.mark.parametrize("name", ["plain.csv", "crlf.csv"])
def test_one_loop_reads_as_the_stages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    text = _text() if name == "plain.csv" else _text().replace("\n", "\r\n")
    path = tmp_path / name
    path.write_bytes(text.encode())
    merged = _read(path)
    monkeypatch.setattr(_csvio._RowReader, "snapshots", _stages)
    staged = _read(path)
    assert merged == staged
    assert len(merged[0]) > 400


# Time cells at the edges of the short way for plain epoch times (_plain_time): spaces,
# "_" (float reads 1_700), inf/nan, out of the epoch range, words, hex.
_TIMES = [
    " 1700000000.25", "1700000000_5", "1e9", "inf", "nan", "-1700000000", "",
    "1700000000000", "timestamp", "abc", "17e8", "99999999", "1e11", "0x10", "+1.7e9 ",
]  # fmt: skip
_TAILS = ["40, 1000, 15360", "41, 1000, 15360", "0, 0, 15360", "x, 1000, 15360", "40,1000"]


def _random_lines(seed: int, gpu: bool) -> list[str]:
    rng = random.Random(seed)
    t = 1.7e9
    lines = ["timestamp,gpu,gpu_util,mem_used_mb,mem_total_mb" if gpu else
             "timestamp,gpu_util,mem_used_mb,mem_total_mb"]  # fmt: skip
    for _ in range(600):
        t += rng.choice([0.5, 0.5, 0.5, 0.0, 0.001, -30.0])
        time_cell = rng.choice(_TIMES) if rng.random() < 0.08 else repr(t)
        tail = rng.choice(_TAILS)
        if gpu:
            tail = f"{rng.choice(['0', '1', '', 'z'])},{tail}"
        line = f"{time_cell},{tail}"
        if rng.random() < 0.03:
            line = f'"{time_cell}",{tail}'
        lines.append(rng.choice(["", line]) if rng.random() < 0.03 else line)
    return lines


@pytest.mark.parametrize("gpu", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_one_loop_reads_random_logs_as_the_stages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, gpu: bool
) -> None:
    """Known rows, odd time cells, clock jumps, ticks of one row: the same snapshots
    and counters, on a first pass and a second (the samples remembered between)."""
    path = tmp_path / "log.csv"
    path.write_text("\n".join(_random_lines(seed, gpu)) + "\n")
    merged, merged_again = _read(path), _read(path)
    assert merged == merged_again and len(merged[0]) > 100
    monkeypatch.setattr(_csvio._RowReader, "snapshots", _stages)
    assert _read(path) == merged
