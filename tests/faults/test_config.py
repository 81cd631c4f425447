"""Fault matrix, config and themes: hostile or mistaken YAML given as thresholds or a theme.

Config files go through the real command line (``--demo --once``), theme files
through the loader the monitor starts with; both must end in a message that
names the file and the problem -- never a traceback, never the file's content.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputop_hints.hints.config import MAX_CONFIG_BYTES, load_file
from gputop_hints.tui.themes import builtin_themes_dir, load_themes


def once(config: Path) -> subprocess.CompletedProcess[str]:
    """``gputop-hints --demo --once`` with ``config`` named by $GPUTOP_HINTS_CONFIG."""
    env = dict(os.environ, GPUTOP_HINTS_CONFIG=str(config))
    return subprocess.run(
        [sys.executable, "-m", "gputop_hints", "--demo", "--once"],
        capture_output=True,
        text=True,
        timeout=20,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def refused(config: Path) -> str:
    """The message for a config that must be refused: exit 2, no traceback, file named."""
    result = once(config)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert str(config) in result.stderr
    return result.stderr


@pytest.mark.parametrize(
    "value",
    ["!foo 3", "!!python/name:os.system 3", "!!python/object/apply:os.system ['true']"],
    ids=["unknown-tag", "python-name", "python-apply"],
)
def test_a_yaml_tag_in_a_config_is_refused(tmp_path: Path, value: str) -> None:
    """A config value with !foo or a !!python tag: refused naming line and key, exit 2,
    nothing run, no traceback."""
    path = tmp_path / "c.yaml"
    path.write_text(f"general:\n  window_s: {value}\n")
    message = refused(path)
    assert f"{path}:2: general.window_s:" in message


def test_a_nul_byte_in_a_config_is_refused(tmp_path: Path) -> None:
    """A config with a NUL byte: refused as not valid YAML, exit 2, no traceback."""
    path = tmp_path / "c.yaml"
    path.write_bytes(b"general:\n  window_s: \x00\n")
    assert "not valid YAML" in refused(path)


def test_a_huge_config_is_refused_unread(tmp_path: Path) -> None:
    """A config far bigger than any real one (a long list under a valid key): refused
    as too big, exit 2, no traceback."""
    path = tmp_path / "c.yaml"
    with open(path, "w") as f:
        f.write("general:\n  window_s:\n")
        f.write("  - 1\n" * (MAX_CONFIG_BYTES // 4))
    assert "too big" in refused(path)


def test_a_file_that_is_not_a_config_is_never_echoed(tmp_path: Path) -> None:
    """A shadow-like file named as the config: refused, exit 2, and no line (nor hash)
    of it is printed."""
    path = tmp_path / "shadow"
    path.write_text(
        "root:$6$saltsalt$c2VjcmV0aGFzaHZhbHVl:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"
    )
    message = refused(path)
    assert "$6$" not in message and "c2VjcmV0" not in message and "root:" not in message


def test_a_secret_value_is_quoted_only_as_a_short_excerpt(tmp_path: Path) -> None:
    """A token where a number belongs: refused naming the key, quoting at most a few
    characters of it, exit 2."""
    token = "ghp_" + "A1b2C3d4E5" * 4
    path = tmp_path / "c.yaml"
    path.write_text(f"general:\n  window_s: {token}\n")
    message = refused(path)
    assert "general.window_s" in message and token not in message
    assert token[:20] not in message


@pytest.mark.parametrize("where", ["file", "directory"])
def test_a_config_others_can_write_warns_and_still_loads(tmp_path: Path, where: str) -> None:
    """A world-writable config file, or one in a world-writable directory: a warning on
    stderr, the config still used, exit 0."""
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "c.yaml"
    path.write_text("general:\n  window_s: 30\n")
    (path if where == "file" else folder).chmod(0o777 if where == "directory" else 0o666)
    result = once(path)
    assert result.returncode == 0, result.stderr
    assert "warning" in result.stderr and "writable by every user" in result.stderr
    assert str(path) in result.stderr


@pytest.mark.parametrize(("written", "value"), [("1e2", 100.0), ("1.0e2", 100.0), ("1_00", 100)])
def test_number_forms_people_write_are_accepted(tmp_path: Path, written: str, value: float) -> None:
    """window_s written as 1e2, 1.0e2 or 1_00 (YAML 1.1 reads the first two as text):
    read as the number 100."""
    path = tmp_path / "c.yaml"
    path.write_text(f"general:\n  window_s: {written}\n")
    path.chmod(0o600)
    assert load_file(path).general.window_s == value


def _theme_dir(tmp_path: Path, content: bytes) -> Path:
    user = tmp_path / "themes"
    user.mkdir()
    (user / "mine.yaml").write_bytes(content)
    return user


def test_a_non_utf8_theme_is_skipped_with_a_notice(tmp_path: Path) -> None:
    """A Latin-1 theme file among the user's themes: skipped with a notice naming it,
    the shipped themes still load."""
    user = _theme_dir(tmp_path, b"name: caf\xe9\ndark: true\n")
    themes = load_themes(builtin_themes_dir(), user)
    assert "dark" in themes.names
    assert [e.path.name for e in themes.errors] == ["mine.yaml"]
    assert "UTF-8" in themes.errors[0].message


def test_an_alias_bomb_theme_is_skipped_with_a_short_notice(tmp_path: Path) -> None:
    """A theme whose colour is a billion-laughs alias bomb: skipped with a short notice,
    the value never spelled out."""
    levels = ["&l0 [x, x, x, x, x, x, x, x, x]"] + [
        f"&l{level} [{', '.join([f'*l{level - 1}'] * 9)}]" for level in range(1, 9)
    ]
    shipped = (builtin_themes_dir() / "dark.yaml").read_text()
    bomb = shipped.replace("\ndark: true\n", f"\ndark: [{', '.join(levels)}]\n")
    assert bomb != shipped
    user = _theme_dir(tmp_path, bomb.encode())
    themes = load_themes(builtin_themes_dir(), user)
    assert [e.path.name for e in themes.errors] == ["mine.yaml"]
    assert len(themes.errors[0].message) < 300


def test_a_huge_theme_is_skipped_unread(tmp_path: Path) -> None:
    """A theme file of a megabyte: skipped as too big, the shipped themes still load."""
    user = _theme_dir(tmp_path, b"# padding\n" * 100_000)
    themes = load_themes(builtin_themes_dir(), user)
    assert "dark" in themes.names
    assert "too big" in themes.errors[0].message


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("9" * 5000, "5000 characters"),
        ("1" + "0" * 30, "out of range"),
        ("1" + "0" * 400, "401 characters"),  # past what a float holds
    ],
    ids=["5000-digit-int", "int-1e30", "int-too-big-for-a-float"],
)
@pytest.mark.parametrize("how", ["check", "config", "env"])
def test_absurd_numbers_in_a_config_are_refused_naming_line_and_key(
    tmp_path: Path, value: str, shown: str, how: str
) -> None:
    """A 5,000-digit integer, or one too large for a float, as a threshold, through
    config --check, --config and $GPUTOP_HINTS_CONFIG: refused naming line and key, exit 2."""
    path = tmp_path / "c.yaml"
    path.write_text(f"general:\n  window_s: {value}\n")
    result = _entry_point(how, path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{path}:2: general.window_s:" in result.stderr and shown in result.stderr


@pytest.mark.parametrize("depth", [1_000, 20_000, 50_000])
@pytest.mark.parametrize("how", ["check", "config", "env"])
def test_a_config_nested_thousands_deep_is_refused(tmp_path: Path, depth: int, how: str) -> None:
    """YAML nested 1,000 to 50,000 deep through config --check, --config and
    $GPUTOP_HINTS_CONFIG: refused as nested too deeply, exit 2, no traceback."""
    path = tmp_path / "c.yaml"
    path.write_text("general: " + "[" * depth + "]" * depth + "\n")
    result = _entry_point(how, path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "nested too deeply" in result.stderr


def _entry_point(how: str, path: Path) -> subprocess.CompletedProcess[str]:
    if how == "env":
        return once(path)
    args = ["config", "--check", str(path)] if how == "check" else ["--config", str(path)]
    if how == "config":
        args += ["--demo", "--once"]
    env = {k: v for k, v in os.environ.items() if k != "GPUTOP_HINTS_CONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "gputop_hints", *args],
        capture_output=True,
        text=True,
        timeout=20,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_a_theme_with_a_variable_css_cannot_parse_is_skipped(tmp_path: Path) -> None:
    """A theme whose extra variable is not CSS ("not a colour {"): skipped with a notice
    naming the variable; the shipped themes load (it used to stop the TUI)."""
    shipped = (builtin_themes_dir() / "dark.yaml").read_text()
    bad = shipped.replace("name: dark", "name: broken").replace(
        "variables:\n", 'variables:\n  footer-key-foreground: "not a colour {"\n'
    )
    themes = load_themes(builtin_themes_dir(), _theme_dir(tmp_path, bad.encode()))
    assert "broken" not in themes.names and "dark" in themes.names
    assert "variables.footer-key-foreground" in themes.errors[0].message


def test_a_theme_nested_thousands_deep_is_skipped(tmp_path: Path) -> None:
    """A theme nested 3,000 deep: skipped as nested too deeply (it raised RecursionError)."""
    user = _theme_dir(tmp_path, ("name: deep\nvariables: " + "[" * 3000 + "]" * 3000).encode())
    themes = load_themes(builtin_themes_dir(), user)
    assert "dark" in themes.names
    assert "nested too deeply" in themes.errors[0].message


def test_config_check_lists_every_problem_of_a_file(tmp_path: Path) -> None:
    """config --check of a file with four mistakes in two sections: all four listed with
    their lines, in file order, exit 2 (it stopped at the first)."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "general:\n  window_s: 9999\n  bogus: 1\ninput_starved:\n  min_gaps: -5\n  nope: 2\n"
    )
    result = _entry_point("check", path)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if f"{path}:" in line]
    assert [line.split(f"{path}:")[1].split(":")[0] for line in lines] == ["2", "3", "5", "6"]
