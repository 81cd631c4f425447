"""Textual's ANSI-to-truecolor line filter, without rebuilding lines it leaves as they are.

Textual runs :class:`textual.filter.ANSIToTruecolor` over every line of every
repaint: it makes a new :class:`~rich.segment.Segment` for each segment, even where
the style it gives back is the one it was given -- a style whose colours are
already truecolor (or none) and that is not dim. Every theme of this monitor
draws in truecolor, so that is nearly every line, ~0.6 ms a tick at 8 GPUs x 64
processes. :class:`SkipTruecolor` first asks whether the line has anything the
filter would change; a style's answer is worked out once and cached. Only where
every segment's style is unchanged by the filter and no segment carries control
codes (which the filter drops) is the line given back as it came; otherwise
Textual's own ``apply`` runs. What is drawn is therefore the same by construction.

:func:`_unchanged` mirrors ``ANSIToTruecolor.truecolor_style`` of Textual 8, so the
filter is swapped in only there (:data:`TEXTUAL_MAJOR`); elsewhere Textual's stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.filter import ANSIToTruecolor, LineFilter

from gputop_hints.tui.textual_version import textual_major

if TYPE_CHECKING:
    from rich.segment import Segment
    from rich.style import Style
    from rich.terminal_theme import TerminalTheme
    from textual.color import Color


TEXTUAL_MAJOR = 8
"""The Textual major version whose ``truecolor_style`` :func:`_unchanged` was checked against."""


def _unchanged(style: Style) -> bool:
    """Whether :meth:`ANSIToTruecolor.truecolor_style` gives ``style`` back as it is,
    whatever the background: no colour without a truecolor triplet, and not dim
    (a dim colour is blended into the background)."""
    color = style.color
    bgcolor = style.bgcolor
    return (
        (color is None or color.triplet is not None)
        and (bgcolor is None or bgcolor.triplet is not None)
        and not (style.dim and color is not None)
    )


class SkipTruecolor(ANSIToTruecolor):
    """:class:`~textual.filter.ANSIToTruecolor` that gives a line it would not change
    back untouched (the same list, so no new segments)."""

    def __init__(self, terminal_theme: TerminalTheme, enabled: bool = True) -> None:
        super().__init__(terminal_theme, enabled=enabled)
        self._plain: dict[int, tuple[Style, bool]] = {}
        """Per style, by ``id`` (``Style.__hash__`` is a Python call; the style is held
        here, so its ``id`` is not reused while it is in): the style and whether the
        filter leaves it as it is. Styles are few and shared."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        plain = self._plain
        for _text, style, control in segments:
            if control is not None:
                return super().apply(segments, background)
            if style is None:
                continue
            known = plain.get(id(style))
            if known is None:
                if len(plain) >= 4096:  # a bound, like Textual's lru_cache
                    plain.clear()
                known = plain[id(style)] = (style, _unchanged(style))
            if not known[1]:
                return super().apply(segments, background)
        return segments


def use_skip_truecolor(filters: list[LineFilter]) -> None:
    """Replace Textual's ANSIToTruecolor in an app's ``_filters`` (in place) with a
    :class:`SkipTruecolor` of the same theme and on/off state (on Textual 8 only)."""
    if textual_major() != TEXTUAL_MAJOR:
        return
    for index, line_filter in enumerate(filters):
        if type(line_filter) is ANSIToTruecolor:
            filters[index] = SkipTruecolor(
                line_filter._terminal_theme,  # Textual 8's attribute
                enabled=line_filter.enabled,
            )
