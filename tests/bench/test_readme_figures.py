"""bench/readme_figures.py: each figure is read back from its bench's own output, and the
README's block is replaced, nothing else. No figure is asserted (they are the benches'
output, not behaviour): only that a real bench's lines are found and the README keeps
its text around the block."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import readme_figures  # noqa: E402


def test_a_real_bench_run_is_read_into_the_block() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "readme_figures.py"), "--only", "lms100", "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert readme_figures.START in out.stdout and readme_figures.END in out.stdout
    [row] = [line for line in out.stdout.splitlines() if "-lms 100" in line]
    assert (
        row.startswith("| report, 10 min 8-GPU")
        and "`python bench/report_speed.py --lms100`" in row
    )


def test_every_pattern_matches_the_line_its_bench_prints(tmp_path: Path) -> None:
    """The patterns against the benches' print formats (their f-strings, filled): a bench
    whose output changes shape would silently lose its figure otherwise."""
    samples = {
        "overhead": "  CPU                 1.65 % of one core\n"
        "  peak RSS            59.0 MB (end 58 MB)\n"
        "  terminal output     1.02 KB/s\n",
        "terminal": "   80x24:   0.60 KB/s steady; first screen 9.1 KB; CPU 1.50 %\n",
        "engine": "  median 2.80 ms  p95 3.10 ms  max 5.00 ms per tick (goal: median <= 3 ms)\n",
        "engine-waves": "  CPU time by uptime: minute 1 9.14 ms, minute 10 9.74 ms per tick\n",
        "tui": "  ingest    10.00  (engine 5.00, widgets 2.80)\n  total     13.70  (TUI ...)\n",
        "record": "  whole recorder process: 0.51 % of one core\n",
        "report": "recording: /tmp/x.jsonl (256 MB, 43200 ticks)\n"
        "report: 10.5 s wall, 9.8 s CPU, peak RSS 26 MB; hints every 64 ticks\n",
        "lms100": "8-GPU -lms 100 log, 10 min (38153 rows, 1.9 MB): report 2.3 s end to end\n",
        "proc": "  rescan    : 2000 vs 100 costs +0.41 % of a core\n",
    }
    import re

    for bench in readme_figures.BENCHES:
        if bench.name == "nvitop":
            continue  # its table rows are checked by the pattern builder's own shape below
        text = samples[bench.name]
        for row in bench.rows:
            m = re.search(row.pattern, text, re.MULTILINE)
            assert m is not None, (bench.name, row.figure)
            assert row.text(m.groups())
    line = "  8x64  CPU % of a core         1.40 (1.20-1.60)       2.30 (2.00-2.50)      0.61\n"
    [cpu] = [r for r in readme_figures._vs_rows("8x64") if r.figure.endswith("CPU, ours / nvitop")]
    m = re.search(cpu.pattern, line, re.MULTILINE)
    assert m is not None and cpu.text(m.groups()) == "1.40 / 2.30 % (0.61x)"
    # The steady window's row is its own figure, never the first window's.
    steady = "  8x64  steady CPU % of a core  3.10 (3.00-3.20)       3.00 (2.90-3.10)      1.03\n"
    [late] = [
        r
        for r in readme_figures._vs_rows("8x64", steady=True)
        if r.figure.endswith("CPU, ours / nvitop")
    ]
    assert re.search(cpu.pattern, steady, re.MULTILINE) is None
    m = re.search(late.pattern, line + steady, re.MULTILINE)
    assert m is not None and late.text(m.groups()) == "3.10 / 3.00 % (1.03x)"


def test_the_readme_keeps_its_text_around_the_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{readme_figures.START}\nold\n{readme_figures.END}\nafter\n")
    monkeypatch.setattr(readme_figures, "README", readme)
    block = readme_figures.block([("a figure", "1 ms", "python bench/x.py")], "0.1", "0.2", False)
    assert readme_figures.write_readme(block)
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("\nafter\n") and "old" not in text
    assert "| a figure | 1 ms | `python bench/x.py` |" in text
