"""Write only the cells that changed, and a style only where it changes.

Textual repaints a dirty region by writing, for each screen line, every widget
"chop" the region touches from the chop's left edge -- the region's right end
is honoured, its left end is not (``ChopsUpdate.render_segments``; its own
source says "TODO: crop to x extents"). Our widgets refresh exactly the cells
that changed (``StripWidget.invalidate``), so a GPU panel whose value column
changed would still resend its whole sparkline every tick.

:func:`install` replaces that method (and ``LayoutUpdate.render_segments``,
the full repaint) with one that remembers what it wrote: a shadow of the
terminal, per console. Within a dirty span only the cells that differ from the
shadow go out -- a clock or a sparkline that moves by one cell costs a cursor
move and that cell, as in curses -- with the other half of any wide character
(CJK in a command line) that a change cuts, so none is left half on screen.
Unchanged cells between two changed ones are rewritten where that is shorter
than a cursor move, and the cursor is moved by the shortest sequence that does
not depend on the terminal agreeing on character widths (see :class:`_Writer`).
Styles are sent as SGR deltas from the style in effect, only where the style
changes (Textual sends every segment's whole style and a reset after it), and
the style is reset once, at the end of an update; the runs of an update are
written grouped by the style they start with, so a column of values between
sparklines costs one SGR rather than one a line. The shadow is dropped when the
driver (re)starts application mode (:func:`forget`), when the terminal size
changes and when a replacement falls back to Textual's method.

The result on the terminal must be cell for cell what Textual's own method
draws; ``tests/tui/test_partial_output.py`` renders random screens and the
monitor through a terminal emulator both ways and compares them, and checks
the bytes a one-cell change costs.

The replacement is the app's, for as long as it runs: the app installs it on
mount and uninstalls it on unmount (nested apps count), so importing or
building the app changes nothing in Textual. It is installed only on the Textual
major version it was written for (the dependency pin says the same) and only
when ``ChopsUpdate`` and ``LayoutUpdate`` still take the fields it reads;
otherwise Textual's own method stays, and so it does if the replacement ever
raises on an update.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from rich.cells import get_character_cell_size
from rich.color import ColorSystem
from rich.console import Console
from rich.style import Style
from textual.strip import SGR_STYLES, Strip

from gputop_hints.tui.textual_version import textual_major

TEXTUAL_MAJOR = 8
"""The Textual major version whose ``ChopsUpdate`` this module was checked against."""
_EXPECTED_FIELDS = ("chops", "spans", "chop_ends")
_EXPECTED_LAYOUT_FIELDS = ("strips", "region")

RenderSegments = Callable[[Any, Console], str]

_original: RenderSegments | None = None
_patched: RenderSegments | None = None
_original_layout: RenderSegments | None = None
_patched_layout: RenderSegments | None = None
_users = 0


# --- what is on the terminal ---------------------------------------------------------

StyleKey = tuple[str, frozenset[str], str, str, str | None, str | None]
"""A style as the terminal sees it: Textual's SGR string, its attribute codes, the
foreground and background codes, and the hyperlink (URL, id)."""
Cell = tuple[str, StyleKey]
"""The text of one cell (``""`` for the right half of a wide character) and its style."""

DEFAULT: StyleKey = ("", frozenset(), "", "", None, None)
_CONTINUATION = ""
_OFF = {
    "1": "22", "2": "22", "3": "23", "4": "24", "21": "24", "5": "25", "6": "25",
    "7": "27", "8": "28", "9": "29", "51": "54", "52": "54", "53": "55",
}  # fmt: skip
"""The SGR code that turns each of Textual's attribute codes off."""
_RESET = "\x1b[0m"
_LINK_END = "\x1b]8;;\x1b\\"


class Shadow:
    """The cells this module believes are on the terminal; ``None`` where unknown."""

    __slots__ = ("rows", "size")

    def __init__(self, size: tuple[int, int] | None = None) -> None:
        self.size = size
        self.rows: list[list[Cell | None]] = []

    def row(self, y: int, width: int) -> list[Cell | None]:
        rows = self.rows
        while len(rows) <= y:
            rows.append([])
        row = rows[y]
        if len(row) < width:
            row.extend([None] * (width - len(row)))
        return row


_shadows: WeakKeyDictionary[Console, Shadow] = WeakKeyDictionary()
_keys: dict[tuple[Style, ColorSystem], StyleKey] = {}
_transitions: dict[tuple[StyleKey, StyleKey], str] = {}


def forget() -> None:
    """Forget what is on every terminal: the next updates write every cell they cover.

    Called when the terminal may have been drawn on by someone else (the driver
    starting or resuming application mode).
    """
    _shadows.clear()


def shadow_of(console: Console) -> Shadow:
    """What this module believes ``console``'s terminal shows (made empty on first use)."""
    shadow = _shadows.get(console)
    if shadow is None:
        shadow = _shadows[console] = Shadow()
    return shadow


def _color_system(console: Console) -> ColorSystem:
    return console._color_system or ColorSystem.TRUECOLOR


def _key(style: Style | None, color_system: ColorSystem) -> StyleKey:
    if style is None:
        return DEFAULT
    cache_key = (style, color_system)
    key = _keys.get(cache_key)
    if key is None:
        ansi = Strip.render_ansi(style, color_system)
        attributes = style._attributes & style._set_attributes
        codes = frozenset(
            SGR_STYLES[bit] for bit in range(attributes.bit_length()) if attributes & (1 << bit)
        )
        color, bgcolor = style._color, style._bgcolor
        fg = ";".join(color.downgrade(color_system).get_ansi_codes()) if color else ""
        bg = ";".join(bgcolor.downgrade(color_system).get_ansi_codes(False)) if bgcolor else ""
        link = style._link or None
        key = (ansi, codes, fg, bg, link, style._link_id if link else None)
        if len(_keys) > 65536:
            _keys.clear()
        _keys[cache_key] = key
    return key


def sgr(old: StyleKey, new: StyleKey) -> str:
    """The shortest SGR sequence that takes the terminal from style ``old`` to ``new``."""
    if old[0] == new[0]:
        return ""
    cached = _transitions.get((old, new))
    if cached is not None:
        return cached
    full = f"\x1b[0;{new[0]}m" if new[0] else _RESET
    old_codes, new_codes = old[1], new[1]
    removed = old_codes - new_codes
    off = {_OFF[code] for code in removed}
    codes = sorted(off)
    codes.extend(sorted(code for code in new_codes if code not in old_codes or _OFF[code] in off))
    if new[2] != old[2]:
        codes.append(new[2] or "39")
    if new[3] != old[3]:
        codes.append(new[3] or "49")
    delta = f"\x1b[{';'.join(codes)}m"
    best = delta if len(delta) < len(full) else full
    if len(_transitions) > 65536:
        _transitions.clear()
    _transitions[(old, new)] = best
    return best


_segment_cells: dict[tuple[str, Style | None, ColorSystem], list[Cell]] = {}
"""The cells of a segment without zero-width characters, by (text, style, colour
system): most of a changed line's segments (labels, notes, padding, a sparkline
that did not move) were seen on an earlier tick."""

MAX_CACHED_CELLS = 65536
"""The most cells :data:`_segment_cells` holds (~0.5 MB: a list slot each, the cells
themselves shared, :func:`_cells_for`) before it is emptied. Bounded by cells, not by
segments: a segment is up to a whole line, and the figures in them change every tick,
so a bound of 8192 *segments* let it grow to tens of MB over a long run before it was
ever emptied -- the slow RSS slope of a monitor left running (issue 43; bench/soak.py
--demo --tracemalloc). A 160x50 screen is 8,000 cells: the segments that repeat fit
many times over."""

_cached_cells = [0]
"""How many cells :data:`_segment_cells` holds now."""


_one_cell: set[str] = set()
"""Characters measured one cell wide (``get_character_cell_size``) in an earlier
segment: a segment made only of them is one cell a character, as printable ASCII is.
A sparkline that grew or moved is a text not seen before, ~120 block characters; in
the first minutes, while the window fills, every GPU row's is new every tick."""

MAX_ONE_CELL = 4096
"""The most characters :data:`_one_cell` remembers (the block and box glyphs are a few
dozen; names and commands may bring more): beyond it, new ones are measured each time."""


class _StyleCells(dict[str, Cell]):
    """One style's cells by character: each distinct cell is one tuple, shared by every
    segment, line and shadow row that shows it. A cell a tuple each (64 bytes) made the
    segment cache (:data:`MAX_CACHED_CELLS`) ~5 MB of small objects, filled and emptied
    over a long run: the allocator's arenas kept that high-water mark as resident memory
    (issue 49: a 1 x 1 monitor's RSS rose ~6 MB in its first two minutes)."""

    __slots__ = ("key",)

    def __init__(self, key: StyleKey) -> None:
        super().__init__()
        self.key = key

    def __missing__(self, character: str) -> Cell:
        if _shared_cells[0] >= MAX_SHARED_CELLS:
            _cells_by_key.clear()  # cells already handed out stay valid: plain tuples
            _shared_cells[0] = 0
        cell = self[character] = (character, self.key)
        _shared_cells[0] += 1
        return cell


_cells_by_key: dict[StyleKey, _StyleCells] = {}
"""Each style key's shared cells (:class:`_StyleCells`)."""

MAX_SHARED_CELLS = 16384
"""The most shared cells kept (the screen's glyphs in its styles are a few thousand;
names and commands may bring more): beyond it, the tables are emptied and refilled."""

_shared_cells = [0]


def _cells_for(key: StyleKey) -> _StyleCells:
    """The shared cells of style ``key``."""
    table = _cells_by_key.get(key)
    if table is None:
        table = _cells_by_key[key] = _StyleCells(key)
    return table


def cells_of(strip: Strip, color_system: ColorSystem) -> list[Cell]:
    """``strip`` cell by cell; a wide character is its cell then a continuation cell."""
    cells: list[Cell] = []
    extend = cells.extend
    known = _segment_cells
    for text, style, control in strip:
        if control:
            raise ValueError("a control segment in a strip")
        if not text:
            continue
        cached = known.get((text, style, color_system))
        if cached is not None:
            extend(cached)
            continue
        key = _key(style, color_system)
        table = _cells_for(key)
        if (text.isascii() and text.isprintable()) or _one_cell.issuperset(text):
            run = list(map(table.__getitem__, text))
        else:
            run = []
            append = run.append
            for character in text:
                width = get_character_cell_size(character)
                if width == 0:
                    # Joins the cell before it, which may be another segment's: not kept.
                    run = []
                    break
                append(table[character])
                if width == 2:
                    append(table[_CONTINUATION])
                elif len(_one_cell) < MAX_ONE_CELL:
                    _one_cell.add(character)
            if not run:
                _add_cells(cells, text, key)
                continue
        if _cached_cells[0] + len(run) > MAX_CACHED_CELLS:
            known.clear()
            _cached_cells[0] = 0
        known[(text, style, color_system)] = run
        _cached_cells[0] += len(run)
        extend(run)
    return cells


def _add_cells(cells: list[Cell], text: str, key: StyleKey) -> None:
    """Append ``text``'s cells, a zero-width character joining the cell before it."""
    append = cells.append
    table = _cells_for(key)
    for character in text:
        width = get_character_cell_size(character)
        if width == 0:
            if cells and cells[-1][0]:
                cells[-1] = (cells[-1][0] + character, cells[-1][1])
            continue
        append(table[character])
        if width == 2:
            append(table[_CONTINUATION])


class _Writer:
    """Turns runs of cells into terminal text, sending a style only where it changes.

    The cursor is moved by the shortest sequence whose result does not depend on
    how wide the terminal thinks a character is: an absolute move (CUP), a move
    to a column of the same line (CHA), line feeds then CR or CHA to reach a line
    just below (only where nothing written on the line could have wrapped, even
    were every non-ASCII character two cells wide), and a relative move (CUF) or
    none only after ASCII text, whose width no terminal disputes.
    """

    __slots__ = ("column", "exact", "link", "out", "row", "style", "width")

    def __init__(self, width: int) -> None:
        self.out: list[str] = []
        self.style = DEFAULT
        self.link: tuple[str | None, str | None] = (None, None)
        self.width = width
        self.row = -1
        """The cursor's line, or -1 where it is not known for certain."""
        self.column = 0
        self.exact = False
        """Whether the cursor's column is known for certain (``column``)."""

    def move(self, x: int, y: int) -> str:
        best = f"\x1b[{y + 1};{x + 1}H"
        row = self.row
        if row < 0:
            return best
        if y == row:
            if self.exact and x == self.column:
                return ""
            candidate = f"\x1b[{x + 1}G"
            if self.exact and x > self.column:
                forward = x - self.column
                relative = "\x1b[C" if forward == 1 else f"\x1b[{forward}C"
                if len(relative) < len(candidate):
                    candidate = relative
        elif 0 < y - row <= 3:
            candidate = "\n" * (y - row) + ("\r" if x == 0 else f"\x1b[{x + 1}G")
        else:
            return best
        return candidate if len(candidate) < len(best) else best

    def run(self, x: int, y: int, cells: list[Cell | None], start: int, end: int) -> None:
        """Write ``cells[start:end]`` at column ``x`` of line ``y``."""
        out = self.out
        append = out.append
        append(self.move(x, y))
        style = self.style
        exact = True
        worst = x
        for cell in cells[start:end]:
            if cell is None:
                raise ValueError("writing a cell whose contents are not known")
            text, key = cell
            if not text:
                continue
            if key is not style:
                if key[4:] != self.link:
                    self._link(key)
                if key[0] != style[0]:
                    append(sgr(style, key))
                style = key
            append(text)
            if text.isascii():
                worst += 1
            else:
                worst += 2
                exact = False
        self.style = style
        if self.link[0] is not None:
            append(_LINK_END)
            self.link = (None, None)
        self.row = y if self.width and worst <= self.width else -1
        self.column = x + (end - start)
        self.exact = exact

    def _link(self, key: StyleKey) -> None:
        if self.link[0] is not None:
            self.out.append(_LINK_END)
        url, link_id = key[4], key[5]
        if url is not None:
            self.out.append(f"\x1b]8;id={link_id};{url}\x1b\\")
        self.link = (url, link_id)

    def text(self) -> str:
        if self.style[0]:
            self.out.append(_RESET)
            self.style = DEFAULT
        return "".join(self.out)


def _gap_cost(row: list[Cell | None], start: int, end: int, style: StyleKey) -> int | None:
    """Bytes it takes to rewrite ``row[start:end]`` (unchanged) from ``style``."""
    cost = 0
    for cell in row[start:end]:
        if cell is None:
            return None
        text, key = cell
        if key[0] != style[0]:
            cost += len(sgr(style, key))
            style = key
        cost += len(text) if text.isascii() else len(text.encode())
    return cost


def _runs(row: list[Cell | None], changed: list[int]) -> list[tuple[int, int]]:
    """The runs of ``row`` to write for the cells at ``changed`` (sorted columns): an
    unchanged gap between two changed cells joins them where rewriting it is shorter
    than moving the cursor over it."""
    runs: list[tuple[int, int]] = []
    start = end = changed[0]
    for x in changed:
        if x <= end:
            end = x + 1
            continue
        last = row[end - 1]
        if last is None:
            raise ValueError("a changed cell whose contents are not known")
        jump = len(f"\x1b[{x + 1}G")
        # Every cell of the gap but a first one (the right half of a wide character)
        # takes a byte at least: a wider gap is never rewritten.
        cost = _gap_cost(row, end, x, last[1]) if x - end - 1 <= jump else None
        if cost is not None and cost <= jump:
            end = x + 1
            continue
        runs.append((start, end))
        start, end = x, x + 1
    runs.append((start, end))
    return runs


def _mark(
    changed: set[int],
    old: list[Cell | None],
    new: list[Cell | None],
    low: int,
    high: int,
    x: int,
    cells: list[Cell],
) -> None:
    """Add the other halves of wide characters, old and new, that changed cells cut;
    ``cells`` (from column ``x``) are the new contents of columns ``low`` to ``high``."""
    stack = [column for column in changed if low <= column < high]
    while stack:
        column = stack.pop()
        neighbours = []
        for row in (old, new):
            cell = row[column]
            if cell is not None and cell[0] == _CONTINUATION:
                neighbours.append(column - 1)
            if column + 1 < len(row):
                after = row[column + 1]
                if after is not None and after[0] == _CONTINUATION:
                    neighbours.append(column + 1)
        for neighbour in neighbours:
            if low <= neighbour < high and neighbour not in changed:
                new[neighbour] = cells[neighbour - x]
                changed.add(neighbour)
                stack.append(neighbour)


def render_segments(update: Any, console: Console) -> str:
    """``ChopsUpdate.render_segments``, writing only the cells that are not on screen already.

    Within each span, the cells the chops hold are compared with what this module
    last wrote there; only those that differ go out (with the other half of any
    wide character they cut), a style is sent only where it changes, and the
    style is reset once, at the end.
    """
    color_system = _color_system(console)
    chops = update.chops
    chop_ends = update.chop_ends
    width = max((ends[-1] for ends in chop_ends if ends), default=0)
    shadow = shadow_of(console)
    size = (width, len(chops))
    if shadow.size != size:
        shadow = _shadows[console] = Shadow(size)
    writer = _Writer(width)
    by_style: dict[str, list[tuple[int, int, int, list[Cell | None]]]] = {}
    for y, x1, x2 in update.spans:
        old = shadow.row(y, width)
        new = list(old)
        changed: set[int] = set()
        bounds: list[tuple[int, int, int, list[Cell]]] = []
        for end, (x, strip) in zip(chop_ends[y], chops[y].items(), strict=False):
            if strip is None or x >= x2 or end <= x1:
                continue
            cells = cells_of(strip, color_system)
            low, high = x, min(end, x + len(cells), width)
            start, stop = max(x, x1), min(high, x2)
            if start >= stop:
                continue
            while start > low and cells[start - x][0] == _CONTINUATION:
                start -= 1
            while stop < high and cells[stop - x][0] == _CONTINUATION:
                stop += 1
            shown = cells[start - x : stop - x]
            before = old[start:stop]
            if before != shown:
                changed.update(
                    [
                        column
                        for column, was, cell in zip(range(start, stop), before, shown, strict=True)
                        if was != cell
                    ]
                )
            new[start:stop] = shown
            bounds.append((low, high, x, cells))
        if not changed:
            continue
        for low, high, x, cells in bounds:
            # The chop's own cells are current outside the span too (Textual writes
            # them): the other half of a wide character that a change cuts is taken there.
            _mark(changed, old, new, low, high, x, cells)
        shadow.rows[y] = new
        for start, stop in _runs(new, sorted(changed)):
            first = new[start]
            style = first[1][0] if first is not None else ""
            by_style.setdefault(style, []).append((y, start, stop, new))
    # Runs are written grouped by the style they start with (top to bottom within a
    # group): a column of values between sparklines then costs one SGR, not one a line.
    for runs in by_style.values():
        for y, start, stop, row in runs:
            writer.run(start, y, row, start, stop)
    return writer.text()


def render_layout(update: Any, console: Console) -> str:
    """``LayoutUpdate.render_segments``: every cell of the region, styles sent only where
    they change; and what is on the terminal there is remembered."""
    color_system = _color_system(console)
    region = update.region
    lines = [list(line) for line in update.strips]
    update.strips = lines
    shadow = shadow_of(console)
    if region.x == 0 and region.y == 0:
        size = (region.width, region.height)
        if shadow.size != size:
            shadow = _shadows[console] = Shadow(size)
    writer = _Writer(shadow.size[0] if shadow.size else 0)
    x = region.x
    for y, line in enumerate(lines, region.y):
        cells: list[Cell | None] = []
        for strip in line:
            cells.extend(cells_of(strip, color_system))
        if not cells:
            continue
        row = shadow.row(y, x + len(cells))
        row[x : x + len(cells)] = cells
        writer.run(x, y, cells, 0, len(cells))
    return writer.text()


def textual_is_supported() -> bool:
    """Whether the installed Textual is the major version this module was checked against."""
    return textual_major() == TEXTUAL_MAJOR


def _update_class(name: str, fields: tuple[str, ...]) -> Any | None:
    """Textual's update class ``name`` if it still takes ``fields`` and renders itself."""
    try:
        from textual import _compositor
    except ImportError:
        return None
    update_class = getattr(_compositor, name, None)
    if update_class is None or not callable(getattr(update_class, "render_segments", None)):
        return None
    try:
        parameters = tuple(inspect.signature(update_class.__init__).parameters)[1:]
    except (TypeError, ValueError):
        return None
    if parameters != fields:
        return None
    return update_class


def _chops_update_class() -> Any | None:
    """Textual's ``ChopsUpdate`` if it still has the shape :func:`render_segments` reads."""
    return _update_class("ChopsUpdate", _EXPECTED_FIELDS)


def _layout_update_class() -> Any | None:
    """Textual's ``LayoutUpdate`` if it still has the shape :func:`render_layout` reads."""
    return _update_class("LayoutUpdate", _EXPECTED_LAYOUT_FIELDS)


def install() -> bool:
    """Replace Textual's partial-update writer; False (and nothing changed) if unsupported.

    Each True must be matched by one :func:`uninstall`; Textual's method comes
    back when the last user uninstalls.
    """
    global _original, _patched, _original_layout, _patched_layout, _users
    if _patched is not None:
        _users += 1
        return True
    if not textual_is_supported():
        return False
    chops_update = _chops_update_class()
    layout_update = _layout_update_class()
    if chops_update is None or layout_update is None:
        return False
    original: RenderSegments = chops_update.render_segments
    original_layout: RenderSegments = layout_update.render_segments

    def patched(self: Any, console: Console) -> str:
        try:
            return render_segments(self, console)
        except (AttributeError, TypeError, ValueError, IndexError, KeyError):
            _shadows.pop(console, None)
            return original(self, console)

    def patched_layout(self: Any, console: Console) -> str:
        try:
            return render_layout(self, console)
        except (AttributeError, TypeError, ValueError, IndexError, KeyError):
            _shadows.pop(console, None)
            return original_layout(self, console)

    patched.__doc__ = render_segments.__doc__
    patched_layout.__doc__ = render_layout.__doc__
    chops_update.render_segments = patched
    layout_update.render_segments = patched_layout
    _original, _patched, _users = original, patched, 1
    _original_layout, _patched_layout = original_layout, patched_layout
    return True


def uninstall() -> None:
    """Undo one :func:`install`; the last one puts Textual's own method back."""
    global _original, _patched, _original_layout, _patched_layout, _users
    if _patched is None:
        return
    _users -= 1
    if _users > 0:
        return
    chops_update = _chops_update_class()
    if chops_update is not None and chops_update.render_segments is _patched:
        chops_update.render_segments = _original
    layout_update = _layout_update_class()
    if layout_update is not None and layout_update.render_segments is _patched_layout:
        layout_update.render_segments = _original_layout
    _original, _patched, _users = None, None, 0
    _original_layout, _patched_layout = None, None
    forget()


def installed() -> bool:
    """Whether Textual's partial updates are written by :func:`render_segments` now."""
    return _patched is not None
