"""JSON decoding with orjson when it is installed (the ``fast`` extra), read exactly as
the json module reads it.

Every reader of a JSON format decodes through :func:`loads` (or :func:`try_loads`,
where a reader parses a prefix with ``raw_decode``). orjson decodes a recording's tick
line about four times as fast as ``json.loads``; it is used only where it gives what
``json.loads`` gives, on every input:

* orjson refuses what json reads as non-finite (``NaN``, ``Infinity``, ``1e400``),
  a lone surrogate (``"\\ud800"``), bytes that are not UTF-8 (json also reads a BOM and
  UTF-16/32) and text holding surrogates: the line is then decoded by json, which
  reads it, or refuses it with its own message -- a bad line is reported as before.
* orjson reads an integer past 64 bits as a float (json: an ``int``), so input with a
  run of 19 digits or more that may be such an integer is left to json
  (:func:`_long_integer`).
* orjson nests 1024 deep, json about 1000 less the caller's stack: input with
  :data:`MAX_OPENINGS` ``[`` and ``{`` or more is left to json.

Nothing else was found to differ (tests/recording/test_fastjson.py: a battery of edge
cases and 400,000 random numbers, each decoded both ways). Setting
``GPUTOP_HINTS_NO_ORJSON=1`` forces json (for tests and figures).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

ENV = "GPUTOP_HINTS_NO_ORJSON"
"""Set (to anything but "" or "0"), json is used even where orjson is installed."""


def _orjson() -> Callable[[bytes | str], Any] | None:
    if os.environ.get(ENV, "") not in ("", "0"):
        return None
    try:
        import orjson
    except ImportError:
        return None
    return orjson.loads


_FAST = _orjson()
FAST = _FAST is not None
"""Whether orjson decodes (installed, and not turned off by :data:`ENV`)."""

MAX_OPENINGS = 500
"""Input with this many ``[`` and ``{`` (in strings too) may nest deeper than json
reads from a deep stack; json decodes it, and refuses it as it always did."""

_CLASSES = bytearray(b"S" * 256)
for _c in b"0123456789":
    _CLASSES[_c] = ord("0")
for _c in b".eE+":
    _CLASSES[_c] = ord(".")
_CLASS_TABLE = bytes(_CLASSES)
_DIGITS_19 = b"0" * 19
_S = ord("S")

MISSING: Any = object()
"""What :func:`try_loads` returns where orjson did not decode."""


def _long_integer(data: bytes) -> bool:
    """Whether ``data`` may hold an integer of 19 digits or more: a run of 19 digits
    not after a decimal point or in an exponent (strings included: json decodes them)."""
    classes = data.translate(_CLASS_TABLE)
    # A run of 19 digits looked for first (a quick search: other bytes let it skip), then
    # what comes before it: most runs are a float's digits after its decimal point.
    at = classes.find(_DIGITS_19)
    while at >= 0:
        if at == 0 or classes[at - 1] == _S:
            return True
        at = classes.find(_DIGITS_19, at + 19)
    return False


def try_loads(data: bytes | str) -> Any:
    """The JSON value of ``data`` as json reads it, decoded by orjson, or :data:`MISSING`
    where orjson is not used or refuses the input (the caller then asks json)."""
    if _FAST is None:
        return MISSING
    if isinstance(data, str):
        try:
            raw = data.encode()
        except UnicodeEncodeError:  # surrogates: json's to read
            return MISSING
    else:
        raw = data
    if raw.count(b"[") + raw.count(b"{") >= MAX_OPENINGS or _long_integer(raw):
        return MISSING
    try:
        return _FAST(raw)
    except ValueError:
        return MISSING


def loads(data: bytes | str) -> Any:
    """``json.loads(data)``: the same value, or the same exception, faster with orjson."""
    value = try_loads(data)
    if value is MISSING:
        return json.loads(data)
    return value
