"""Theme files: the shipped ones are complete, broken ones are reported once and skipped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gputop_hints.sources.demo import DemoSource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.palette import build_palette
from gputop_hints.tui.themes import (
    REQUIRED_VARIABLES,
    THEME_COLOR_KEYS,
    ThemeError,
    load_theme_file,
    load_themes,
    repo_themes_dir,
)
from tests.support.paths import REPO

SHIPPED = ("dark", "light", "high-contrast", "monochrome")


@pytest.fixture
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    themes = tmp_path / "gputop-hints" / "themes"
    themes.mkdir(parents=True)
    return themes


def test_every_shipped_theme_loads_with_every_variable(user_config: Path) -> None:
    loaded = load_themes()
    assert loaded.errors == []
    assert loaded.names[0] == "dark"
    assert set(SHIPPED) <= set(loaded.names)
    for name in SHIPPED:
        theme = loaded.themes[name]
        for key in THEME_COLOR_KEYS:
            assert getattr(theme, key), (name, key)
        for variable in REQUIRED_VARIABLES:
            assert variable in theme.variables, (name, variable)
        build_palette(theme)  # every colour parses into a style


def test_shipped_theme_files_are_the_repo_ones() -> None:
    names = {p.stem for p in repo_themes_dir().glob("*.yaml")}
    assert set(SHIPPED) <= names


def _write_valid(path: Path, name: str) -> None:
    text = (repo_themes_dir() / "dark.yaml").read_text(encoding="utf-8")
    path.write_text(text.replace("name: dark", f"name: {name}"), encoding="utf-8")


async def test_a_broken_user_theme_is_reported_once_and_skipped(user_config: Path) -> None:
    (user_config / "broken.yaml").write_text("name: broken\nprimary: [not, a, colour\n")
    (user_config / "incomplete.yaml").write_text("name: incomplete\nprimary: '#123456'\n")
    _write_valid(user_config / "mine.yaml", "mine")

    loaded = load_themes()
    assert set(SHIPPED) | {"mine"} <= set(loaded.names)
    assert "broken" not in loaded.names and "incomplete" not in loaded.names
    assert sorted(e.path.name for e in loaded.errors) == ["broken.yaml", "incomplete.yaml"]
    broken = next(e for e in loaded.errors if e.path.name == "broken.yaml")
    assert "YAML" in broken.message and "line" in broken.message
    assert str(user_config / "broken.yaml") in str(broken)

    app = GputopApp(DemoSource("healthy", gpus=1, processes=1), autostart=False)
    assert [e.path.name for e in app.theme_errors] == ["broken.yaml", "incomplete.yaml"]
    shown: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        app.ingest(app.source.sample())
        await pilot.pause()
        shown = [n.message for n in app._notifications]
        assert "mine" in app.theme_names
    assert len(shown) == 1  # one notification naming both files
    assert "broken.yaml" in shown[0] and "incomplete.yaml" in shown[0]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t.replace("  metric-sm:", "  metric-smm:"), "metric-sm"),
        (lambda t: t.replace('background: "#111418"', 'background: "not-a-colour"'), "background"),
        (lambda t: t.replace("dark: true", "dark: yes-please"), "dark"),
        (lambda t: t.replace("primary:", "primray:"), "did you mean 'primary'"),
        (lambda t: t.replace("name: dark\n", ""), "name"),
    ],
)
def test_validation_errors_name_the_file_and_the_key(
    tmp_path: Path, edit: object, expected: str
) -> None:
    text = (repo_themes_dir() / "dark.yaml").read_text(encoding="utf-8")
    path = tmp_path / "bad.yaml"
    path.write_text(edit(text), encoding="utf-8")  # type: ignore[operator]
    with pytest.raises(ThemeError) as info:
        load_theme_file(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_a_user_theme_may_restyle_a_shipped_one(user_config: Path) -> None:
    text = (repo_themes_dir() / "dark.yaml").read_text(encoding="utf-8")
    (user_config / "dark.yaml").write_text(text.replace("#5FD38D", "#00FF00"))
    loaded = load_themes()
    assert loaded.themes["dark"].variables["metric-sm"] == "#00FF00"
    assert loaded.sources["dark"] == user_config / "dark.yaml"


_HEX = re.compile(r"#[0-9a-fA-F]{3,8}\b")


def test_no_hex_colours_in_tui_code_or_css() -> None:
    tui = REPO / "gputop_hints" / "tui"
    offenders = []
    for path in [*tui.rglob("*.py"), *tui.rglob("*.tcss")]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _HEX.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []
