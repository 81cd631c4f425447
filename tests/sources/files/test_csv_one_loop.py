"""The generic/nvidia-smi CSV reader's one loop (records, rows, ticks) reads as the
stages it merges: raw_records -> _RowReader.rows -> assemble."""

from __future__ import annotations

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


@pytest.mark.parametrize("name", ["plain.csv", "crlf.csv"])
def test_one_loop_reads_as_the_stages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    text = _text() if name == "plain.csv" else _text().replace("\n", "\r\n")
    path = tmp_path / name
    path.write_bytes(text.encode())
    merged = _read(path)

    def stages(
        self: _csvio._RowReader, lines: Iterable[tuple[int, str]], assembler: Assembler
    ) -> Iterator[Snapshot]:
        return assemble(self.rows(lines), assembler)

    monkeypatch.setattr(_csvio._RowReader, "snapshots", stages)
    staged = _read(path)
    assert merged == staged
    assert len(merged[0]) > 400
