"""Text building blocks for the widgets: fixed-scale sparklines, bars, lines.

Textual's own ``Sparkline`` scales to the min and max of what it shows, so a
flat 5 % and a flat 100 % look alike. Here every scale is given by the caller
(0-100 for percentages, 0-total for VRAM), an unknown value is a gap rather
than a zero, and the result is a plain string so one Segment draws a whole
sparkline. The characters come from :func:`gputop_hints.tui.glyphs.active`
(block characters, or ASCII where the terminal cannot show them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from gputop_hints.text import visible
from gputop_hints.tui import glyphs

GAP = " "
"""What an unknown value (None) draws: nothing, so it cannot be mistaken for 0."""


def level(value: float, high: float, low: float = 0.0) -> str:
    """The block for ``value`` on the fixed scale ``low..high`` (clamped)."""
    blocks = glyphs.active().blocks
    span = high - low
    if span <= 0 or value != value:
        return blocks[0]
    index = math.ceil((value - low) / span * len(blocks)) - 1
    return blocks[min(len(blocks) - 1, max(0, index))]


def sparkline(values: Sequence[float | None], width: int, high: float, low: float = 0.0) -> str:
    """The newest ``width`` values as blocks on a fixed scale, right-aligned.

    Cells older than the history are blank, as are unknown values.
    """
    if width <= 0:
        return ""
    shown = values[-width:]
    blocks = glyphs.active().blocks
    span = high - low
    top = len(blocks) - 1
    levels = len(blocks)  # the same scale as :func:`level`, whatever the glyph set
    chars = [" "] * (width - len(shown))
    append = chars.append
    for value in shown:
        if value is None or value != value:
            append(GAP)
        elif span <= 0:
            append(blocks[0])
        else:
            index = math.ceil((value - low) / span * levels) - 1
            append(blocks[top if index > top else 0 if index < 0 else index])
    return "".join(chars)


def samples_per_cell(samples: int, width: int) -> int:
    """How many samples one sparkline cell stands for, so ``width`` cells span ``samples``."""
    if width <= 0:
        return 1
    return max(1, math.ceil(samples / width))


def bucketed(values: Sequence[float | None], per_cell: int, ticks: int) -> list[float | None]:
    """Mean of each completed bucket of ``per_cell`` samples, oldest first.

    ``values`` are the newest samples and ``ticks`` counts every sample ever
    taken, so buckets sit at fixed positions in time: the line moves one cell
    when a bucket completes instead of every tick, and the samples of the
    bucket still filling are left out. An unknown sample counts for nothing;
    a bucket with none known is unknown (a gap).
    """
    if per_cell <= 1:
        return list(values)
    filling = ticks % per_cell
    done = values[: len(values) - filling] if filling else values
    cells: list[float | None] = []
    end = len(done)
    while end > 0:
        chunk = done[max(0, end - per_cell) : end]
        total = None if None in chunk else sum(chunk)  # type: ignore[arg-type]
        if total is not None and total == total:  # all known: the same sum as below
            cells.append(total / len(chunk))
        else:
            known = [v for v in chunk if v is not None and v == v]
            cells.append(sum(known) / len(known) if known else None)
        end -= per_cell
    cells.reverse()
    return cells


def bar(fraction: float | None, width: int) -> tuple[str, str]:
    """A horizontal bar in eighth-cell steps: (filled part, empty track).

    ``None`` gives an all-track bar; fractions are clamped to 0..1.
    """
    if width <= 0:
        return "", ""
    drawn = glyphs.active()
    if fraction is None or fraction != fraction:
        return "", drawn.bar_track * width
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    filled = drawn.bar_full * full + drawn.eighths[part]
    return filled, drawn.bar_track * (width - len(filled))


def short_gpu_name(name: str | None) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3' (the vendor says nothing here)."""
    if not name:
        return "GPU"
    for prefix in ("NVIDIA ", "Tesla ", "GeForce ", "Quadro "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


class Line:
    """Accumulates styled text for one row; :meth:`strip` makes it exactly ``width`` cells."""

    __slots__ = ("cells", "segments")

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.cells = 0

    def add(self, text: str, style: Style | None = None) -> Line:
        """Append text made of single-cell characters (digits, blocks, ASCII).

        Control characters (from a GPU name, a file's contents) are shown visibly,
        never sent to the terminal (:func:`gputop_hints.text.visible`)."""
        if not text.isprintable():  # every character visible() rewrites is unprintable
            text = visible(text)
        if not text.isascii() and glyphs.ascii_only():
            text = glyphs.to_ascii(text)
        if text:
            self.segments.append(Segment(text, style))
            self.cells += len(text)
        return self

    def add_text(self, text: str, style: Style | None = None) -> Line:
        """Append text of any width (user names, command lines); control characters
        are shown visibly, as in :meth:`add`."""
        if not text.isprintable():
            text = visible(text)
        if not text.isascii() and glyphs.ascii_only():
            text = glyphs.to_ascii(text)
        if text:
            self.segments.append(Segment(text, style))
            self.cells += cell_len(text)
        return self

    def pad_to(self, cells: int, style: Style | None = None) -> Line:
        if cells > self.cells:
            self.add(" " * (cells - self.cells), style)
        return self

    def strip(self, width: int, style: Style | None = None) -> Strip:
        return fitted_strip(merge_segments(self.segments, style), self.cells, width, style)


def fitted_strip(
    segments: list[Segment], cells: int, width: int, style: Style | None = None
) -> Strip:
    """``Strip(segments, cells).adjust_cell_length(width, style)``, one Strip made.

    A short line gets the same padding segment ``adjust_cell_length`` would add
    (``segments`` is extended in place); a long one is cut by it.
    """
    if cells < width:
        segments.append(Segment(" " * (width - cells), style))
        return Strip(segments, width)
    strip = Strip(segments, cells)
    return strip if cells == width else strip.adjust_cell_length(width, style)


_SHOWS_ON_BLANKS = ("underline", "underline2", "strike", "reverse", "overline", "blink", "blink2")
"""Attributes that make a blank cell look different; spaces with them keep their style."""


@lru_cache(maxsize=1024)
def _blank_safe(style: Style) -> bool:
    return not any(getattr(style, name) for name in _SHOWS_ON_BLANKS)


def merge_segments(segments: Sequence[Segment], base: Style | None = None) -> list[Segment]:
    """Fewer, longer segments that look the same: fewer style changes on the wire.

    Every segment costs an escape sequence (often 20+ bytes) when written to
    the terminal, so: spaces take the style of a neighbour with the same
    background (a foreground colour or bold does not show on a blank), and
    neighbours with equal styles are joined. ``base`` stands for segments
    without a style (the widget's own style is applied to them later).
    """
    return merge_onto([], segments, base)


def merge_onto(
    merged: list[Segment], segments: Sequence[Segment], base: Style | None = None
) -> list[Segment]:
    """:func:`merge_segments` of ``segments`` appended to ``merged``, already merged.

    The merge runs left to right and only ever touches the last merged segment, so
    ``merge_onto(merge_segments(a, base), b, base) == merge_segments(a + b, base)``:
    a line's steady start can be merged once and kept (``merged`` is extended in place
    and returned).
    """
    # The run being merged: its texts, its style (and what that stands for), whether
    # it is all spaces, and the one segment it is while nothing was merged into it
    # (given back as it came). A segment is made only when a run ends: merging
    # ``n`` segments makes one, not ``n``. Styles are compared as rich does
    # (``Style.__eq__`` is equal hashes), without its method call.
    texts: list[str] = []
    run_style: Style | None = None
    run_own: Style | None = None
    run_blank = False
    single: Segment | None = None
    if merged and not merged[-1].control:
        single = merged.pop()
        texts.append(single.text)
        run_style = single.style
        run_own = run_style if run_style is not None else base
        run_blank = not single.text.strip(" ")
    append = merged.append
    for segment in segments:
        text, style, control = segment
        if control:
            if texts:
                append(single if single is not None else Segment("".join(texts), run_style))
                texts = []
            append(segment)
            continue
        own = style if style is not None else base
        if texts and text:
            if (
                run_style is style
                or run_own is own
                or (run_own is not None and own is not None and hash(run_own) == hash(own))
            ):
                texts.append(text)
                run_blank = run_blank and not text.strip(" ")
                single = None
                continue
            blank = not text.strip(" ")
            if (
                (blank or run_blank)
                and own is not None
                and run_own is not None
                and own.bgcolor == run_own.bgcolor
                and _blank_safe(own)
                and _blank_safe(run_own)
            ):
                texts.append(text)
                if not blank:  # spaces before text: the run takes the text's style
                    run_style, run_own, run_blank = style, own, False
                single = None
                continue
        elif texts:  # an empty segment: kept as it is, a run of its own
            pass
        if texts:
            append(single if single is not None else Segment("".join(texts), run_style))
        texts = [text]
        run_style, run_own = style, own
        run_blank = not text.strip(" ")
        # As it came: an empty one always was; otherwise one without control codes.
        single = segment if (control is None or not text) else Segment(text, style)
    if texts:
        append(single if single is not None else Segment("".join(texts), run_style))
    return merged


@dataclass(frozen=True, slots=True)
class Piece:
    """Part of a line that may be dropped when the line is too narrow.

    Lower ``priority`` is kept longer; pieces keep their order on the line.
    """

    text: str
    style: Style | None
    priority: int = 0


def fit_pieces(pieces: Sequence[Piece], width: int, separator: int = 1) -> list[Piece]:
    """Drop the least important pieces until the rest fit in ``width`` cells."""
    kept = list(pieces)

    def total(items: Sequence[Piece]) -> int:
        return sum(cell_len(p.text) for p in items) + separator * max(0, len(items) - 1)

    while kept and total(kept) > width:
        worst = max(range(len(kept)), key=lambda i: (kept[i].priority, i))
        del kept[worst]
    return kept


def add_pieces(line: Line, pieces: Sequence[Piece], gap_style: Style | None) -> Line:
    for i, piece in enumerate(pieces):
        if i:
            line.add(" ", gap_style)
        line.add_text(piece.text, piece.style)
    return line
