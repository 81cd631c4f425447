"""orjson (the ``fast`` extra) decodes exactly as json does: the same values, the same
bad lines with the same messages, on every JSON reader's fixtures and on damaged lines.

These tests need orjson (in the ``test`` extra): the fast path is tested, and json's
path beside it with ``GPUTOP_HINTS_NO_ORJSON=1`` in a child process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputop_hints.recording import RecordingWriter, fastjson
from gputop_hints.sources.demo import DemoSource
from tests.support.paths import REPO

IMPORT = REPO / "tests" / "fixtures" / "import"


def outcome(data: bytes | str, decode: Any) -> tuple[str, str, str]:
    try:
        value = decode(data)
    except RecursionError:
        return ("recursion", "", "")
    except ValueError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("value", type(value).__name__, repr(value))


def test_orjson_decodes_here_unless_turned_off() -> None:
    """The fast path is what these tests check: orjson must be installed (test extra)."""
    assert fastjson.FAST is (os.environ.get(fastjson.ENV, "") in ("", "0"))


EDGE_CASES = [
    b"NaN",
    b"[Infinity, -Infinity]",
    b"1e400",
    b"[1.7976931348623159e308]",
    b"1e-400",
    b"[5e-324, 3e-324, -0.0, -0]",
    b"18446744073709551615",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"[1,\r123456789012345678901234]",
    b'{"a": 123456789012345678901234}',
    b"[0.0018456180000612221, 1700000000.1666667]",
    b"1e0000000000000000000005",
    b'{"a":1,"b":2,"a":3}',
    b'"\\ud800"',
    b'"\\udc00\\ud800"',
    b'"\\ud83d\\ude00"',
    b'"\xed\xa0\x80"',
    b'"\xff"',
    b"\xef\xbb\xbf{}",
    b'"a\x01b"',
    b'"a\x7fb"',
    b"{} x",
    b"{}\x00",
    b" {} \n",
    b"[1,]",
    b"01",
    b"1.",
    b".5",
    b"+1",
    b"",
    b"nul",
    b"[" * 200 + b"]" * 200,
    b"[" * 990 + b"]" * 990,
    b"[" * 1010 + b"]" * 1010,
    b"{\x00}\x00",
    "\ufeff{}".encode("utf-16"),
]


@pytest.mark.parametrize("data", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_every_edge_case_decodes_as_json_does(data: bytes) -> None:
    assert outcome(data, fastjson.loads) == outcome(data, json.loads)
    text = data.decode("utf-8", "surrogateescape")
    assert outcome(text, fastjson.loads) == outcome(text, json.loads)


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from('\ud800\x00\n"\\'))
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(), inner, max_size=6),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_DOCUMENTS, st.booleans())
def test_any_document_decodes_as_json_does(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert outcome(text, fastjson.loads) == outcome(text, json.loads)
    data = text.encode("utf-8", "surrogatepass")
    assert outcome(data, fastjson.loads) == outcome(data, json.loads)


_NUMBER = r"-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,4})?"


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.from_regex(_NUMBER, fullmatch=True), min_size=1, max_size=4))
def test_any_number_decodes_as_json_does(numbers: list[str]) -> None:
    data = ("[" + ",".join(numbers) + "]").encode()
    assert outcome(data, fastjson.loads) == outcome(data, json.loads)


# --- whole files, read by every JSON reader both ways -----------------------------------

_NUMBER_IN_JSON = re.compile(rb"(?<=[:\[,])-?[0-9][0-9.eE+-]*")
_DAMAGE = [b"NaN", b"-Infinity", b"1e400", b"123456789012345678901234", b"18446744073709551616"]


def damaged(line: bytes) -> list[bytes]:
    """Copies of one JSON line with numbers made odd, bad text, deep nesting and cuts."""
    body = line.rstrip(b"\n")
    out = []
    for k, m in enumerate(_NUMBER_IN_JSON.finditer(body)):
        if k in (0, 1, 3, 6):
            out += [body[: m.start()] + bad + body[m.end() :] for bad in _DAMAGE]
    head, sep, rest = body.partition(b"{")
    if sep:
        extra = [b'"\\ud800"', b'"\xff"', b"[" * 600 + b"]" * 600, b"[" * 1010 + b"]" * 1010]
        out += [head + b'{"x": ' + e + b", " + rest for e in extra]
    out += [body + b" trailing", body + b"\r", body[: len(body) // 2]]
    return [x + b"\n" for x in out]


def with_damage(source: Path, dest: Path, first: int = 0) -> Path:
    lines = source.read_bytes().splitlines(keepends=True)
    body = lines[first:]
    extra = [d for line in body[:2] for d in damaged(line)]
    dest.write_bytes(b"".join(lines) + b"".join(extra) + body[-1].rstrip(b"\n")[:-5])
    return dest


def demo_recording(path: Path) -> Path:
    source = DemoSource("mixed", gpus=8, processes=64)
    with RecordingWriter(path) as writer:
        for _ in range(30):
            writer.write(source.sample())
    return path


READ = """
import hashlib, json, sys
from gputop_hints.recording import fastjson
from gputop_hints.sources.files import open_stream
print("orjson", fastjson.FAST)
for path in sys.argv[1:]:
    stream = open_stream(path)
    digest = hashlib.sha256()
    n = 0
    for snap in stream:
        digest.update(repr(snap).encode())
        n += 1
    c = stream.counters
    print(path, stream.info.format, n, digest.hexdigest()[:16], c.bad_lines,
          c.first_bad_line, c.first_bad_reason, json.dumps(c.found, default=repr))
    stream.close()
"""


def _run(args: list[str], fast: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != fastjson.ENV}
    if not fast:
        env[fastjson.ENV] = "1"
    out = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=REPO, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_every_json_reader_reads_its_files_the_same_with_and_without_orjson(
    tmp_path: Path,
) -> None:
    recording = demo_recording(tmp_path / "run.jsonl")
    files = [
        recording,
        with_damage(recording, tmp_path / "damaged-run.jsonl", first=1),
        IMPORT / "recording_header_only.jsonl",
        REPO / "tests" / "fixtures" / "recording" / "v1-before-mig-and-tree.jsonl",
        IMPORT / "run-g7x2k9qa.wandb",
    ]
    for name in (
        "gpustat.jsonl",
        "gpustat.log",
        "script_flat.jsonl",
        "script_nested.jsonl",
        "wandb_new_keys.jsonl",
    ):
        files += [IMPORT / name, with_damage(IMPORT / name, tmp_path / f"damaged-{name}")]
    args = ["-c", READ, *map(str, files)]
    fast, plain = _run(args, fast=True), _run(args, fast=False)
    assert fast.splitlines()[0] == "orjson True"
    assert plain.splitlines()[0] == "orjson False"
    assert fast.splitlines()[1:] == plain.splitlines()[1:]
    # The damage is there to be seen: bad lines counted, with their line numbers.
    damaged_lines = [line for line in fast.splitlines() if "damaged-" in line]
    assert all(int(line.split()[4]) > 0 for line in damaged_lines), damaged_lines


def test_a_damaged_recording_reports_the_same_with_and_without_orjson(tmp_path: Path) -> None:
    """The report's own path through a recording (the GPU part of each line first)."""
    path = with_damage(demo_recording(tmp_path / "run.jsonl"), tmp_path / "bad.jsonl", first=1)
    args = ["-m", "gputop_hints", "report", str(path)]
    fast = _run(args, fast=True)
    assert "malformed line(s) skipped, the first at line" in fast, fast
    assert fast == _run(args, fast=False)
