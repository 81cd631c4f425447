"""gputop_hints._classcache: dataclasses' generated methods compiled once per machine.

Each test runs fresh interpreters (the cache is read at the first class of a process)
with their own cache home, and compares what they print: a class whose methods came
from the file must behave as one compiled at that start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import dataclasses, json
from gputop_hints import _classcache
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.model import GpuProcess
t = Thresholds.defaults()
p = GpuProcess(pid=7, gpu_index=0, vram_bytes=2**30, sm_percent=40.0)
q = dataclasses.replace(p, sm_percent=40.0)
try:
    t.general.window_s = 1.0
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
cache = _classcache._installed
print(json.dumps({
    "repr": repr(t.input_starved) + repr(p),
    "equal": p == q and hash(p) == hash(q) and t == Thresholds.defaults(),
    "frozen": frozen,
    "compiled": None if cache is None else cache.compiled,
    "known": None if cache is None else len(cache.codes),
}))
"""


def probe(cache_home: Path, **env: str) -> dict[str, object]:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environ.update(XDG_CACHE_HOME=str(cache_home), PYTHONPATH=str(ROOT), **env)
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=environ, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def cache_file(cache_home: Path) -> Path:
    [path] = (cache_home / "gputop-hints").glob("dataclasses.*")
    return path


def test_the_second_start_compiles_nothing_and_its_classes_behave_the_same(tmp_path: Path) -> None:
    first = probe(tmp_path)
    assert first["compiled"] and first["compiled"] == first["known"]
    assert cache_file(tmp_path).stat().st_size > 0
    second = probe(tmp_path)
    assert second["compiled"] == 0 and second["known"] == first["known"]
    without = probe(tmp_path / "unused", GPUTOP_HINTS_NO_CLASS_CACHE="1")
    assert without["compiled"] is None and not (tmp_path / "unused").exists()
    for run in (first, second, without):
        assert run["equal"] is True and run["frozen"] is True
        assert run["repr"] == without["repr"]


def test_a_damaged_file_is_compiled_past_and_written_again(tmp_path: Path) -> None:
    probe(tmp_path)
    path = cache_file(tmp_path)
    path.write_bytes(b"\x00not marshal at all")
    damaged = probe(tmp_path)
    assert damaged["compiled"] and damaged["equal"] is True
    assert probe(tmp_path)["compiled"] == 0  # the damaged file was replaced by a good one


def test_a_damaged_entry_is_compiled_again_and_the_rest_are_read(tmp_path: Path) -> None:
    import marshal

    first = probe(tmp_path)
    path = cache_file(tmp_path)
    codes = marshal.loads(path.read_bytes())
    damaged = next(iter(codes))
    codes[damaged] = b"\x00not a code object"
    path.write_bytes(marshal.dumps(codes))
    again = probe(tmp_path)
    assert again["compiled"] == 1 and again["known"] == first["known"]
    assert again["equal"] is True and again["repr"] == first["repr"]
    assert probe(tmp_path)["compiled"] == 0  # the entry was written again, good


def test_an_unwritable_cache_home_costs_only_time(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory\n")
    for _ in range(2):
        run = probe(blocked)
        assert run["compiled"] and run["equal"] is True  # compiled at every start, no error


def test_nothing_is_written_where_python_writes_no_bytecode(tmp_path: Path) -> None:
    run = probe(tmp_path, PYTHONDONTWRITEBYTECODE="1")
    assert run["compiled"] and not (tmp_path / "gputop-hints").exists()
