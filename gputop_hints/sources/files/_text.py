"""Reading a log file as text, lazily: gzip, BOMs, UTF-16, CRLF, overlong lines.

Everything here works line by line with a bounded buffer, so a multi-GB log
costs constant memory. Lines come back without their line ending; Windows
(CRLF) and old Mac (CR) endings are folded by universal-newline mode.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from gputop_hints.streams import open_maybe_gzip, require_regular_file

HEAD_BYTES = 64 * 1024
"""How much of a file the format sniffers look at."""
MAX_LINE_CHARS = 1024 * 1024
"""A longer line is skipped as malformed (a log line is a few hundred bytes)."""

BadLine = Callable[[int, str], None]


def _encoding_for(head: bytes) -> str:
    if head.startswith(codecs.BOM_UTF16_LE) or head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16"  # PowerShell's ">" writes UTF-16 with a BOM
    return "utf-8-sig"  # strips a UTF-8 BOM when there is one


class TextSource:
    """One pass over a (possibly gzipped) text file, line by line."""

    def __init__(
        self, path: Path, on_bad_line: BadLine | None = None, *, newline: str | None = None
    ) -> None:
        """``newline=""`` keeps CR and LF as they are (a terminal capture needs both);
        the default folds CRLF and CR into line ends."""
        self.path = path
        self.on_bad_line = on_bad_line
        self.error: str | None = None
        """Why reading stopped early (truncated gzip...), None when it reached the end."""
        binary, self.gzipped = open_maybe_gzip(path)
        self._binary = binary
        try:
            head = binary.peek(4)[:4]
        except (OSError, EOFError, zlib.error):
            head = b""
        self.encoding = _encoding_for(head)
        self._text = io.TextIOWrapper(
            binary, encoding=self.encoding, errors="replace", newline=newline
        )

    def head(self, max_chars: int) -> list[str]:
        """The first ``max_chars`` characters as lines (without their line ends); the
        last may be cut short. Reads nothing past them."""
        try:
            text = self._text.read(max_chars)
        except (EOFError, OSError, zlib.error, UnicodeError) as exc:
            self.error = f"could not read the start of the file: {exc}"
            return []
        lines = text.split("\n")  # line ends are already "\n" (universal newlines)
        if lines and lines[-1] == "":
            lines.pop()
        return lines

    def lines(self) -> Iterator[tuple[int, str]]:
        """(1-based line number, text without the line ending)."""
        number = 0
        while True:
            try:
                line = self._text.readline(MAX_LINE_CHARS)
            except (EOFError, OSError, zlib.error, UnicodeError) as exc:
                self.error = f"could not read past line {number}: {exc}"
                if self.on_bad_line is not None:
                    self.on_bad_line(number + 1, f"unreadable: {exc}")
                return
            if not line:
                return
            number += 1
            if not line.endswith("\n") and len(line) >= MAX_LINE_CHARS:
                # Overlong line (binary garbage, a missing newline): skip the rest of it.
                try:
                    while True:
                        more = self._text.readline(MAX_LINE_CHARS)
                        if not more or more.endswith("\n"):
                            break
                except (EOFError, OSError, zlib.error, UnicodeError):
                    pass
                if self.on_bad_line is not None:
                    self.on_bad_line(number, f"line longer than {MAX_LINE_CHARS} characters")
                continue
            yield number, line.rstrip("\n")

    def chunks(self, size: int = 64 * 1024) -> Iterator[str]:
        """The text in pieces of at most ``size`` characters, whatever its line breaks
        (a ``watch`` capture rewrites the screen for megabytes without one)."""
        while True:
            try:
                piece = self._text.read(size)
            except (EOFError, OSError, zlib.error, UnicodeError) as exc:
                self.error = f"could not read further: {exc}"
                if self.on_bad_line is not None:
                    self.on_bad_line(0, f"unreadable: {exc}")
                return
            if not piece:
                return
            yield piece

    def close(self) -> None:
        with contextlib.suppress(OSError, EOFError, zlib.error):
            self._text.close()
        with contextlib.suppress(OSError, EOFError, zlib.error):
            self._binary.close()


class Head:
    """The first few KB of a file, decoded, for the format sniffers."""

    def __init__(self, path: Path, max_bytes: int = HEAD_BYTES) -> None:
        self.path = path
        self.lines: list[str] = []
        # Refused before opening: a FIFO would block here and a device never end.
        self.size = require_regular_file(path)
        self.gzipped = False
        self.error: str | None = None
        source = TextSource(path)
        self.gzipped = source.gzipped
        self.encoding = source.encoding
        try:
            # At most max_bytes characters, whatever the file holds: a file of one
            # endless line (16 GB of NULs, a sparse file) costs no more than any other.
            self.lines = source.head(max_bytes)
            self.error = source.error
        finally:
            source.close()

    @property
    def nonblank(self) -> list[str]:
        return [line for line in self.lines if line.strip()]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def looks_binary(self) -> str | None:
        """A reason when the head is not text (NULs, control characters, undecodable bytes)."""
        text = self.text
        if not text:
            return None
        # The ESC starting a terminal sequence is text too: a watch capture is full of them.
        escapes = text.count("\x1b[") + text.count("\x1b(") + text.count("\x1b]")
        bad = (
            sum(
                1
                for ch in text
                if ch == "\ufffd" or ch == "\x00" or (ch < " " and ch not in "\t\r\n")
            )
            - escapes
        )
        if bad > max(2, len(text) // 20):
            return f"binary data ({bad} non-text characters in the first {len(text)})"
        return None
