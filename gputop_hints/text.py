"""Strings from outside, made safe to show on a terminal.

On a shared node anybody can name a process, and anybody can write a log: a
command line holding ``ESC ] 0;PWNED BEL`` retitles the viewer's terminal, an
OSC 52 sequence in a CSV header writes the viewer's clipboard, ``ESC [2J``
clears the screen. Every string that did not come from this program -- command
lines, user and host names, GPU and job names, file names, file contents,
theme names, error texts of libraries -- passes through :func:`visible` before
it reaches a terminal or a text output:

* C0 control characters (U+0000-U+001F) and DEL are shown in caret notation,
  as ``cat -v`` and terminals write them: ``ESC`` is ``^[``, ``BEL`` is ``^G``;
* C1 control characters (U+0080-U+009F; ``U+009B`` is a one-character CSI on
  many terminals) are shown as ``\\x9b``;
* the Unicode bidirectional overrides and isolates (U+202A-U+202E,
  U+2066-U+2069), which reorder what follows them on screen, as ``\\u202e``.

:func:`visible_lines` does the same but keeps newlines (and tabs), for whole
multi-line text outputs. JSON output keeps the exact string: ``json.dumps``
escapes every control character itself.
"""

from __future__ import annotations

import functools
import io
import re
from typing import TextIO


@functools.cache
def pattern(source: str, flags: int = 0) -> re.Pattern[str]:
    """``source`` compiled, once per process, at its first use.

    For a regular expression a command may never use: a module keeps the source
    string and calls ``pattern(SOURCE).search(...)`` where it matches, so importing
    the module compiles nothing (``--once`` imports every rule and reader it may
    need but runs few of their expressions).
    """
    return re.compile(source, flags)


_TABLE: dict[int, str] = {}
for _code in range(0x20):
    _TABLE[_code] = "^" + chr(_code + 0x40)
_TABLE[0x7F] = "^?"
for _code in range(0x80, 0xA0):
    _TABLE[_code] = f"\\x{_code:02x}"
for _code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)):
    _TABLE[_code] = f"\\u{_code:04x}"

_LINES_TABLE = {k: v for k, v in _TABLE.items() if k not in (0x09, 0x0A)}

_UNSAFE = "[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
_UNSAFE_IN_LINES = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"


def visible(text: str) -> str:
    """``text`` with every control character shown as visible characters (one line)."""
    if pattern(_UNSAFE).search(text) is None:
        return text
    return text.translate(_TABLE)


def visible_lines(text: str) -> str:
    """Like :func:`visible`, but newlines and tabs stay (a multi-line text output)."""
    if pattern(_UNSAFE_IN_LINES).search(text) is None:
        return text
    return text.translate(_LINES_TABLE)


class VisibleStream(io.TextIOBase):
    """A text stream that shows control characters visibly before passing text on.

    The CLI puts standard error behind one (:func:`gputop_hints.cli.main`): every
    error message, argparse's included, may quote a file name, a CSV header or an
    argument someone else wrote. Newlines and tabs pass through."""

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(visible_lines(text))
        return len(text)

    def flush(self) -> None:
        # IOBase flushes on close and at garbage collection: by then the stream it
        # wraps may be closed (a test's captured stderr, a terminal gone), which is
        # nothing to report.
        if not getattr(self.inner, "closed", False):
            self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.inner, "errors", None)
