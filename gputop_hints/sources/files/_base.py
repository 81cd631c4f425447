"""The SnapshotStream the importers hand out: lazy, closable, one pass per iteration."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from types import TracebackType

from gputop_hints.model import Snapshot
from gputop_hints.sources.files._prefix import LineView
from gputop_hints.sources.files._text import TextSource
from gputop_hints.streams import ReadCounters, StreamInfo

Reader = Callable[[TextSource], Iterator[Snapshot]]


class ImportedStream:
    """Snapshots read lazily from a log file.

    Each ``iter()`` re-reads the file from the start (its counters are reset),
    so a report can make two passes; memory stays constant either way."""

    def __init__(
        self,
        path: Path,
        info: StreamInfo,
        reader: Reader,
        *,
        newline: str | None = None,
        counters: ReadCounters | None = None,
    ) -> None:
        """``newline=""`` hands the reader CR and LF as they are (terminal captures).
        ``counters``: where the reader counts what it finds (bad lines, GPUs seen);
        a fresh one when not given."""
        self.path = path
        self.info = info
        self.counters = counters if counters is not None else ReadCounters()
        self._reader = reader
        self._newline = newline
        self._source: TextSource | None = None
        self.line_prefix: LineView | None = None
        """Taken off the start of each line before the reader sees it (see ``_prefix``)."""

    def _on_bad_line(self, line: int, reason: str) -> None:
        self.counters.note_bad_line(line, reason)

    def __iter__(self) -> Iterator[Snapshot]:
        self.close()
        self.counters.reset()
        source = TextSource(
            self.path,
            on_bad_line=self._on_bad_line,
            newline=self._newline,
            prefix=self.line_prefix,
        )
        self._source = source
        try:
            yield from self._reader(source)
            if source.cut is not None:
                self.counters.found["stream_cut"] = source.cut
        finally:
            source.close()
            if self._source is source:
                self._source = None

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None

    def __enter__(self) -> ImportedStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ReadingStream:
    """A stream read by a generator of its own (a folder of files, a binary file): each
    ``iter()`` resets the counters and starts :meth:`_read` again; closing the stream
    closes the generator (and the files it holds open)."""

    def __init__(self, info: StreamInfo) -> None:
        self.info = info
        self.counters = ReadCounters()
        self._reading: Generator[Snapshot, None, None] | None = None

    def _read(self) -> Generator[Snapshot, None, None]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Snapshot]:
        self.close()
        self.counters.reset()
        self._reading = self._read()
        return self._reading

    def close(self) -> None:
        if self._reading is not None:
            self._reading.close()
            self._reading = None

    def __enter__(self) -> ReadingStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
