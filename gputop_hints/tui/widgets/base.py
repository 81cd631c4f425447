"""The one pattern every live widget follows: cached strips, rebuilt lazily.

A widget stores the data it was last given and rebuilds its lines once per
update, then serves them from the cache until the data, the size or the theme
changes. This is what keeps a 1 Hz refresh of a full 160x50 screen at a few
percent of one core (see DESIGN.md, "Performance notes").

Only what changed is repainted: when new data arrives on a widget that is on
screen, the new lines are compared with the cached ones and only the cells
that differ (from the first to the last changed cell of each line) are
refreshed, so a steady table row or an unchanged title costs no terminal
bytes at all -- what matters over a slow SSH link. A widget that is hidden,
not laid out yet, or whose size or style changed is rebuilt lazily on its next
paint and repainted whole, as before.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.dom import DOMNode
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from gputop_hints.tui.palette import Palette, on_base, palette_for


class StripWidget(Widget):
    """Base for widgets whose whole content is a list of cached :class:`Strip`."""

    DEFAULT_CSS = """
    StripWidget {
        height: 1;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Strip] = []
        self._built_for: Size | None = None
        self._dirty = True
        self._paint_size: Size | None = None
        """The content size while Textual paints the widget (see :meth:`render_lines`)."""
        self._rich_style_for: tuple[list[tuple[DOMNode, int]], Style] | None = None
        self._palette_for: tuple[Palette, Style, Palette] | None = None
        self._plain_for: tuple[list[tuple[DOMNode, int]], Color | None] | None = None
        """The background the app's line filters see, by the styles on the way up; None
        where the CSS adds anything around the lines (see :meth:`_plain_background`)."""
        self._styles_cache_used = False
        self._painted: dict[int, tuple[object, Strip]] = {}
        """Each line as last painted: the cached strip, and what the app's line filters
        made of it (see :meth:`render_lines`), for ``_painted_for``; at -1 the blank
        line below the content, by the style it was made with."""
        self._painted_for: tuple[object, ...] | None = None
        self.builds = 0
        """How many times the lines were rebuilt (for tests and profiling)."""
        self.lines_diffed = [0, 0, 0]
        """Lines compared after a rebuild on screen (for profiling, ``bench/tui_cost.py``):
        [kept -- the very strip drawn, from a row cache; rebuilt and the same as drawn;
        changed]. Only the second is work a key at display resolution would save."""

    def invalidate(self) -> None:
        """The data changed: repaint the cells that differ (or everything, lazily).

        On the active screen, with lines already built for the current size,
        the lines are rebuilt now and compared with the cached ones, and only
        the changed spans are refreshed. Otherwise the lines are rebuilt on the
        next paint and the whole widget is repainted.
        """
        size = self.size  # computed from the layout on each lookup: once here
        if self._dirty or not self._can_diff(size):
            self._dirty = True
            self.refresh()
            return
        old = self._lines
        new = self._build(size)
        width = size.width
        regions = []
        counts = self.lines_diffed
        for y in range(max(len(old), len(new))):
            before = old[y] if y < len(old) else None
            after = new[y] if y < len(new) else None
            if before is after:
                counts[0] += 1
                continue
            if before is None or after is None:
                counts[2] += 1
                regions.append(Region(0, y, width, 1))
                continue
            span = changed_span(before, after)
            if span is None:
                # The line drawn already stays, so what was cached on it (the app's
                # line filters, the crops) serves the next paint too.
                new[y] = before
                counts[1] += 1
                continue
            counts[2] += 1
            start, end = span
            regions.append(Region(start, y, max(1, end - start), 1))
        if regions:
            self.refresh(*regions)

    def _can_diff(self, size: Size) -> bool:
        """True when the painted lines are exactly the cached ones, for ``size`` (the
        widget's size now)."""
        if not self.is_mounted or not self.display or self._built_for != size:
            return False
        if size.width <= 0 or size.height <= 0:
            return False
        try:
            return self.screen is self.app.screen
        except Exception:  # no screen or app yet: mounting or shutting down
            return False

    @property
    def rich_style(self) -> Style:
        """Textual's ``rich_style``, computed again only when a style on the way up changed.

        It is made from the CSS of the widget and of every ancestor; each one's
        ``styles._cache_key`` changes with any of its rules (a theme switch, a new
        class, an inline style), as Textual's own ``visual_style`` cache relies on.
        """
        key = [(node, node.styles._cache_key) for node in self.ancestors_with_self]
        cached = self._rich_style_for
        if cached is not None and cached[0] == key:
            return cached[1]
        style = super().rich_style
        self._rich_style_for = (key, style)
        return style

    def _build(self, size: Size) -> list[Strip]:
        width, height = size
        base = self.rich_style
        palette = self.palette
        cached = self._palette_for
        if cached is not None and cached[0] is palette and cached[1] is base:
            on = cached[2]
        else:
            on = on_base(palette, base)
            self._palette_for = (palette, base, on)
        self._lines = self.build_lines(width, height, base, on)
        self._built_for = size
        self._dirty = False
        self.builds += 1
        return self._lines

    @property
    def palette(self) -> Palette:
        return palette_for(self.app)

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        """Return the widget's lines for the given size; subclasses override.

        ``palette`` already sits on ``base`` (the widget's CSS colour and background).
        """
        raise NotImplementedError

    def notify_style_update(self) -> None:
        # CSS changed (a new theme, a new class): colours must be looked up again.
        super().notify_style_update()
        self._dirty = True
        self._rich_style_for = None

    def _plain_background(self) -> Color | None:
        """The widget's background (under its ancestors') when its CSS draws nothing but
        the lines themselves -- no border, padding, outline, hatch, tint or opacity --
        else None. Computed again only when a style on the way up changed."""
        key = [(node, node.styles._cache_key) for node in self.ancestors_with_self]
        cached = self._plain_for
        if cached is not None and cached[0] == key:
            return cached[1]
        styles = self.styles
        plain = (
            not styles.gutter
            and not any(edge for edge, _ in styles.outline)
            and (not styles.has_rule("hatch") or styles.hatch == "none")
            and not styles.tint.a
            and styles.text_opacity == 1.0
            and self.opacity == 1.0
        )
        background = self.background_colors[1] if plain else None
        self._plain_for = (key, background)
        return background

    def render_lines(self, crop: Region) -> list[Strip]:
        """The cached lines, through the app's line filters, cropped to ``crop``.

        What Textual's styles cache would make of them where the CSS adds nothing
        around the lines, without a new :class:`Strip` per line and paint: an
        unchanged line is the same ``Strip`` tick after tick, so the filters'
        result cached on it serves every repaint (Textual repaints every widget
        under the union of the changed regions, whole, each tick)."""
        background = self._plain_background()
        if background is None or self.BLANK or self._hover_links():
            if not self._styles_cache_used:
                self._styles_cache_used = True
                self._styles_cache.clear()
            # One size lookup for all the lines Textual asks for now, not one per line.
            self._paint_size = self.size
            try:
                return super().render_lines(crop)
            finally:
                self._paint_size = None
        self._styles_cache_used = False
        size = self.region.size  # no border or padding: the content is the whole region
        if self._dirty or size != self._built_for:
            self._build(size)
        lines = self._lines
        width = size.width
        filters = tuple(self.app.get_line_filters())
        painted_for = (filters, background, width)
        if self._painted_for != painted_for:
            self._painted.clear()
            self._painted_for = painted_for
        painted = self._painted
        strips: list[Strip] = []
        append = strips.append
        blank: Strip | None = None
        for y in crop.line_range:
            if 0 <= y < len(lines):
                line = lines[y]
                done = painted.get(y)
                if done is not None and done[0] is line:
                    append(done[1])  # the line painted last time, through the same filters
                    continue
                if line.cell_length == width:
                    strip = line
                    for line_filter in filters:
                        strip = strip.apply_filter(line_filter, background)
                    painted[y] = (line, strip)
                    append(strip)
                    continue
                strip = line.adjust_cell_length(width, self._inner_style(background))
            elif y < size.height:
                if blank is None:
                    # As render_line pads; the same strip, filtered, while the style is.
                    style = self.rich_style
                    done = painted.get(-1)
                    if done is not None and done[0] is style:
                        blank = done[1]
                    else:
                        blank = Strip.blank(width, style)
                        for line_filter in filters:
                            blank = blank.apply_filter(line_filter, background)
                        painted[-1] = (style, blank)
                append(blank)
                continue
            else:
                strip = Strip.blank(width, self._inner_style(background))  # as Textual pads
            for line_filter in filters:
                strip = strip.apply_filter(line_filter, background)
            append(strip)
        if crop.column_span != (0, width):
            x1, x2 = crop.column_span
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips

    def _inner_style(self, background: Color) -> Style:
        base_background = self.background_colors[0]
        return self._styles_cache.get_inner_outer(base_background, background)[0].rich_style

    def _hover_links(self) -> bool:
        """Whether Textual would restyle a hovered link in the lines (it never is, here)."""
        if not self.auto_links:
            return False
        hover_style = self.hover_style
        return bool(hover_style._link_id and hover_style._meta and "@click" in hover_style.meta)

    def render_line(self, y: int) -> Strip:
        size = self._paint_size or self.size
        if self._dirty or size != self._built_for:
            self._build(size)
        if 0 <= y < len(self._lines):
            return self._lines[y]
        return Strip.blank(size.width, self.rich_style)

    def text_lines(self) -> list[str]:
        """The current lines as plain text (what a test or a screen reader sees)."""
        width, height = self.size
        if width <= 0 or height <= 0:
            return []
        return [self.render_line(y).text for y in range(height)]


def changed_span(before: Strip, after: Strip) -> tuple[int, int] | None:
    """The cells ``[start, end)`` where two strips of one line differ; None if equal.

    Compared segment by segment from both ends, so the span may be a little
    wider than the cells that really changed (never narrower).
    """
    old: list[Segment] = list(before)
    new: list[Segment] = list(after)
    if old == new:
        return None
    start = 0
    matched = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        start += cell_len(a.text)
        matched += 1
    end_old = before.cell_length
    end_new = after.cell_length
    limit = min(len(old), len(new)) - matched
    for i in range(1, limit + 1):
        a = old[-i]
        if a != new[-i]:
            break
        end_old -= cell_len(a.text)
        end_new -= cell_len(a.text)
    end = max(end_old, end_new)
    if end <= start:
        end = start + 1
    return start, end
