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

The decoder also bounds escape sequences (:class:`EscapeBounds`): Textual's parser
turns a CSI parameter into a C int or a character, so ``ESC[99999999999~`` -- a
paste, a terminal's answer, a hostile byte stream over SSH -- raised OverflowError
in the input thread and ended the monitor. A CSI sequence with an absurd parameter,
or longer than the parser ever matches, is dropped whole before the parser sees it.
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


MAX_PARAMETER = 0x10FFFF
"""The largest number a CSI parameter may carry: the last Unicode code point, the
largest value a terminal sends (a kitty key report names a key by its code point)."""

MAX_SEQUENCE_CHARS = 32
"""The longest CSI sequence kept: Textual's parser stops matching at this length
(``_MAX_SEQUENCE_SEARCH_THRESHOLD``) and replays the characters as typed keys."""

MAX_TERMINAL_CELLS = 2000
"""The most rows or columns an in-band size report (``ESC[48;rows;cols;...t``) may
give: a bigger one would have the app lay out and draw that many cells."""

_MAX_DIGITS = len(str(MAX_PARAMETER))

_CSI = re.compile(r"\x1b\[(?P<body>[ -?]*)(?:(?P<final>[@-~])|\Z)")
"""A CSI sequence (parameters, intermediates, a final byte), or one cut at the end of a read."""

_CSI_REST = re.compile(r"[ -?]*(?P<final>[@-~])?")
"""The rest of a CSI sequence that began in an earlier read."""

_NUMBER = re.compile(r"\d+")

_KEY_REPORT = re.compile(r"\x1b\[((?:[\d:]*;?){2,3})[u~A-FHP-S]")
"""What Textual's parser reads as a (kitty) key report: its first two fields, the
key and the modifiers, go to ``int()`` whole."""


def absurd_escape(sequence: str) -> bool:
    """Whether a CSI sequence (complete or cut) must not reach Textual's parser: too long
    for it, a parameter past :data:`MAX_PARAMETER`, or a size report past
    :data:`MAX_TERMINAL_CELLS`."""
    if len(sequence) > MAX_SEQUENCE_CHARS:
        return True
    numbers = _NUMBER.findall(sequence)
    if any(len(n) > _MAX_DIGITS or int(n) > MAX_PARAMETER for n in numbers):
        return True
    if (key := _KEY_REPORT.fullmatch(sequence)) is not None:
        key_and_modifiers = key[1].split(";")[:2]
        if not all(field.isdigit() or not field for field in key_and_modifiers):
            return True  # "1:2" (alternate keys, event types): int() raised ValueError
    if sequence.startswith("\x1b[48;") and sequence.endswith("t"):
        return any(int(n) > MAX_TERMINAL_CELLS for n in numbers[1:3])
    return False


class EscapeBounds:
    """Drops absurd CSI sequences (:func:`absurd_escape`) from decoded terminal input,
    read by read.

    A sequence cut at the end of a read is held until the next read completes it,
    so the parser never sees the start of one that turns out absurd; the input
    thread takes it back with :meth:`release` when no more bytes come (a cut that
    was never completed, or Alt+[ typed alone). An Esc ending a read goes on at
    once (it is the Esc key, mostly) and is judged with what follows it. One
    already too long to keep is dropped at once, and so is the rest of it in the
    reads that follow."""

    def __init__(self) -> None:
        self._pending = ""
        self._sent = 0
        """How many characters of ``_pending`` the parser has had already (its Esc)."""
        self._discarding = False

    @property
    def holding(self) -> bool:
        """Whether a cut sequence waits for :meth:`release` or the next read."""
        return len(self._pending) > self._sent

    def filter(self, text: str) -> str:
        """``text`` without absurd CSI sequences (a cut one at its end is held back)."""
        if self._discarding:
            rest = _CSI_REST.match(text)
            assert rest is not None  # the pattern matches the empty string
            self._discarding = rest["final"] is None and rest.end() == len(text)
            text = text[rest.end() :]
        text, sent = self._pending + text, self._sent
        self._pending, self._sent = "", 0
        out: list[str] = []
        pos = 0
        for match in _CSI.finditer(text):
            out.append(text[pos : match.start()])
            kept = self._keep(match)
            if sent and match.start() == 0:
                if self._pending:  # cut again: its Esc is still the one sent
                    self._sent = sent
                elif kept:
                    kept = kept[sent:]
                sent = 0
            out.append(kept)
            pos = match.end()
        out.append(text[pos:])
        result = "".join(out)[sent:]
        if not self._pending and not self._discarding and result.endswith("\x1b"):
            self._pending, self._sent = "\x1b", 1
        return result

    def _keep(self, match: re.Match[str]) -> str:
        sequence = match[0]
        if match["final"] is None:  # cut by the end of the read
            if len(sequence) > MAX_SEQUENCE_CHARS:
                self._discarding = True
            else:
                self._pending = sequence
            return ""
        return "" if absurd_escape(sequence) else sequence

    def release(self) -> str:
        """The sequence held back at the end of the last read, unless it is absurd
        already: no more bytes came to complete it."""
        pending, sent = self._pending, self._sent
        self._pending, self._sent = "", 0
        return "" if absurd_escape(pending) else pending[sent:]


class _LenientDecoder:
    """An incremental decoder that replaces bad bytes, bounds escape sequences and
    coalesces input floods."""

    def __init__(self, factory: Callable[..., codecs.IncrementalDecoder]) -> None:
        self._inner = factory(errors="replace")
        self._bounds = EscapeBounds()
        self._flood_until = 0.0

    @property
    def holding(self) -> bool:
        """Whether a sequence cut at the end of a read waits (:meth:`release`)."""
        return self._bounds.holding

    def release(self) -> str:
        """What was held back at the end of the last read: no more bytes came."""
        return self._bounds.release()

    def decode(self, data: bytes, final: bool = False) -> str:
        text = self._bounds.filter(self._inner.decode(data, final))
        if final:
            text += self._bounds.release()
        if len(text) < FLOOD_CHARS:
            return text
        now = time.monotonic()
        shown = coalesce_flood(text, only_quit=now < self._flood_until)
        if shown is not text:
            self._flood_until = now + FLOOD_QUIET_S
        return shown

    def reset(self) -> None:
        self._inner.reset()
        self._bounds = EscapeBounds()

    def getstate(self) -> tuple[bytes, int]:
        return self._inner.getstate()

    def setstate(self, state: tuple[bytes, int]) -> None:
        self._inner.setstate(state)


def lenient_decoder(encoding: str) -> Callable[[], _LenientDecoder]:
    """``codecs.getincrementaldecoder``, but the decoder it makes replaces bad bytes,
    drops absurd escape sequences (:class:`EscapeBounds`) and coalesces floods of keys
    (:func:`coalesce_flood`)."""
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
