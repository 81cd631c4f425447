"""Write only the changed cells of a line, not everything to their left.

Textual repaints a dirty region by writing, for each screen line, every widget
"chop" the region touches from the chop's left edge -- the region's right end
is honoured, its left end is not (``ChopsUpdate.render_segments``; its own
source says "TODO: crop to x extents"). Our widgets refresh exactly the cells
that changed (``StripWidget.invalidate``), so a GPU panel whose value column
changed would still resend its whole sparkline every tick.

:func:`install` wraps that method so a chop is also cut on the left, but only
where the cut falls on a segment boundary: a cut through a wide character
(CJK in a command line) would leave half of it on screen, so there the chop is
written from its left edge, as Textual does. If Textual's internals ever change
shape the wrapper steps aside and Textual's own method runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.control import Control
from textual.strip import Strip

_installed = False


def _left_cut(strip: Strip, offset: int) -> int:
    """The largest segment boundary at or before ``offset`` cells into ``strip``."""
    position = 0
    for segment in strip:
        width = cell_len(segment.text)
        if position + width > offset:
            return position
        position += width
    return position


def render_segments(update: Any, console: Console) -> str:
    """``ChopsUpdate.render_segments`` with each chop cut to the span on both sides."""
    move_to = Control.move_to
    chops = update.chops
    chop_ends = update.chop_ends
    last_y = update.spans[-1][0]
    sequences: list[str] = []
    append = sequences.append
    for y, x1, x2 in update.spans:
        line = chops[y]
        ends = chop_ends[y]
        for end, (x, strip) in zip(ends, line.items(), strict=False):
            if strip is None or x > x2 or end <= x1:
                continue
            start = x
            if x < x1:
                start = x + _left_cut(strip, x1 - x)
            if start == x and end <= x2:
                append(move_to(x, y).segment.text)
                append(strip.render(console))
                continue
            cropped = strip.crop(start - x, min(end, x2) - x)
            append(move_to(start, y).segment.text)
            append(cropped.render(console))
        if y != last_y:
            append("\n")
    return "".join(sequences)


def install() -> bool:
    """Patch Textual's partial-update writer once; False if it is not there to patch."""
    global _installed
    if _installed:
        return True
    try:
        from textual._compositor import ChopsUpdate
    except ImportError:
        return False
    original: Callable[[Any, Console], str] | None = getattr(ChopsUpdate, "render_segments", None)
    if original is None:
        return False

    def patched(self: Any, console: Console) -> str:
        try:
            return render_segments(self, console)
        except (AttributeError, TypeError, ValueError, IndexError):
            return original(self, console)

    patched.__doc__ = render_segments.__doc__
    ChopsUpdate.render_segments = patched  # type: ignore[method-assign]
    _installed = True
    return True
