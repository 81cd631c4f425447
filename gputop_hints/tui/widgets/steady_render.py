"""The last paint of a widget that draws only its CSS, given again while nothing changed.

Textual's compositor repaints every widget under the union of the changed regions,
whole, each tick: the screen's 50 background lines, the GPU area's, the footer's,
each through Textual's styles cache and the app's line filters, though none of
them changed. :class:`SteadyRender` keeps the lines a paint gave and hands them
back when the crop, the size, every style on the way up, the line filters and the
very strips in the widget's styles cache are what they were then, and no line of
it is dirty; otherwise Textual renders as it would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

if TYPE_CHECKING:
    _Base = Widget
else:
    # Not a Widget at run time: a DOM class among a widget's bases is a CSS type of
    # its own and moves where Textual ranks the default CSS of the classes around it.
    _Base = object


class SteadyRender(_Base):
    """Mixed in before a Textual widget class (``class X(SteadyRender, Screen)``)."""

    _steady: tuple[tuple[Any, ...], list[Strip]] | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        try:
            return self._steady_lines(crop)
        except AttributeError:
            # Textual's styles cache laid out otherwise (pyproject allows textual
            # 0.86 to 8): paint as Textual does, never fail a paint for a saving.
            self._steady = None
            return super().render_lines(crop)

    def _steady_lines(self, crop: Region) -> list[Strip]:
        cache = self._styles_cache
        if self.BLANK or cache._dirty_lines:
            self._steady = None
            return super().render_lines(crop)
        if self.auto_links:
            hover_style = self.hover_style
            if hover_style._link_id and hover_style._meta and "@click" in hover_style.meta:
                self._steady = None
                return super().render_lines(crop)
        app = self.app
        cached = cache._cache
        drawn = tuple(cached.get(y) for y in crop.line_range)
        key = (
            crop,
            self.region.size,
            cache._width,
            [(node, node.styles._cache_key) for node in self.ancestors_with_self],
            tuple(self.get_line_filters()),
            self._border_title,
            self._border_subtitle,
            app.ansi_theme,
            app.native_ansi_color,
        )
        steady = self._steady
        if (
            steady is not None
            and None not in drawn
            and steady[0][:-1] == key
            and _same(steady[0][-1], drawn)
        ):
            return list(steady[1])
        strips = super().render_lines(crop)
        # What the styles cache holds now (the lines just rendered included).
        after = tuple(cached.get(y) for y in crop.line_range)
        self._steady = None if None in after else ((*key, after), list(strips))
        return strips


def _same(before: tuple[Strip | None, ...], now: tuple[Strip | None, ...]) -> bool:
    """Whether two rows of strips are the very same objects, position by position."""
    return len(before) == len(now) and all(a is b for a, b in zip(before, now, strict=True))
