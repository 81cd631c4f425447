"""Rich styles for the line-API widgets, derived from the current Textual theme.

Widgets that build their own :class:`~textual.strip.Strip` objects cannot use
``$variables`` in CSS, so they read the theme through a :class:`Palette`: the
theme's variables (``metric-sm`` ...) turned into Rich styles once per theme,
not once per frame. Colours come only from the theme -- nothing is hard-coded
here -- and a theme that lacks one of our variables falls back to one of
Textual's standard ones, so a stock Textual theme still draws.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import lru_cache

from rich.style import Style
from textual.app import App
from textual.color import Color, ColorParseError
from textual.theme import Theme

_FALLBACK: dict[str, str] = {
    "metric-sm": "success",
    "metric-mem": "secondary",
    "metric-vram": "accent",
    "metric-pcie-rx": "primary",
    "metric-pcie-tx": "secondary",
    "metric-cpu": "warning",
    "metric-workers": "accent",
    "core-allowed": "primary",
    "bar-track": "foreground-disabled",
    "severity-info": "primary",
    "severity-warning": "warning",
    "severity-critical": "error",
}


@dataclass(frozen=True, slots=True)
class Palette:
    """Foreground styles (plus a few badges with their own background)."""

    theme_name: str
    text: Style
    muted: Style
    title: Style
    label: Style
    sm: Style
    mem: Style
    vram: Style
    rx: Style
    tx: Style
    cpu: Style
    workers: Style
    core_allowed: Style
    track: Style
    info: Style
    warning: Style
    critical: Style
    badge_demo: Style
    badge_paused: Style
    badge_error: Style
    selected: Style
    header_accent: Style
    title_bar: Style
    """Background of a panel's title row."""


def _variables(theme: Theme) -> dict[str, str]:
    return {**theme.to_color_system().generate(), **theme.variables}


def build_palette(theme: Theme) -> Palette:
    variables = _variables(theme)
    background = Color.parse(variables.get("background", "black"))

    def color(name: str) -> Color:
        value = variables.get(name)
        if value is None and name in _FALLBACK:
            value = variables.get(_FALLBACK[name])
        try:
            parsed = Color.parse(value) if value is not None else Color.parse("white")
        except ColorParseError:
            parsed = Color.parse(variables.get("foreground", "white"))
        return background + parsed

    def fg(name: str, bold: bool | None = None) -> Style:
        return Style(color=color(name).rich_color, bold=bold)

    def badge(name: str) -> Style:
        return Style(color=background.rich_color, bgcolor=color(name).rich_color, bold=True)

    return Palette(
        theme_name=theme.name,
        text=fg("foreground"),
        muted=fg("foreground-muted"),
        title=fg("foreground", bold=True),
        label=fg("foreground-muted", bold=True),
        sm=fg("metric-sm"),
        mem=fg("metric-mem"),
        vram=fg("metric-vram"),
        rx=fg("metric-pcie-rx"),
        tx=fg("metric-pcie-tx"),
        cpu=fg("metric-cpu"),
        workers=fg("metric-workers"),
        core_allowed=fg("core-allowed", bold=True),
        track=fg("bar-track"),
        info=fg("severity-info"),
        warning=fg("severity-warning"),
        critical=fg("severity-critical", bold=True),
        badge_demo=badge("severity-warning"),
        badge_paused=badge("severity-info"),
        badge_error=badge("severity-critical"),
        selected=Style(
            color=color("block-cursor-foreground").rich_color,
            bgcolor=color("block-cursor-background").rich_color,
            bold=True,
        ),
        header_accent=fg("accent", bold=True),
        title_bar=Style(bgcolor=color("panel").rich_color),
    )


_cache: dict[int, tuple[Theme, Palette]] = {}


def palette_for(app: App[object]) -> Palette:
    """The palette of the app's current theme (built once per theme object)."""
    theme = app.current_theme
    cached = _cache.get(id(theme))
    if cached is not None and cached[0] is theme:
        return cached[1]
    palette = build_palette(theme)
    _cache[id(theme)] = (theme, palette)
    return palette


_RAW_FIELDS = frozenset({"theme_name", "title_bar"})


@lru_cache(maxsize=64)
def on_base(palette: Palette, base: Style) -> Palette:
    """The palette with every style laid over a widget's own style (its background).

    Done once per (theme, widget style) instead of once per drawn segment.
    ``title_bar`` stays a bare background, to be laid over the others.
    """
    combined = {
        f.name: base + getattr(palette, f.name)
        for f in fields(palette)
        if f.name not in _RAW_FIELDS
    }
    return replace(palette, **combined)
