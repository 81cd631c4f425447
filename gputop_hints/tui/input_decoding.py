"""Terminal input decoded leniently: a stray byte never ends the monitor.

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
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import Any

TEXTUAL_MAJOR = 8
"""The Textual major version whose drivers this module was checked against."""

_installed: list[tuple[ModuleType, Any]] = []
_depth = 0


def lenient_decoder(encoding: str) -> Callable[..., codecs.IncrementalDecoder]:
    """``codecs.getincrementaldecoder``, but the decoder it makes replaces bad bytes."""
    factory = codecs.getincrementaldecoder(encoding)
    return functools.partial(factory, errors="replace")


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
    try:
        return int(version("textual").split(".", 1)[0])
    except (PackageNotFoundError, ValueError):
        return None


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
