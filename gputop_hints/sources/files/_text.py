"""Reading a log file as text, lazily: gzip, BOMs, UTF-16, CRLF, overlong lines.

Everything here works line by line with a bounded buffer, so a multi-GB log
costs constant memory. Lines come back without their line ending; Windows
(CRLF) and old Mac (CR) endings are folded by universal-newline mode.
"""

from __future__ import annotations

import codecs
import contextlib
import copy
import io
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from gputop_hints.sources.files._prefix import LineView
from gputop_hints.streams import (
    compressed_unread,
    open_maybe_gzip,
    require_regular_file,
    stream_cut,
)

HEAD_BYTES = 64 * 1024
"""How much of a file the format sniffers look at."""
MAX_LINE_CHARS = 1024 * 1024
"""A longer line is skipped as malformed (a log line is a few hundred bytes)."""

MAX_NUL_RUNS = 8
"""More separate NUL runs than this in the head is binary data (UTF-16 without a BOM,
an executable), not a text log with a pre-allocated or crash-cut stretch."""

BadLine = Callable[[int, str], None]

_NUL_RUN_RE = re.compile("\x00+")


def after_nuls(line: str) -> tuple[str, str | None]:
    """A line -> (the text after its last NUL run, why it is a bad record; None for a
    line without NULs). Two loggers sharing a file, a pre-allocated file or one cut
    by a crash leave runs of NULs: each run is a bad record at its line, and a
    record written after it is kept (the reader judges it as any other line)."""
    if "\x00" not in line:
        return line, None
    nuls = line.count("\x00")
    before, _, tail = line.rpartition("\x00")
    lost = before.replace("\x00", "").strip()
    if not tail.strip():
        if lost:
            return "", f"a record cut short by {nuls} NUL byte(s): skipped"
        return "", f"{nuls} NUL byte(s) (a pre-allocated or crash-cut stretch): skipped"
    if lost:
        return tail, f"a record cut short by {nuls} NUL byte(s): skipped, the text after kept"
    return tail, f"{nuls} NUL byte(s) before the text of this line: skipped, the text kept"


def _encoding_for(head: bytes) -> str:
    if head.startswith(codecs.BOM_UTF16_LE) or head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16"  # PowerShell's ">" writes UTF-16 with a BOM
    return "utf-8-sig"  # strips a UTF-8 BOM when there is one


class TextSource:
    """One pass over a (possibly gzip-, xz- or bzip2-compressed) text file, line by line."""

    def __init__(
        self,
        path: Path,
        on_bad_line: BadLine | None = None,
        *,
        newline: str | None = None,
        prefix: LineView | None = None,
    ) -> None:
        """``newline=""`` keeps CR and LF as they are (a terminal capture needs both);
        the default folds CRLF and CR into line ends. ``prefix``: what :meth:`lines`
        takes off the start of each line (a time stamp ``ts`` wrote, see ``_prefix``)."""
        self.path = path
        self.prefix = prefix
        self.on_bad_line = on_bad_line
        self.error: str | None = None
        """Why reading stopped early (truncated gzip...), None when it reached the end."""
        self.cut: str | None = None
        """Where a compressed stream cut short ended, once read to there."""
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
        if len(text) < max_chars:
            self._ended(0)
        lines = text.split("\n")  # line ends are already "\n" (universal newlines)
        if lines and lines[-1] == "":
            lines.pop()
        return lines

    def lines(self) -> Iterator[tuple[int, str]]:
        """(1-based line number, text without the line ending, nor :attr:`prefix`)."""
        if self.prefix is None:
            return self._lines()
        return self.prefix.lines(self._lines())

    def _lines(self) -> Iterator[tuple[int, str]]:
        number = 0
        readline = self._text.readline
        while True:
            try:
                line = readline(MAX_LINE_CHARS)
            except (EOFError, OSError, zlib.error, UnicodeError) as exc:
                self.error = f"could not read past line {number}: {exc}"
                if self.on_bad_line is not None:
                    self.on_bad_line(number + 1, f"unreadable: {exc}")
                return
            if not line:
                self._ended(number)
                return
            number += 1
            if line[-1] == "\n":
                if "\x00" not in line:  # the common case: a whole line of text
                    yield number, line[:-1]
                    continue
            elif len(line) >= MAX_LINE_CHARS:
                # Overlong line (binary garbage, a missing newline, a long NUL run):
                # skip the rest of it; a record after a NUL run at its end is kept.
                nul_run = line.count("\x00") * 2 > len(line)
                more = ""
                try:
                    while True:
                        more = self._text.readline(MAX_LINE_CHARS)
                        if not more or more.endswith("\n"):
                            break
                except (EOFError, OSError, zlib.error, UnicodeError):
                    pass
                if self.on_bad_line is not None:
                    kind = "a run of NUL bytes" if nul_run else "line"
                    self.on_bad_line(number, f"{kind} longer than {MAX_LINE_CHARS} characters")
                tail = more.rstrip("\n").rpartition("\x00")[2] if "\x00" in more else ""
                if nul_run and tail.strip():
                    yield number, tail
                continue
            text, why = after_nuls(line.rstrip("\n"))
            if why is not None:
                if self.on_bad_line is not None:
                    self.on_bad_line(number, why)
                if not text.strip():
                    continue
            yield number, text

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
                self._ended(0)
                return
            yield piece

    def _ended(self, line_number: int) -> None:
        """At the end of the text: a compressed stream cut short (a writer killed
        mid-file) was read up to its cut; :attr:`cut` says where it ended."""
        cut = stream_cut(self._binary)
        if cut is not None:
            where = f"line {line_number}" if line_number else "there"
            self.cut = self.error = f"{cut}: read up to {where}"

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
        self.cut: str | None = None
        """Where a compressed stream cut short within the head ended."""
        source = TextSource(path)
        self.gzipped = source.gzipped
        self.encoding = source.encoding
        try:
            # At most max_bytes characters, whatever the file holds: a file of one
            # endless line (16 GB of NULs, a sparse file) costs no more than any other.
            raw = source.head(max_bytes)
            self.error = source.error
            self.cut = source.cut
        finally:
            source.close()
        self._raw = "\n".join(raw)
        # The sniffers see what the reader will: the text after a NUL run, or a
        # blank line where NULs (or a record they cut) stood.
        self.lines = [after_nuls(line)[0] for line in raw]

    def stripped(self, prefix: LineView) -> Head:
        """This head as the readers see it under ``prefix``: each line without it."""
        head = copy.copy(self)
        head.lines = [text for _n, text in prefix.lines(enumerate(self.lines, start=1))]
        return head

    @property
    def nonblank(self) -> list[str]:
        return [line for line in self.lines if line.strip()]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def looks_binary(self) -> str | None:
        """A reason when the head is not text (NULs, control characters, undecodable bytes).

        A few runs of NULs between text (a pre-allocated or crash-cut stretch) are not
        held against it: the text around them is judged alone. NULs and nothing else
        (a sparse file) or NULs scattered everywhere are binary."""
        text = self._raw
        if not text:
            return None
        if not self.gzipped:  # zstd, zip ...: say how to unpack it, not just "binary"
            try:
                with open(self.path, "rb") as f:
                    packed = compressed_unread(f.read(8))
            except OSError:
                packed = None
            if packed is not None:
                return packed
        runs = len(_NUL_RUN_RE.findall(text))
        if runs > MAX_NUL_RUNS:
            return f"binary data ({runs} separate runs of NUL bytes in the first {len(text)})"
        if runs:
            nuls = text.count("\x00")
            text = _NUL_RUN_RE.sub("", text)
            if not text.strip():
                return f"binary data ({nuls} NUL bytes and no text in the first {nuls})"
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


_Meaning = TypeVar("_Meaning")


class HeaderMemo(Generic[_Meaning]):
    """What the ``#`` lines of a log that repeats them mean (``nvidia-smi dmon`` and
    ``pmon`` print their header pair every few rows), each distinct text worked out
    once. The readers find the ``#`` lines themselves, inline on their per-line path;
    only those lines come here."""

    MAX = 64
    """Distinct texts remembered (past them, a line is worked out each time)."""

    def __init__(self, meaning: Callable[[str], _Meaning]) -> None:
        self._meaning = meaning
        self._seen: dict[str, _Meaning] = {}

    def __call__(self, text: str) -> _Meaning:
        seen = self._seen
        if text in seen:
            return seen[text]
        what = self._meaning(text)
        if len(seen) < self.MAX:
            seen[text] = what
        return what
