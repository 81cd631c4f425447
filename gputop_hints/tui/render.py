"""Text building blocks for the widgets: fixed-scale sparklines, bars, lines.

Textual's own ``Sparkline`` scales to the min and max of what it shows, so a
flat 5 % and a flat 100 % look alike. Here every scale is given by the caller
(0-100 for percentages, 0-total for VRAM), an unknown value is a gap rather
than a zero, and the result is a plain string so one Segment draws a whole
sparkline.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

BLOCKS = "▁▂▃▄▅▆▇█"
"""Sparkline levels, lowest to highest; even 0 draws the lowest block."""
GAP = " "
"""What an unknown value (None) draws: nothing, so it cannot be mistaken for 0."""
_EIGHTHS = ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")
BAR_FULL = "█"
BAR_TRACK = "─"
LIMIT_MARK = "│"


def level(value: float, high: float, low: float = 0.0) -> str:
    """The block for ``value`` on the fixed scale ``low..high`` (clamped)."""
    span = high - low
    if span <= 0 or value != value:
        return BLOCKS[0]
    index = math.ceil((value - low) / span * len(BLOCKS)) - 1
    return BLOCKS[min(len(BLOCKS) - 1, max(0, index))]


def sparkline(values: Sequence[float | None], width: int, high: float, low: float = 0.0) -> str:
    """The newest ``width`` values as blocks on a fixed scale, right-aligned.

    Cells older than the history are blank, as are unknown values.
    """
    if width <= 0:
        return ""
    shown = values[-width:]
    span = high - low
    top = len(BLOCKS) - 1
    chars = [" "] * (width - len(shown))
    append = chars.append
    for value in shown:
        if value is None or value != value:
            append(GAP)
        elif span <= 0:
            append(BLOCKS[0])
        else:
            index = math.ceil((value - low) / span * 8) - 1
            append(BLOCKS[top if index > top else 0 if index < 0 else index])
    return "".join(chars)


def bar(fraction: float | None, width: int) -> tuple[str, str]:
    """A horizontal bar in eighth-cell steps: (filled part, empty track).

    ``None`` gives an all-track bar; fractions are clamped to 0..1.
    """
    if width <= 0:
        return "", ""
    if fraction is None or fraction != fraction:
        return "", BAR_TRACK * width
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    filled = BAR_FULL * full + _EIGHTHS[part]
    return filled, BAR_TRACK * (width - len(filled))


def format_core_ranges(cores: Iterable[int]) -> str:
    """(0, 1, 2, 3, 8, 10, 11) -> '0-3,8,10-11'."""
    ordered = sorted(set(cores))
    if not ordered:
        return "none"
    parts: list[str] = []
    start = prev = ordered[0]
    for core in ordered[1:]:
        if core == prev + 1:
            prev = core
            continue
        parts.append(f"{start}-{prev}" if prev > start else str(start))
        start = prev = core
    parts.append(f"{start}-{prev}" if prev > start else str(start))
    return ",".join(parts)


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
        """Append text made of single-cell characters (digits, blocks, ASCII)."""
        if text:
            self.segments.append(Segment(text, style))
            self.cells += len(text)
        return self

    def add_text(self, text: str, style: Style | None = None) -> Line:
        """Append text of any width (user names, command lines)."""
        if text:
            self.segments.append(Segment(text, style))
            self.cells += cell_len(text)
        return self

    def pad_to(self, cells: int, style: Style | None = None) -> Line:
        if cells > self.cells:
            self.add(" " * (cells - self.cells), style)
        return self

    def strip(self, width: int, style: Style | None = None) -> Strip:
        strip = Strip(self.segments, self.cells)
        if self.cells != width:
            strip = strip.adjust_cell_length(width, style)
        return strip


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
