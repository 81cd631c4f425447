"""Themes: YAML files validated into :class:`textual.theme.Theme` objects.

Where themes come from, in order (a later file with the same ``name``
replaces an earlier one, so a user can restyle ``dark``):

1. the themes shipped inside the package (``gputop_hints/_data/themes``, put
   there by the wheel build), or, in a source checkout / editable install where
   that folder does not exist, the repository's top-level ``themes/``;
2. the user's ``$XDG_CONFIG_HOME/gputop-hints/themes/*.yaml``
   (``~/.config/gputop-hints/themes`` by default).

A file that cannot be read or fails validation is skipped and described in
:attr:`ThemeSet.errors` -- the app shows those once as a notification and the
CLI can print them -- so one broken user theme never takes the monitor down.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from textual.color import Color, ColorParseError
from textual.css.tokenize import tokenize_values
from textual.css.tokenizer import TokenError
from textual.theme import Theme

from gputop_hints.typed_yaml import excerpt

DEFAULT_THEME = "dark"
MAX_THEME_BYTES = 64 * 1024
"""A bigger theme file is skipped unread: the shipped ones are about 1 KB."""
MONOCHROME_THEME = "monochrome"

THEME_COLOR_KEYS: tuple[str, ...] = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "success",
    "warning",
    "error",
)
"""Textual theme fields every theme file must give, as colours."""

REQUIRED_VARIABLES: tuple[str, ...] = (
    "metric-sm",
    "metric-mem",
    "metric-vram",
    "metric-pcie-rx",
    "metric-pcie-tx",
    "metric-cpu",
    "metric-workers",
    "core-allowed",
    "bar-track",
    "severity-info",
    "severity-warning",
    "severity-critical",
)
"""The monitor's own colours, read by widgets as ``$metric-sm`` and friends."""

_OPTIONAL_KEYS = ("boost", "description", "author")
_ALL_KEYS = ("name", "dark", "variables", *THEME_COLOR_KEYS, *_OPTIONAL_KEYS)


class ThemeError(ValueError):
    """A theme file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class ThemeLoadError:
    """One theme file that was skipped, and why."""

    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class ThemeSet:
    """The themes that loaded (in cycling order) and the files that did not."""

    themes: dict[str, Theme] = field(default_factory=dict)
    errors: list[ThemeLoadError] = field(default_factory=list)
    sources: dict[str, Path] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return list(self.themes)


def packaged_themes_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "_data" / "themes"


def repo_themes_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "themes"


def user_themes_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    config_home = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "gputop-hints" / "themes"


def builtin_themes_dir() -> Path:
    """The packaged themes when installed from a wheel, else the checkout's ``themes/``."""
    packaged = packaged_themes_dir()
    return packaged if packaged.is_dir() else repo_themes_dir()


def _suggest(key: object, choices: Iterable[str]) -> str:
    if not isinstance(key, str) or len(key) > 64:
        return ""
    close = difflib.get_close_matches(key, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_color(path: Path, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ThemeError(f"{path}: {excerpt(key)} must be a colour string, got {excerpt(value)}")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(f"{path}: {excerpt(key)} is not a colour: {excerpt(value)}") from None
    return value


def _check_css_value(path: Path, key: str, value: str) -> None:
    """A variable the monitor does not define itself is handed to Textual's CSS as it
    is: refuse one that would not parse there (it stopped the app at start, or when
    ``t`` cycled to the theme, with "Error in stylesheet")."""
    try:
        tokenize_values({"value": value})
    except TokenError as exc:
        raise ThemeError(
            f"{path}: {key}: {excerpt(value)} is not a CSS value ({exc})"
        ) from None


def theme_from_mapping(data: Any, path: Path) -> Theme:
    """Validate one parsed theme file and build the Textual theme."""
    if not isinstance(data, Mapping):
        raise ThemeError(f"{path}: a theme file must be a mapping of keys to values")
    for key in data:
        if key not in _ALL_KEYS:
            raise ThemeError(f"{path}: unknown key {excerpt(key)}{_suggest(key, _ALL_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ThemeError(f"{path}: missing 'name' (a non-empty string)")
    missing = [k for k in (*THEME_COLOR_KEYS, "dark", "variables") if k not in data]
    if missing:
        raise ThemeError(f"{path}: missing key(s): {', '.join(missing)}")
    dark = data["dark"]
    if not isinstance(dark, bool):
        raise ThemeError(f"{path}: 'dark' must be true or false, got {excerpt(dark)}")
    colors = {k: _check_color(path, k, data[k]) for k in THEME_COLOR_KEYS}
    boost = data.get("boost")
    if boost is not None:
        _check_color(path, "boost", boost)
    variables = data["variables"]
    if not isinstance(variables, Mapping):
        raise ThemeError(f"{path}: 'variables' must be a mapping of names to colours")
    missing_vars = [v for v in REQUIRED_VARIABLES if v not in variables]
    if missing_vars:
        hint = ""
        if len(missing_vars) == 1:
            hint = _suggest(missing_vars[0], (str(k) for k in variables))
            hint = hint.replace("did you mean", "found") if hint else ""
        raise ThemeError(f"{path}: missing variable(s): {', '.join(missing_vars)}{hint}")
    checked: dict[str, str] = {}
    for key, value in variables.items():
        if not isinstance(value, str):
            raise ThemeError(
                f"{path}: variable {excerpt(key)} must be a string, got {excerpt(value)}"
            )
        if key in REQUIRED_VARIABLES:
            _check_color(path, f"variables.{key}", value)
        else:
            _check_css_value(path, f"variables.{key}", value)
        checked[str(key)] = value
    return Theme(
        name=name.strip(),
        primary=colors["primary"],
        secondary=colors["secondary"],
        accent=colors["accent"],
        foreground=colors["foreground"],
        background=colors["background"],
        surface=colors["surface"],
        panel=colors["panel"],
        success=colors["success"],
        warning=colors["warning"],
        error=colors["error"],
        boost=boost,
        dark=dark,
        variables=checked,
    )


def load_theme_file(path: Path) -> Theme:
    """Read and validate one YAML theme; :class:`ThemeError` says what is wrong."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_THEME_BYTES + 1)
    except OSError as exc:
        raise ThemeError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_THEME_BYTES:
        raise ThemeError(f"{path}: too big for a theme (more than {MAX_THEME_BYTES // 1024} KB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ThemeError(f"{path}: not UTF-8 text (byte {exc.start + 1} is not)") from None
    try:
        parsed = yaml.safe_load(text)
    except RecursionError:
        raise ThemeError(f"{path}: nested too deeply to be a theme") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ThemeError(f"{path}: not valid YAML{where}: {problem}") from None
    return theme_from_mapping(parsed, path)


def _theme_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def load_themes(
    builtin_dir: Path | None = None,
    user_dir: Path | None = None,
) -> ThemeSet:
    """Load the shipped themes, then the user's, collecting (not raising) errors.

    The shipped ones come first in cycling order, ``dark`` leading; user themes
    follow in file-name order.
    """
    result = ThemeSet()
    builtin = _theme_files(builtin_dir or builtin_themes_dir())
    builtin.sort(key=lambda p: (p.stem != DEFAULT_THEME, p.name))
    for path in (*builtin, *_theme_files(user_dir or user_themes_dir())):
        try:
            theme = load_theme_file(path)
        except ThemeError as exc:
            result.errors.append(ThemeLoadError(path, str(exc).removeprefix(f"{path}: ")))
            continue
        result.themes[theme.name] = theme
        result.sources[theme.name] = path
    return result


@dataclass(frozen=True, slots=True)
class ThemeChoice:
    """The theme the monitor opens with, what ``t`` cycles through, and what to tell the user."""

    name: str
    cycle: list[str]
    """Theme names ``t`` steps through (only monochrome when colours are off)."""
    notes: list[str]
    """Skipped theme files and an unknown theme name, said once at start-up."""


def choose_theme(theme_set: ThemeSet, wanted: str, color: bool) -> ThemeChoice:
    """The theme to show: ``wanted`` if it loaded, else ``dark``, else Textual's own.

    Without colour (NO_COLOR, ``--no-color``) the monochrome theme is the only
    one, so shapes, not hues, carry meaning.
    """
    notes = [f"Theme skipped: {error}" for error in theme_set.errors]
    if color:
        cycle = theme_set.names
    else:
        cycle = [name for name in theme_set.names if name == MONOCHROME_THEME]
        wanted = MONOCHROME_THEME
    if wanted not in theme_set.themes:
        if theme_set.themes:
            notes.append(f"Unknown theme {wanted!r}; available: {', '.join(theme_set.names)}")
        wanted = DEFAULT_THEME if DEFAULT_THEME in theme_set.themes else "textual-dark"
    return ThemeChoice(wanted, cycle, notes)
