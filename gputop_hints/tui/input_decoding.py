"""Terminal input decoded leniently: a stray byte never ends the monitor, and a
flood of pasted keys costs what one of each would.

Textual's Linux drivers decode standard input with a strict UTF-8 decoder, so
one byte that is not UTF-8 -- a mouse report in the legacy X10 encoding past
column 95, a paste of binary junk, line noise over a flaky SSH link, ``0xff``
typed by a terminal in a Latin-1 locale -- raises ``UnicodeDecodeError`` in the
input thread, and Textual turns that into a crash of the whole app.

:func:`install` makes the drivers' decoder replace such bytes with U+FFFD (what
every terminal emulator shows for them) instead. It swaps the one name the
drivers look the decoder up by, ``getincrementaldecoder`` in their modules, for
a version that passes ``errors="replace"``; nothing else in those modules uses
that name. Like :mod:`.partial_output` it is installed only while an app runs
and only on the Textual major version it was checked against.
"""

from __future__ import annotations

import codecs
import functools
import re
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from gputop_hints.tui.textual_version import textual_major

TEXTUAL_MAJOR = 8
"""The Textual major version whose drivers this module was checked against."""

_installed: list[tuple[ModuleType, Any]] = []
_depth = 0


FLOOD_CHARS = 256
"""Plain characters in one read (the drivers read 4 KiB at a time) past which the read
is a flood, not typing: key repeat gives ~30 a second, a fast typist ~15."""

_ESCAPE = re.compile(
    r"\x1b(?:\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|O.|.)", re.S
)
"""A terminal escape sequence (CSI, OSC, SS3 -- ``ESC O B`` is Down in application
cursor mode, F1-F4 everywhere -- or ESC and one character): kept whole."""


FLOOD_QUIET_S = 0.5
"""After a flood, further floods within this long keep only the quit keys: a paste
arrives as many reads, and one of each toggle is all it gets."""

QUIT_CHARS = "q\x03"
"""``q`` and Ctrl+C: never dropped, whatever the flood."""


def coalesce_flood(text: str, *, only_quit: bool = False) -> str:
    """One read of terminal input with a flood of plain characters reduced to one of
    each, in order of first appearance; escape sequences (mouse reports, arrow keys,
    bracketed-paste markers) are kept as they are.

    Pasting 100 KB of ``?ts`` (help, sort, theme) into a monitor that is not in
    bracketed-paste mode (tmux ``paste-buffer``, a serial console) arrives as
    thousands of keys, each a screen change or a restyle; this turns a read of
    them into one ``?``, one ``s`` and one ``t``, and a ``q`` among them still
    quits. Reads with fewer than :data:`FLOOD_CHARS` plain characters -- anything a
    person types -- pass untouched. ``only_quit`` keeps only the quit keys of the
    plain characters (a flood's later reads)."""
    if len(text) < FLOOD_CHARS:
        return text
    pieces = _ESCAPE.split(text)
    plain = sum(len(p) for p in pieces)
    if plain < FLOOD_CHARS:
        return text
    escapes = _ESCAPE.findall(text)
    seen: dict[str, None] = {}
    out: list[str] = []
    for i, piece in enumerate(pieces):
        for ch in piece:
            if only_quit and ch not in QUIT_CHARS:
                continue
            if ch not in seen:
                seen[ch] = None
                out.append(ch)
        if i < len(escapes):
            out.append(escapes[i])
    return "".join(out)


class _LenientDecoder:
    """An incremental decoder that replaces bad bytes and coalesces input floods."""

    def __init__(self, factory: Callable[..., codecs.IncrementalDecoder]) -> None:
        self._inner = factory(errors="replace")
        self._flood_until = 0.0

    def decode(self, data: bytes, final: bool = False) -> str:
        text = self._inner.decode(data, final)
        if len(text) < FLOOD_CHARS:
            return text
        now = time.monotonic()
        shown = coalesce_flood(text, only_quit=now < self._flood_until)
        if shown is not text:
            self._flood_until = now + FLOOD_QUIET_S
        return shown

    def reset(self) -> None:
        self._inner.reset()

    def getstate(self) -> tuple[bytes, int]:
        return self._inner.getstate()

    def setstate(self, state: tuple[bytes, int]) -> None:
        self._inner.setstate(state)


def lenient_decoder(encoding: str) -> Callable[[], _LenientDecoder]:
    """``codecs.getincrementaldecoder``, but the decoder it makes replaces bad bytes
    and coalesces floods of keys (:func:`coalesce_flood`)."""
    factory = codecs.getincrementaldecoder(encoding)
    return functools.partial(_LenientDecoder, factory)


def _driver_modules() -> list[ModuleType]:
    modules: list[ModuleType] = []
    try:
        from textual.drivers import linux_driver
    except ImportError:  # not on this platform
        return modules
    modules.append(linux_driver)
    try:
        from textual.drivers import linux_inline_driver
    except ImportError:
        pass
    else:
        modules.append(linux_inline_driver)
    return [m for m in modules if getattr(m, "getincrementaldecoder", None) is not None]


def _textual_major() -> int | None:
    return textual_major()


def install() -> bool:
    """Make the drivers' input decoding lenient (nested calls count); whether it is."""
    global _depth
    if _depth == 0:
        if _textual_major() != TEXTUAL_MAJOR:
            return False
        for module in _driver_modules():
            _installed.append((module, module.getincrementaldecoder))
            module.getincrementaldecoder = lenient_decoder  # type: ignore[attr-defined]
    _depth += 1
    return bool(_installed)


def uninstall() -> None:
    """Undo one :func:`install`; the last one puts the drivers' own decoder back."""
    global _depth
    if _depth == 0:
        return
    _depth -= 1
    if _depth == 0:
        while _installed:
            module, original = _installed.pop()
            module.getincrementaldecoder = original  # type: ignore[attr-defined]
