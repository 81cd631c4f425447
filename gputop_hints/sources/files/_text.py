"""Reading a log file as text, lazily: gzip, BOMs, UTF-16, CRLF, overlong lines.

Everything here works line by line with a bounded buffer, so a multi-GB log
costs constant memory. Lines come back without their line ending; Windows
(CRLF) and old Mac (CR) endings are folded by universal-newline mode.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import itertools
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from gputop_hints.streams import open_maybe_gzip, require_regular_file

HEAD_BYTES = 64 * 1024
"""How much of a file the format sniffers look at."""
MAX_LINE_CHARS = 1024 * 1024
"""A longer line is skipped as malformed (a log line is a few hundred bytes)."""

BLOCK_BYTES = 8192
"""How much :meth:`TextSource.lines` reads and decodes at a time: what the text reader
reads (its chunk size), so a file is read as far ahead as before (the report sizes
its hint stride by how far reading got, see ``read_positions``)."""

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
        self._newline = newline
        self._text_used = False
        """Whether the text reader has read (then lines() reads on from it)."""
        self._text = io.TextIOWrapper(
            binary, encoding=self.encoding, errors="replace", newline=newline
        )

    def head(self, max_chars: int) -> list[str]:
        """The first ``max_chars`` characters as lines (without their line ends); the
        last may be cut short. Reads nothing past them."""
        self._text_used = True
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
        if self._newline is None and not self._text_used:
            return self._bulk_lines()
        return self._read_lines()

    def _read_lines(self) -> Iterator[tuple[int, str]]:
        """:meth:`lines` a readline at a time (CR kept as a line end: ``newline=""``)."""
        self._text_used = True
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

    def _bulk_lines(self) -> Iterator[tuple[int, str]]:
        """:meth:`lines` decoded in blocks of :data:`BLOCK_BYTES` (as the text reader
        decodes them: universal newlines), the lines of a block split at once. Reads
        as :meth:`_read_lines` (``readline(MAX_LINE_CHARS)``) would: the same numbers,
        NUL runs and overlong lines, every line before an unreadable stretch, and the
        line cut by it lost."""
        decoder = io.IncrementalNewlineDecoder(
            codecs.getincrementaldecoder(self.encoding)(errors="replace"), translate=True
        )
        read = getattr(self._binary, "read1", self._binary.read)
        decode = decoder.decode
        number = 0
        buf = ""
        """Text after the last whole line given out (no line end in it)."""
        pending: str | None = None
        """Decoded text after an overlong line, read with it."""
        eof = False
        while True:
            if pending is not None:
                text, pending = pending, None
            elif eof:
                if buf:  # the last line, without a line end
                    kept = buf if "\x00" not in buf else self._nul_line(number + 1, buf)
                    if kept is not None:
                        yield number + 1, kept
                return
            else:
                try:
                    data = read(BLOCK_BYTES)
                    text = decode(data, final=not data)
                except (EOFError, OSError, zlib.error, UnicodeError) as exc:
                    self._unreadable(number, exc)
                    return
                eof = not data
            end = text.rfind("\n")
            if end < 0:
                buf += text
                if len(buf) < MAX_LINE_CHARS:
                    continue
                number += 1
                kept, pending, eof, failure = self._skip_overlong(number, buf, read, decode, eof)
                buf = ""
                if kept is not None:
                    yield number, kept
                if failure is not None:
                    self._unreadable(number, failure)
                    return
                continue
            block = buf + text[:end] if buf else text[:end]
            buf = text[end + 1 :]
            parts = block.split("\n")
            if "\x00" not in block and len(block) < MAX_LINE_CHARS:
                yield from zip(itertools.count(number + 1), parts)
                number += len(parts)
                continue
            for line in parts:
                number += 1
                if len(line) >= MAX_LINE_CHARS:
                    whole = line + "\n"
                    last = (len(whole) - 1) // MAX_LINE_CHARS * MAX_LINE_CHARS
                    kept = self._overlong(number, whole[:MAX_LINE_CHARS], whole[last:])
                elif "\x00" not in line:
                    kept = line
                else:
                    kept = self._nul_line(number, line)
                if kept is not None:
                    yield number, kept

    def _skip_overlong(
        self,
        number: int,
        start: str,
        read: Callable[[int], bytes],
        decode: Callable[..., str],
        eof: bool,
    ) -> tuple[str | None, str | None, bool, BaseException | None]:
        """Read to the end of an overlong line (``start``: its first MAX_LINE_CHARS or
        more, no line end), keeping only the last piece of MAX_LINE_CHARS that
        ``readline(MAX_LINE_CHARS)`` would have read it in. -> (the text kept of it
        (see :meth:`_overlong`), the text read after it, at the end of the file?, why
        reading failed)."""
        first = start[:MAX_LINE_CHARS]
        seen = len(start)
        piece = start[seen // MAX_LINE_CHARS * MAX_LINE_CHARS :]
        more = ""
        after: str | None = None
        failure: BaseException | None = None
        while not eof:
            try:
                data = read(BLOCK_BYTES)
                text = decode(data, final=not data)
            except (EOFError, OSError, zlib.error, UnicodeError) as exc:
                failure = exc
                break
            eof = not data
            end = text.find("\n")
            if end >= 0:
                last = (seen + end) // MAX_LINE_CHARS * MAX_LINE_CHARS
                if last >= seen:
                    more = text[last - seen : end + 1]
                else:
                    more = piece[last - (seen - len(piece)) :] + text[: end + 1]
                after = text[end + 1 :]
                break
            seen += len(text)
            keep = seen % MAX_LINE_CHARS
            piece = (piece + text)[-keep:] if keep else ""
        return self._overlong(number, first, more), after, eof, failure

    def _unreadable(self, number: int, exc: BaseException) -> None:
        self.error = f"could not read past line {number}: {exc}"
        if self.on_bad_line is not None:
            self.on_bad_line(number + 1, f"unreadable: {exc}")

    def _overlong(self, number: int, first: str, more: str) -> str | None:
        """An overlong line, read as ``readline(MAX_LINE_CHARS)`` pieces: the first and
        the last (``more``, with its line end; "" at the end of the file). Counted bad;
        the text kept after a NUL run at its end, else None."""
        nul_run = first.count("\x00") * 2 > len(first)
        if self.on_bad_line is not None:
            kind = "a run of NUL bytes" if nul_run else "line"
            self.on_bad_line(number, f"{kind} longer than {MAX_LINE_CHARS} characters")
        tail = more.rstrip("\n").rpartition("\x00")[2] if "\x00" in more else ""
        return tail if nul_run and tail.strip() else None

    def _nul_line(self, number: int, line: str) -> str | None:
        """A line with NULs: the text kept after them (None: nothing), counted bad."""
        text, why = after_nuls(line)
        if why is not None:
            if self.on_bad_line is not None:
                self.on_bad_line(number, why)
            if not text.strip():
                return None
        return text

    def chunks(self, size: int = 64 * 1024) -> Iterator[str]:
        """The text in pieces of at most ``size`` characters, whatever its line breaks
        (a ``watch`` capture rewrites the screen for megabytes without one)."""
        self._text_used = True
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
            raw = source.head(max_bytes)
            self.error = source.error
        finally:
            source.close()
        self._raw = "\n".join(raw)
        # The sniffers see what the reader will: the text after a NUL run, or a
        # blank line where NULs (or a record they cut) stood.
        self.lines = [after_nuls(line)[0] for line in raw]

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
