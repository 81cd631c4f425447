"""TextSource.lines reads blocks as readline(MAX_LINE_CHARS) reads lines: fuzzed with
small blocks and line limits (line ends, NULs, overlong lines, CR, BOMs, gzip)."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from gputop_hints.sources.files import _text
from gputop_hints.sources.files._text import TextSource


def _both(path: Path) -> tuple[object, object]:
    got = []
    for bulk in (True, False):
        bad: list[tuple[int, str]] = []

        def note(n: int, why: str, bad: list[tuple[int, str]] = bad) -> None:
            bad.append((n, why))

        source = TextSource(path, note)
        lines = source.lines() if bulk else source._read_lines()
        got.append((list(lines), bad, source.error))
        source.close()
    return got[0], got[1]


_PIECES = ["a", "bc", "1,2,3", "\n", "\n", "\r\n", "\r", "\x00", "\x00\x00\x00", " ", "é", "€"]


@pytest.mark.parametrize("seed", range(60))
def test_blocks_read_as_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(_text, "MAX_LINE_CHARS", rng.choice([4, 5, 8, 16]))
    monkeypatch.setattr(_text, "BLOCK_BYTES", rng.choice([1, 2, 3, 7, 64]))
    count = rng.randint(0, 80)
    text = "".join(rng.choice(_PIECES) * rng.choice([1, 1, 1, 6]) for _ in range(count))
    path = tmp_path / "f.log"
    kind = seed % 4
    if kind == 1:
        path.write_bytes(gzip.compress(text.encode()))
    elif kind == 2:
        path.write_bytes(text.encode("utf-16"))
    elif kind == 3:
        cut = rng.randint(0, 200)  # maybe mid-character
        path.write_bytes(b"\xef\xbb\xbf" + text.encode()[:cut])
    else:
        path.write_bytes(text.encode())
    bulk, by_line = _both(path)
    assert bulk == by_line


def test_truncated_gzip_reads_as_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_text, "BLOCK_BYTES", 50)
    data = gzip.compress("".join(f"{i},1,2\n" for i in range(5000)).encode())
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) // 2])
    bulk, by_line = _both(path)
    assert bulk == by_line
    assert bulk[2] is not None  # type: ignore[index]
