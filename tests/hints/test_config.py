"""The thresholds file as a user meets it: defaults, overrides, search order, errors.

Each test names what a user would notice if it failed: a key documented but
not accepted, an override that silently changes other keys, a typo that is
ignored instead of reported, an error that does not say where, or a monitor
that starts with a half-valid file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gputop_hints.hints import config
from gputop_hints.hints.config import ConfigError, find_config, load, load_file, parse_overrides
from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.rules import ALL_RULES, RuleSpec, vram_near_limit
from gputop_hints.hints.thresholds import DEFAULTS_PATH, Thresholds, field_type, schema_keys
from tests.hints.windows import G, Run, Tick
from tests.support.paths import REPO

DOCS = REPO / "docs"


# --- helpers -------------------------------------------------------------------------


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested mapping or Thresholds object as {dotted key: leaf value}."""
    out: dict[str, Any] = {}
    if is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name)) for f in fields(value)]
    elif isinstance(value, dict):
        items = list(value.items())
    else:
        return {prefix.rstrip("."): value}
    for key, sub in items:
        out.update(flatten(sub, f"{prefix}{key}."))
    return out


def field_meta(dotted: str) -> dict[str, Any]:
    """The metadata (min, max, unit, doc) of a dotted key."""
    cls: Any = Thresholds
    *sections, leaf = dotted.split(".")
    for name in sections:
        cls = field_type(cls, name)
    return dict(next(f.metadata for f in fields(cls) if f.name == leaf))


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_file(path)
    return info.value


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed entry point, in a subprocess, with no user config around."""
    full_env = {k: v for k, v in os.environ.items() if k != "GPUTOP_HINTS_CONFIG"}
    full_env["XDG_CONFIG_HOME"] = str(cwd / "no-xdg")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "gputop_hints", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


# --- the defaults ----------------------------------------------------------------------


def test_defaults_file_and_schema_name_exactly_the_same_keys() -> None:
    in_yaml = set(flatten(yaml.safe_load(DEFAULTS_PATH.read_text(encoding="utf-8"))))
    in_schema = set(schema_keys())
    assert in_yaml - in_schema == set(), "documented in defaults.yaml but not accepted"
    assert in_schema - in_yaml == set(), "accepted but missing from defaults.yaml"


def test_every_default_is_within_its_declared_range() -> None:
    defaults = flatten(Thresholds.defaults())
    assert set(defaults) == set(schema_keys())
    for key, value in defaults.items():
        meta = field_meta(key)
        assert meta["min"] <= value <= meta["max"], f"{key}={value} outside {meta}"
        assert meta["doc"], f"{key} has no doc"


@pytest.mark.parametrize("spec", ALL_RULES, ids=lambda spec: spec.id)
def test_each_rules_hysteresis_block_reaches_that_rule_only(spec: RuleSpec) -> None:
    # What a user tuning one rule's flicker notices: that rule waits as long as they
    # wrote, and every other rule keeps its default.
    text = f"{spec.thresholds}:\n  hysteresis: {{raise_after_s: 42, clear_after_s: 43}}\n"
    tuned = parse_overrides(text, "tuned.yaml", base=Thresholds.defaults())
    assert spec.hysteresis(tuned) == (42, 43)
    defaults = Thresholds.defaults()
    for other in ALL_RULES:
        if other is not spec:
            assert other.hysteresis(tuned) == other.hysteresis(defaults)


def test_a_configured_raise_after_s_delays_what_the_engine_shows() -> None:
    # vram-near-limit holds from the first tick of a 96 % full card; shown after 2 s by
    # default, after 5 s once the user's file says so.
    text = "vram_near_limit:\n  hysteresis: {raise_after_s: 5, clear_after_s: 10}\n"
    tuned = parse_overrides(text, "tuned.yaml", base=Thresholds.defaults())
    shown_after = []
    for thresholds in (Thresholds.defaults(), tuned):
        engine, run = HintEngine(thresholds, rules=(vram_near_limit.SPEC,)), Run()
        seen = []
        for _ in range(8):
            run.tick(Tick((G(sm=95.0, vram_gib=77.0),)))
            seen.append(bool(engine.update(run.history)))
        shown_after.append(seen.index(True))
    assert shown_after == [2, 5]


def test_defaults_in_yaml_are_what_the_rules_get() -> None:
    raw = flatten(yaml.safe_load(DEFAULTS_PATH.read_text(encoding="utf-8")))
    loaded = flatten(Thresholds.defaults())
    assert loaded == pytest.approx(raw)


# --- overriding a subset ---------------------------------------------------------------


def test_partial_file_overrides_only_what_it_names(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "team.yaml",
        "general:\n"
        "  cores_busy_percent: 80\n"
        "input_starved:\n"
        "  max_suggested_workers: 3\n"
        "  hysteresis: {clear_after_s: 30}\n",
    )
    before = flatten(Thresholds.defaults())
    after = flatten(load_file(path))
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {
        "general.cores_busy_percent",
        "input_starved.max_suggested_workers",
        "input_starved.hysteresis.clear_after_s",
    }
    assert after["general.cores_busy_percent"] == 80
    assert after["input_starved.max_suggested_workers"] == 3
    assert isinstance(after["input_starved.max_suggested_workers"], int)
    assert after["input_starved.hysteresis.clear_after_s"] == 30
    # the other half of the hysteresis block keeps its default
    assert (
        after["input_starved.hysteresis.raise_after_s"]
        == before["input_starved.hysteresis.raise_after_s"]
    )


def test_whole_number_keys_accept_a_whole_float(tmp_path: Path) -> None:
    t = load_file(write(tmp_path, "c.yaml", "input_starved:\n  min_gaps: 3.0\n"))
    assert t.input_starved.min_gaps == 3
    assert isinstance(t.input_starved.min_gaps, int)


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n", "---\n"])
def test_empty_file_means_defaults(tmp_path: Path, text: str) -> None:
    assert load_file(write(tmp_path, "empty.yaml", text)) == Thresholds.defaults()


# --- search order ------------------------------------------------------------------------


@pytest.fixture
def three_files(tmp_path: Path) -> dict[str, Path]:
    """An explicit file, an env file and a user (XDG) file, each with its own window_s."""
    return {
        "explicit": write(tmp_path, "explicit.yaml", "general: {window_s: 11}\n"),
        "env": write(tmp_path, "env.yaml", "general: {window_s: 22}\n"),
        "xdg": write(tmp_path, "xdg/gputop-hints/config.yaml", "general: {window_s: 33}\n"),
    }


def test_explicit_beats_env_beats_xdg_beats_defaults(
    tmp_path: Path, three_files: dict[str, Path]
) -> None:
    env = {"GPUTOP_HINTS_CONFIG": str(three_files["env"]), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert load(str(three_files["explicit"]), env).general.window_s == 11
    assert load(None, env).general.window_s == 22
    del env["GPUTOP_HINTS_CONFIG"]
    assert load(None, env).general.window_s == 33
    env["XDG_CONFIG_HOME"] = str(tmp_path / "nowhere")
    assert load(None, env) == Thresholds.defaults()
    assert find_config(None, env) == (None, "built-in defaults")


def test_search_reports_how_the_file_was_found(
    tmp_path: Path, three_files: dict[str, Path]
) -> None:
    env = {"GPUTOP_HINTS_CONFIG": str(three_files["env"]), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert find_config(str(three_files["explicit"]), env) == (three_files["explicit"], "--config")
    assert find_config(None, env) == (three_files["env"], "$GPUTOP_HINTS_CONFIG")
    assert find_config(None, {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}) == (
        three_files["xdg"],
        "user config",
    )


def test_without_xdg_the_user_file_is_under_home_dot_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    user = write(tmp_path, ".config/gputop-hints/config.yaml", "general: {window_s: 44}\n")
    for env in ({}, {"XDG_CONFIG_HOME": ""}):
        assert config.user_config_path(env) == user
        assert load(None, env).general.window_s == 44


def test_files_are_not_merged_with_each_other(tmp_path: Path) -> None:
    """With an explicit file, the user file is not read at all (not even its other keys)."""
    write(tmp_path, "xdg/gputop-hints/config.yaml", "general: {min_vram_gib: 7}\n")
    explicit = write(tmp_path, "explicit.yaml", "general: {window_s: 11}\n")
    t = load(str(explicit), {"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert t.general.window_s == 11
    assert t.general.min_vram_gib == Thresholds.defaults().general.min_vram_gib


def test_explicit_missing_file_is_an_error_not_defaults(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="no such file") as info:
        load(missing, {})
    assert info.value.path == missing
    with pytest.raises(ConfigError, match=r"GPUTOP_HINTS_CONFIG"):
        load(None, {"GPUTOP_HINTS_CONFIG": missing})


def test_broken_user_file_is_an_error_not_silently_skipped(tmp_path: Path) -> None:
    write(tmp_path, "xdg/gputop-hints/config.yaml", "general: {window_sec: 3}\n")
    with pytest.raises(ConfigError, match="window_sec"):
        load(None, {"XDG_CONFIG_HOME": str(tmp_path / "xdg")})


# --- errors name the file, the line and the key ------------------------------------------


def test_unknown_key_names_file_line_key_and_nearest_valid_key(tmp_path: Path) -> None:
    path = write(
        tmp_path, "typo.yaml", "general:\n  window_s: 10\ninput_starved:\n  min_gap_sec: 1\n"
    )
    err = error_of(path)
    assert (err.path, err.line, err.key) == (str(path), 4, "input_starved.min_gap_sec")
    text = str(err)
    assert text.startswith(f"{path}:4:")
    assert "input_starved.min_gap_sec" in text
    assert "did you mean 'input_starved.min_gap_s'" in text


@pytest.mark.parametrize(
    ("text", "line", "key", "suggestion"),
    [
        ("input_starve:\n  min_gaps: 3\n", 1, "input_starve", "input_starved"),
        (
            "small_batch:\n  hysteresis: {raise_after_s: 1, clear_after: 3}\n",
            2,
            "small_batch.hysteresis.clear_after",
            "small_batch.hysteresis.clear_after_s",
        ),
    ],
)
def test_unknown_section_or_hysteresis_key_suggests_the_right_one(
    tmp_path: Path, text: str, line: int, key: str, suggestion: str
) -> None:
    err = error_of(write(tmp_path, "c.yaml", text))
    assert (err.line, err.key) == (line, key)
    assert f"did you mean '{suggestion}'" in str(err)


@pytest.mark.parametrize(
    ("key", "value", "shown", "allowed"),
    [
        ("input_starved.min_gap_fraction", "1.5", "1.5", "allowed 0-1"),
        ("general.window_s", "1", "1", "allowed 2-600 s"),
        ("general.window_s", "-3", "-3", "allowed 2-600 s"),
        ("general.window_s", ".nan", "nan", "allowed 2-600 s"),
        ("input_starved.min_gaps", "two", "'two'", "allowed 1-1000"),
        ("input_starved.min_gaps", "2.5", "2.5", "allowed 1-1000"),
        ("input_starved.min_gaps", "0", "0", "allowed 1-1000"),
        ("general.cores_busy_percent", "true", "'true'", "allowed 0-100 %"),
        ("general.cores_busy_percent", '"90"', "'90'", "allowed 0-100 %"),
        ("pcie_thrash.floor_gb_per_s", "1e9", "1e+09", "allowed 0-1000 GB/s"),
    ],
)
def test_bad_value_names_file_line_key_value_and_allowed_range(
    tmp_path: Path, key: str, value: str, shown: str, allowed: str
) -> None:
    section, leaf = key.split(".")
    path = write(tmp_path, "bad.yaml", f"# a comment\n{section}:\n  {leaf}: {value}\n")
    err = error_of(path)
    assert (err.path, err.line, err.key) == (str(path), 3, key)
    text = str(err)
    assert text.startswith(f"{path}:3: {key}:")
    assert shown in text
    assert allowed in text


def test_list_where_a_number_belongs(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, "c.yaml", "general:\n  window_s: [1, 2]\n"))
    assert (err.line, err.key) == (2, "general.window_s")
    assert "single number" in str(err)


def test_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    err = error_of(
        write(tmp_path, "dup.yaml", "small_batch:\n  sm_min_percent: 10\n  sm_min_percent: 20\n")
    )
    assert (err.line, err.key) == (3, "small_batch.sm_min_percent")
    assert "given twice (first on line 2)" in str(err)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("general:\n  window_s: 10\n input_starved: [\n", 3),
        ("general:\n\twindow_s: 3\n", 2),
        ("general: {window_s: 3\n", 2),
        ("a: 1\n---\nb: 2\n", 2),
    ],
)
def test_invalid_yaml_reports_its_line(tmp_path: Path, text: str, line: int) -> None:
    path = write(tmp_path, "syntax.yaml", text)
    err = error_of(path)
    assert err.line == line
    assert str(err).startswith(f"{path}:{line}: not valid YAML")


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("- general\n- input_starved\n", 1, None),
        ("just a string\n", 1, None),
        ("# header\ninput_starved: 5\n", 2, "input_starved"),
        ("input_starved:\n", 1, "input_starved"),
        ("input_starved:\n  hysteresis: 3\n", 2, "input_starved.hysteresis"),
    ],
)
def test_non_mapping_where_a_mapping_belongs(
    tmp_path: Path, text: str, line: int, key: str | None
) -> None:
    err = error_of(write(tmp_path, "c.yaml", text))
    assert (err.line, err.key) == (line, key)
    assert "expected a mapping" in str(err)


def test_undecodable_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"general:\n  window_s: 10 # \xe9t\xe9\n")
    err = error_of(path)
    assert err.path == str(path)
    assert "cannot read" in str(err)


def test_defaults_parser_requires_every_key() -> None:
    """The packaged file is parsed with no base: a key missing from it must be caught."""
    text = DEFAULTS_PATH.read_text(encoding="utf-8").replace("  min_gaps: 2\n", "")
    with pytest.raises(ConfigError, match="missing keys: min_gaps"):
        parse_overrides(text, "defaults.yaml", base=None)


# --- through the command line --------------------------------------------------------------


GOOD = "general:\n  cores_busy_percent: 80\ninput_starved:\n  sm_mean_below_percent: 5\n"
BAD = "input_starved:\n  sm_mean_below_percent: 40\n  min_gap_sec: 1\n"


def test_print_defaults_is_valid_yaml_equal_to_the_defaults(tmp_path: Path) -> None:
    result = cli("config", "--print-defaults", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert flatten(yaml.safe_load(result.stdout)) == pytest.approx(flatten(Thresholds.defaults()))
    assert result.stdout == DEFAULTS_PATH.read_text(encoding="utf-8")  # comments included
    # and a user can feed it straight back in
    write(tmp_path, "copy.yaml", result.stdout)
    assert cli("config", "--check", "copy.yaml", cwd=tmp_path).returncode == 0


def test_check_good_file_exits_0(tmp_path: Path) -> None:
    write(tmp_path, "good.yaml", GOOD)
    result = cli("config", "--check", "good.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "good.yaml: OK" in result.stdout


def test_check_bad_file_exits_2_with_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, "bad.yaml", BAD)
    result = cli("config", "--check", "bad.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert "bad.yaml:3:" in result.stderr
    assert "min_gap_sec" in result.stderr
    assert "OK" not in result.stdout


def test_check_missing_file_exits_2(tmp_path: Path) -> None:
    result = cli("config", "--check", "nope.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert "nope.yaml" in result.stderr
    assert "no such file" in result.stderr


def test_config_subcommand_needs_an_action(tmp_path: Path) -> None:
    result = cli("config", cwd=tmp_path)
    assert result.returncode == 2
    assert "--print-defaults" in result.stderr


def test_show_names_the_file_in_effect(tmp_path: Path) -> None:
    user = write(tmp_path, "xdg/gputop-hints/config.yaml", GOOD)
    result = cli("config", "--show", cwd=tmp_path, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert result.returncode == 0, result.stderr
    assert re.search(rf"in effect\s+{re.escape(str(user))} \(user config\)", result.stdout)
    env_file = write(tmp_path, "env.yaml", GOOD)
    result = cli("config", "--show", cwd=tmp_path, env={"GPUTOP_HINTS_CONFIG": str(env_file)})
    assert re.search(rf"in effect\s+{re.escape(str(env_file))}", result.stdout)
    result = cli("config", "--show", cwd=tmp_path)
    assert re.search(r"in effect\s+built-in defaults", result.stdout)


def test_show_with_missing_env_file_exits_2(tmp_path: Path) -> None:
    result = cli("config", "--show", cwd=tmp_path, env={"GPUTOP_HINTS_CONFIG": "gone.yaml"})
    assert result.returncode == 2
    assert "gone.yaml" in result.stderr


@pytest.mark.parametrize("how", ["--config", "env"])
def test_bad_config_stops_before_anything_starts(tmp_path: Path, how: str) -> None:
    write(tmp_path, "bad.yaml", BAD)
    if how == "--config":
        result = cli("--config", "bad.yaml", "--demo", "--once", cwd=tmp_path)
    else:
        result = cli("--demo", "--once", cwd=tmp_path, env={"GPUTOP_HINTS_CONFIG": "bad.yaml"})
    assert result.returncode == 2
    assert result.stdout == ""
    assert "bad.yaml:3:" in result.stderr


def test_missing_config_stops_before_anything_starts(tmp_path: Path) -> None:
    result = cli("--config", "nope.yaml", "--demo", "--once", "--json", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "nope.yaml" in result.stderr


def findings(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)["findings"]
    assert isinstance(found, list)
    return found


def test_config_changes_what_the_hints_conclude(tmp_path: Path) -> None:
    """sm_mean_below_percent: 5 makes the starved demo's ~25 % SM too busy to be starved."""
    args = ("--demo", "starved-loader", "--once", "--json")
    default = findings(cli(*args, cwd=tmp_path))
    starved = [f for f in default if f["rule"] == "input-starved"]
    assert starved, default
    assert starved[0]["subtype"] == "num-workers-0"
    assert starved[0]["subject"]["pid"] is not None

    write(tmp_path, "good.yaml", GOOD)
    tuned = findings(cli("--config", "good.yaml", *args, cwd=tmp_path))
    assert [f for f in tuned if f["rule"] == "input-starved"] == []

    # the same file found through $GPUTOP_HINTS_CONFIG has the same effect
    via_env = findings(cli(*args, cwd=tmp_path, env={"GPUTOP_HINTS_CONFIG": "good.yaml"}))
    assert [f for f in via_env if f["rule"] == "input-starved"] == []


def test_advice_follows_the_configured_cap(tmp_path: Path) -> None:
    args = ("--demo", "starved-loader", "--once", "--json")
    write(tmp_path, "cap.yaml", "input_starved:\n  max_suggested_workers: 3\n")
    tuned = findings(cli("--config", "cap.yaml", *args, cwd=tmp_path))
    advice = next(f["advice"] for f in tuned if f["rule"] == "input-starved")
    assert "num_workers=3)" in advice[0]


# --- the docs keep up with the code ----------------------------------------------------------


def test_every_key_is_in_the_docs_config_table_with_its_default() -> None:
    text = (DOCS / "config.md").read_text(encoding="utf-8")
    for key, value in flatten(Thresholds.defaults()).items():
        row = re.search(rf"^\| `{re.escape(key)}` \|.*$", text, flags=re.MULTILINE)
        assert row, f"{key} missing from docs/config.md"
        cells = [c.strip() for c in row.group(0).strip("|").split("|")]
        assert cells[4] == f"{value:g}", f"{key}: docs say {cells[4]}, default is {value:g}"
