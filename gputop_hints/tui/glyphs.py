"""Unicode or plain ASCII: what the terminal can show, decided once at start-up.

A terminal whose locale is not UTF-8 (``LANG=C``, a Latin-1 locale, no locale
at all -- the same rule tmux follows) turns block characters into mojibake.
There the monitor draws sparklines with `` .:-=+*#@``-style levels, bars with
``#`` and ``-``, and maps every other symbol to a plain one
(:data:`ASCII_FOR`); anything left over becomes ``?``. The choice is made by
the CLI with :func:`configure` before the app starts (tests may flip it), and
the UTF-8 look is unchanged otherwise.

``GPUTOP_HINTS_ASCII=1`` forces ASCII, ``=0`` forces Unicode.
"""

from __future__ import annotations

import codecs
import locale
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from rich.cells import cell_len

ASCII_FOR: Mapping[str, str] = {
    "▁": ".",
    "▂": ":",
    "▃": "-",
    "▄": "=",
    "▅": "+",
    "▆": "*",
    "▇": "#",
    "█": "#",
    "▏": ":",
    "▎": ":",
    "▍": ":",
    "▌": "+",
    "▋": "+",
    "▊": "+",
    "▉": "+",
    "─": "-",
    "│": "|",
    "▲": "^",
    "▼": "v",
    "↑": "^",
    "↓": "v",
    "→": ">",
    "·": ".",
    "•": "*",
    "…": ".",
    "–": "-",
    "°": "",
    "×": "x",
    "÷": "/",
    "Σ": "S",
    "‼": "!!",
    "⏎": "Ret",
    "\u00a0": " ",
    "├": "|",
    "└": "`",
    "▸": ">",
    "▾": "v",
}
"""Plain stand-ins for the symbols the monitor draws (longer ones only where width allows)."""

_TABLE = str.maketrans(dict(ASCII_FOR))


@dataclass(frozen=True, slots=True)
class GlyphSet:
    """The characters sparklines, bars and limit marks are drawn with."""

    blocks: str
    """Sparkline levels, lowest to highest; even 0 draws the lowest."""
    eighths: tuple[str, ...]
    """A bar's partly filled last cell, by eighths (index 0: nothing)."""
    bar_full: str
    bar_track: str
    """The empty part of a bar."""
    limit_mark: str
    """Where a bar ends: the VRAM limit."""


UNICODE = GlyphSet(
    blocks="▁▂▃▄▅▆▇█",
    eighths=("", "▏", "▎", "▍", "▌", "▋", "▊", "▉"),
    bar_full="█",
    bar_track="─",
    limit_mark="│",
)
ASCII = GlyphSet(
    blocks=".:-=+*#@",
    eighths=("", ":", ":", ":", "+", "+", "+", "+"),
    bar_full="#",
    bar_track="-",
    limit_mark="|",
)
"""What the terminal gets where it cannot show block characters."""

_ascii = False
_active = UNICODE


def ascii_only() -> bool:
    """True when only ASCII may be written (see :func:`configure`)."""
    return _ascii


def active() -> GlyphSet:
    """The glyphs to draw with now: :data:`UNICODE` or :data:`ASCII`."""
    return _active


def configure(ascii: bool) -> None:
    """Switch every glyph the views draw to ASCII (True) or Unicode (False)."""
    global _ascii, _active
    _ascii = ascii
    _active = ASCII if ascii else UNICODE


def to_ascii(text: str) -> str:
    """``text`` with symbols replaced by plain ones; other non-ASCII becomes ``?`` per cell."""
    if text.isascii():
        return text
    text = text.translate(_TABLE)
    if text.isascii():
        return text
    return "".join(c if c.isascii() else "?" * max(1, cell_len(c)) for c in text)


def shown(text: str) -> str:
    """``text`` as it may be written to this terminal."""
    return to_ascii(text) if _ascii else text


def terminal_is_utf8(
    environ: Mapping[str, str] | None = None, utf8_mode: bool | None = None
) -> bool:
    """Whether the terminal can be assumed to show UTF-8, from the locale.

    Python started in the C/POSIX locale coerces it to UTF-8 and turns on its
    UTF-8 mode, so its own encoding says nothing about the terminal: that case
    (``LANG=C``, ``LC_ALL=C``, or no locale variables at all) counts as ASCII.
    Otherwise the locale's codeset decides (``en_US.ISO-8859-1`` is not UTF-8).
    """
    env = os.environ if environ is None else environ
    forced = env.get("GPUTOP_HINTS_ASCII", "").strip()
    if forced in ("0", "1"):
        return forced == "0"
    if utf8_mode is None:
        utf8_mode = bool(sys.flags.utf8_mode)
    if utf8_mode and env.get("PYTHONUTF8", "") != "1":
        return False  # the locale was C/POSIX: Python's UTF-8 is its own, not the terminal's
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = env.get(name)
        if value:
            codeset = value.partition(".")[2].partition("@")[0]
            if not codeset:
                return False
            try:
                return codecs.lookup(codeset).name == "utf-8"
            except LookupError:
                return False
    try:
        return codecs.lookup(locale.getpreferredencoding(False)).name == "utf-8"
    except LookupError:
        return False
