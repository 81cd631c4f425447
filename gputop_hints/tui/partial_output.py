"""Write only the changed cells of a line, not everything to their left.

Textual repaints a dirty region by writing, for each screen line, every widget
"chop" the region touches from the chop's left edge -- the region's right end
is honoured, its left end is not (``ChopsUpdate.render_segments``; its own
source says "TODO: crop to x extents"). Our widgets refresh exactly the cells
that changed (``StripWidget.invalidate``), so a GPU panel whose value column
changed would still resend its whole sparkline every tick.

:func:`install` replaces that method so a chop is also cut on the left, but
only where the cut falls on a segment boundary: a cut through a wide character
(CJK in a command line) would leave half of it on screen, so there the chop is
written from its left edge, as Textual does. The result on the terminal must be
cell for cell what Textual's own method draws; ``tests/tui/test_partial_output.py``
renders random screens through a terminal emulator both ways and compares them.

The replacement is the app's, for as long as it runs: the app installs it on
mount and uninstalls it on unmount (nested apps count), so importing or
building the app changes nothing in Textual. It is installed only on the Textual
major version it was written for (the dependency pin says the same) and only
when ``ChopsUpdate`` still takes the chops, spans and chop ends it reads;
otherwise Textual's own method stays, and so it does if the replacement ever
raises on an update.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.control import Control
from textual.strip import Strip

TEXTUAL_MAJOR = 8
"""The Textual major version whose ``ChopsUpdate`` this module was checked against."""
_EXPECTED_FIELDS = ("chops", "spans", "chop_ends")

RenderSegments = Callable[[Any, Console], str]

_original: RenderSegments | None = None
_patched: RenderSegments | None = None
_users = 0


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


def textual_is_supported() -> bool:
    """Whether the installed Textual is the major version this module was checked against."""
    try:
        installed = version("textual")
    except PackageNotFoundError:
        return False
    major = installed.split(".", 1)[0]
    return major.isdigit() and int(major) == TEXTUAL_MAJOR


def _chops_update_class() -> Any | None:
    """Textual's ``ChopsUpdate`` if it still has the shape :func:`render_segments` reads."""
    try:
        from textual._compositor import ChopsUpdate
    except ImportError:
        return None
    if not callable(getattr(ChopsUpdate, "render_segments", None)):
        return None
    try:
        parameters = tuple(inspect.signature(ChopsUpdate.__init__).parameters)[1:]
    except (TypeError, ValueError):
        return None
    if parameters != _EXPECTED_FIELDS:
        return None
    return ChopsUpdate


def install() -> bool:
    """Replace Textual's partial-update writer; False (and nothing changed) if unsupported.

    Each True must be matched by one :func:`uninstall`; Textual's method comes
    back when the last user uninstalls.
    """
    global _original, _patched, _users
    if _patched is not None:
        _users += 1
        return True
    if not textual_is_supported():
        return False
    chops_update = _chops_update_class()
    if chops_update is None:
        return False
    original: RenderSegments = chops_update.render_segments

    def patched(self: Any, console: Console) -> str:
        try:
            return render_segments(self, console)
        except (AttributeError, TypeError, ValueError, IndexError):
            return original(self, console)

    patched.__doc__ = render_segments.__doc__
    chops_update.render_segments = patched
    _original, _patched, _users = original, patched, 1
    return True


def uninstall() -> None:
    """Undo one :func:`install`; the last one puts Textual's own method back."""
    global _original, _patched, _users
    if _patched is None:
        return
    _users -= 1
    if _users > 0:
        return
    chops_update = _chops_update_class()
    if chops_update is not None and chops_update.render_segments is _patched:
        chops_update.render_segments = _original
    _original, _patched, _users = None, None, 0


def installed() -> bool:
    """Whether Textual's partial updates are written by :func:`render_segments` now."""
    return _patched is not None
