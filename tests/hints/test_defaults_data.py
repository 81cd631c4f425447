"""The packaged defaults as generated Python (``_defaults_data``) and without PyYAML.

``defaults.yaml`` is the source users copy; ``_defaults_data.py`` is what a start
reads. A test here fails when someone edits the YAML and forgets to regenerate
(``python -m gputop_hints.hints.gen_defaults``), when the two would build
different thresholds, and when a start without a user file imports PyYAML after
all; the data is checked key by key as a file is, with the key in the message.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gputop_hints.hints import gen_defaults
from gputop_hints.hints._defaults_data import DEFAULTS
from gputop_hints.hints.thresholds import (
    DEFAULTS_DATA_PATH,
    DEFAULTS_PATH,
    Thresholds,
    build_packaged,
    build_thresholds,
    parse_overrides,
)
from gputop_hints.typed_yaml import ConfigError
from tests.support.paths import REPO


def test_generated_module_is_the_yaml_file_parsed() -> None:
    """Fails when defaults.yaml was edited without regenerating _defaults_data.py."""
    assert yaml.safe_load(DEFAULTS_PATH.read_text(encoding="utf-8")) == DEFAULTS, (
        "defaults.yaml and _defaults_data.py differ: run python -m gputop_hints.hints.gen_defaults"
    )
    assert DEFAULTS_DATA_PATH.read_text(encoding="utf-8") == gen_defaults.render_from_yaml()


def test_check_option_reports_a_stale_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / "_defaults_data.py"
    stale.write_text(gen_defaults.render({"general": {"window_s": 1}}), encoding="utf-8")
    monkeypatch.setattr(gen_defaults, "MODULE_PATH", stale)
    assert gen_defaults.main(["--check"]) == 1
    assert gen_defaults.main([]) == 0  # rewrites it
    assert gen_defaults.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == DEFAULTS_DATA_PATH.read_text(encoding="utf-8")


def test_generated_module_builds_what_the_yaml_file_parses_to() -> None:
    """Same values of the same types (6, not 6.0, for an int field)."""
    text = DEFAULTS_PATH.read_text(encoding="utf-8")
    parsed = parse_overrides(text, str(DEFAULTS_PATH), base=None)
    assert Thresholds.defaults() == parsed
    assert repr(Thresholds.defaults()) == repr(parsed)


def test_a_start_builds_the_defaults_the_checked_way_would() -> None:
    """Thresholds.defaults() skips the per-key checks and the type-hint resolution at each
    start (build_packaged); this is where they run: the same thresholds, every key passing
    the checks a file's keys pass, and no section falling back to the slow path."""
    fast = build_packaged(Thresholds, DEFAULTS)
    assert fast is not None, "build_packaged fell back: an annotation it cannot resolve?"
    assert fast == build_thresholds(DEFAULTS, str(DEFAULTS_DATA_PATH)) == Thresholds.defaults()
    assert repr(fast) == repr(build_thresholds(DEFAULTS, str(DEFAULTS_DATA_PATH)))  # 6, not 6.0
    assert isinstance(fast, Thresholds) and type(fast.input_starved.min_gaps) is int


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["general"].pop("window_s"),
        lambda d: d["general"].update(extra=1),
        lambda d: d["general"].update(window_s="six"),
        lambda d: d["general"].update(window_s=True),
        lambda d: d.update(general=3),
    ],
    ids=["missing", "unknown", "text", "bool", "not-a-section"],
)
def test_data_the_fast_build_cannot_take_goes_the_checked_way(change: Any) -> None:
    data = copy.deepcopy(DEFAULTS)
    change(data)
    assert build_packaged(Thresholds, data) is None


def test_the_written_module_is_the_data_it_was_rendered_from() -> None:
    namespace: dict[str, Any] = {}
    exec(gen_defaults.render(DEFAULTS), namespace)  # our own rendering, of our own data
    assert namespace["DEFAULTS"] == DEFAULTS


def _with(dotted: str, value: object) -> dict[str, Any]:
    data = copy.deepcopy(DEFAULTS)
    *sections, leaf = dotted.split(".")
    target = data
    for name in sections:
        target = target[name]
    if value is _DELETE:
        del target[leaf]
    else:
        target[leaf] = value
    return data


_DELETE = object()


@pytest.mark.parametrize(
    ("dotted", "value", "key", "message"),
    [
        ("general.window_s", 1, "general.window_s", "1 is out of range (allowed 2-600 s)"),
        ("general.window_s", "six", "general.window_s", "'six' is not a number"),
        ("general.window_s", True, "general.window_s", "true is not a number"),
        ("input_starved.min_gaps", 2.5, "input_starved.min_gaps", "must be a whole number"),
        ("input_starved.min_gap_sec", 1, "input_starved.min_gap_sec", "did you mean"),
        ("general.no such key", 1, "general.(a key that is not a setting name)", "unknown key"),
        ("input_starved.min_gaps", _DELETE, "input_starved", "missing keys: min_gaps"),
        ("input_starved.hysteresis", 3, "input_starved.hysteresis", "expected a mapping"),
        (
            "small_batch.sm_min_percent",
            99,
            "small_batch.sm_min_percent",
            "must not exceed small_batch.sm_max_percent",
        ),
    ],
)
def test_bad_data_is_refused_with_its_key(
    dotted: str, value: object, key: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        build_thresholds(_with(dotted, value), "defaults-data")
    assert (info.value.path, info.value.line, info.value.key) == ("defaults-data", None, key)
    assert message in info.value.message


def test_a_plain_number_written_as_text_is_read_as_yaml_reads_it() -> None:
    """``1e1`` in the YAML is a string to safe_load, a number to the file parser."""
    built = build_thresholds(_with("general.window_s", "1e1"), "defaults-data")
    assert built.general.window_s == 10.0


PROBE = """
import contextlib, io, sys
from gputop_hints.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(sys.argv[1:])
print(rc, sorted(m for m in sys.modules if m == "yaml" or m.startswith("yaml.")))
"""


def _once(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GPUTOP_HINTS_CONFIG"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "no-xdg")
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-c", PROBE, "--demo", "--once", "--duration", "1", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
        check=False,
    )


def test_once_without_a_user_file_never_imports_yaml(tmp_path: Path) -> None:
    result = _once(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0 []"


def test_once_with_a_user_file_parses_it_with_its_line_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("general:\n  window_s: 1\n", encoding="utf-8")
    result = _once(tmp_path, "--config", str(bad))
    assert f"{bad}:2: general.window_s: 1 is out of range" in result.stderr
    good = tmp_path / "good.yaml"
    good.write_text("general:\n  window_s: 10\n", encoding="utf-8")
    result = _once(tmp_path, "--config", str(good))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "0"
    assert "'yaml'" in result.stdout
