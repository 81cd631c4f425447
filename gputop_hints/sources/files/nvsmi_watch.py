"""``watch -n 2 nvidia-smi > gpu.log``: a terminal capture, replayed frame by frame.

The file holds curses output for the terminal watch ran in (80 x 24 unless the
capture says otherwise): only the first frame is drawn in full, later ones
rewrite the cells that changed, and nvidia-smi's wider lines wrap at the
screen's edge. :class:`~._terminal.Screen` replays it; at the end of each redraw
the screen's rows are joined back into nvidia-smi's lines and read as one table
(:mod:`._nvsmi_parser`). A frame whose table does not read whole is counted as
incomplete (``StreamInfo.header["incomplete_frames"]`` and the bad-record count,
numbered by frame). What the screen never showed -- on a 24-row terminal the
Processes box -- stays unknown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _datelines as dates
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._nvsmi_parser import TableReader
from gputop_hints.sources.files._nvsmi_rows import TableGpu, TableSnapshot, read_values_fast
from gputop_hints.sources.files._terminal import Screen
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.nvsmi_table import SnapshotMaker, stream_info
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import (
    METRIC_POWER,
    METRIC_PROCESSES,
    METRIC_SM,
    METRIC_TEMPERATURE,
    METRIC_VRAM,
    ReadCounters,
    note_bad_line,
)

FORMAT = "nvidia-smi-watch"
LABEL = "watch nvidia-smi capture"

_REGION = re.compile(r"\x1b\[1;(\d{1,3})r")
_CURSOR = re.compile(r"\x1b\[(\d{1,3});(\d{1,3})H")


@dataclass
class WatchPlan:
    rows: int
    cols: int
    frames: list[TableSnapshot] = field(default_factory=list)
    processes_shown: bool = False


def screen_size(text: str) -> tuple[int, int]:
    """The terminal's size as the capture shows it: its scroll region and the
    farthest cursor position (watch parks the cursor in the bottom-right corner)."""
    rows, cols = 24, 80
    region = _REGION.search(text)
    if region is not None:
        rows = int(region.group(1))
    for m in _CURSOR.finditer(text):
        rows = max(rows, int(m.group(1)))
        cols = max(cols, int(m.group(2)))
    return min(rows, 500), min(cols, 1000)


def table_lines(screen_rows: list[str], cols: int) -> list[str]:
    """Screen rows -> nvidia-smi's lines: a table row continues on the next screen
    row when that row does not start a line of its own (a bar or a corner)."""
    out: list[str] = []
    append = out.append
    last = len(screen_rows) - 1
    i = 0
    while i < last:
        row = screen_rows[i]
        if row[:1] in _STARTS:
            nxt = screen_rows[i + 1]
            if nxt[:1] not in _STARTS and nxt.strip():
                append(row.ljust(cols) + nxt)
                i += 2
                continue
        append(row)
        i += 1
    if i == last:
        append(screen_rows[i])
    return out


_STARTS = ("|", "+")


def shows_processes(screen_rows: list[str]) -> bool:
    """Whether the screen shows the Processes box's title."""
    return "Processes:" in "\n".join(screen_rows)


def read_frame(
    screen_rows: list[str], cols: int, values: dict[int, TableGpu] | None = None
) -> tuple[TableSnapshot | None, list[str]]:
    """The table on one screen, and what did not read in it; ``values`` gets the GPU of
    each values row read whole in one match (as :attr:`TableReader.values_rows`)."""
    problems: list[str] = []
    reader = TableReader(
        lambda _n, reason: problems.append(reason),
        expect_processes=shows_processes(screen_rows),
    )
    if values is not None:
        reader.values_rows = values
    found: TableSnapshot | None = None
    for number, line in enumerate(table_lines(screen_rows, cols), start=1):
        found = reader.feed(number, line) or found
    return reader.finish() or found, problems


class FrameReader:
    """:func:`read_frame` for one capture, reading again only what a redraw changed.

    Most redraws change the clock and a GPU's values row: the frame's other lines
    are the same as the last frame's, and so is what the table reader makes of them.
    A changed date line then only moves the time, and a changed values row that reads
    whole in one match (as it did before) only replaces its GPU; any other change
    reads the whole table again."""

    def __init__(self, cols: int) -> None:
        self.cols = cols
        self._rows: list[str] = []
        """The last frame's screen rows; ``_spans`` the first row and row count of each
        of its lines, ``_line_of`` the line each row is in, ``_lines`` the lines."""
        self._spans: list[tuple[int, int]] = []
        self._line_of: list[int] = []
        self._lines: list[str] = []
        self._dates: dict[int, dates.TickingDate] = {}
        """By line number, each line that is not a table line, and its time."""
        self._stamps: dict[int, float | None] = {}
        self._values: dict[int, TableGpu] = {}
        """By line number, the GPU each values row read in one match gave."""
        self._table: TableSnapshot | None = None
        self._problems: list[str] = []

    def read(
        self, screen_rows: list[str], changed: Iterable[int] | None = None
    ) -> tuple[TableSnapshot | None, list[str]]:
        """The table on the screen; ``changed``: the rows that may differ from the last
        frame's (None: any)."""
        if len(screen_rows) == len(self._rows) and self._update(
            screen_rows, range(len(screen_rows)) if changed is None else changed
        ):
            return self._current(), list(self._problems)
        self._full(screen_rows)
        return self._current(), list(self._problems)

    def _full(self, screen_rows: list[str]) -> None:
        """Read the whole table, and remember what each line is."""
        self._values = {}
        self._table, self._problems = read_frame(screen_rows, self.cols, self._values)
        self._rows = list(screen_rows)
        self._spans = _spans(screen_rows)
        self._line_of = [i for i, (_, n) in enumerate(self._spans) for _ in range(n)]
        self._lines = table_lines(screen_rows, self.cols)
        self._dates, self._stamps = {}, {}
        for number, line in enumerate(self._lines, start=1):
            text = line.strip()
            if text and text[0] not in "|+":
                ticking = dates.TickingDate()
                self._dates[number], self._stamps[number] = ticking, ticking.read(text)

    def _update(self, screen_rows: list[str], changed: Iterable[int]) -> bool:
        """Take in the changed rows when they leave the table as it was but for times and
        values rows; False when the table must be read again."""
        rows, line_of = self._rows, self._line_of
        lines: set[int] = set()
        for r in changed:
            old, new = rows[r], screen_rows[r]
            if old == new:
                continue
            # What table_lines joins rows by (a bar or a corner first, a blank row) and
            # the Processes title (it decides how the table is read) must stay.
            # (The same first character, not a blank, keeps both: checked first.)
            lead = old[:1]
            if (
                (
                    (lead != new[:1] or lead.isspace())
                    and (
                        (lead in _STARTS) is not (new[:1] in _STARTS)
                        or (not old.strip()) is not (not new.strip())
                    )
                )
                or "Processes:" in old
                or "Processes:" in new
            ):
                return False
            rows[r] = new
            lines.add(line_of[r])
        spans, dated, stamps = self._spans, self._dates, self._stamps
        for i in lines:
            first, count = spans[i]
            line = rows[first] if count == 1 else rows[first].ljust(self.cols) + rows[first + 1]
            ticking = dated.get(i + 1)
            if ticking is None:
                if not self._take(i + 1, line):
                    return False
                continue
            # _take's date line, inline (a redraw's clock: most of what changes).
            self._lines[i] = line
            text = line.strip()
            if not text or text[0] in "|+":
                return False
            stamp = ticking.read(text)
            if (stamp is None) is not (stamps[i + 1] is None):
                return False
            stamps[i + 1] = stamp
        return True

    def _take(self, number: int, line: str) -> bool:
        """Take in the new text of line ``number``; False when that needs a full read."""
        old = self._lines[number - 1]
        self._lines[number - 1] = line
        text = line.strip()
        ticking = self._dates.get(number)
        if ticking is not None:
            if not text or text[0] in "|+":
                return False
            stamp = ticking.read(text)
            if (stamp is None) != (self._stamps[number] is None):
                return False
            self._stamps[number] = stamp
            return True
        gpu = self._values.get(number)
        if gpu is None or not text.startswith("|") or not text.endswith("|"):
            return old.strip() == text
        fresh = TableGpu(index=gpu.index, name=gpu.name, bus_id=gpu.bus_id)
        if not read_values_fast(fresh, text):
            return False
        self._values[number] = fresh
        table = self._table
        if table is not None:
            table.gpus = [fresh if g is gpu else g for g in table.gpus]  # a list of its own
        return True

    def _current(self) -> TableSnapshot | None:
        """The last table, at the time its date line says now: a copy (``_take`` gives
        the one kept other GPUs)."""
        table = self._table
        if table is None:
            return None
        if table.timestamp is None:
            return _with(table, None, table.gpus)
        # A table line with the date glued on is no date line: it did not change.
        return _with(table, self._stamps.get(table.line, table.timestamp), table.gpus)


def _with(table: TableSnapshot, timestamp: float | None, gpus: list[TableGpu]) -> TableSnapshot:
    """``table`` with another time and GPUs."""
    return TableSnapshot(
        table.line, timestamp, table.driver, table.cuda, gpus, table.processes, table.mig_devices
    )


def _spans(screen_rows: list[str]) -> list[tuple[int, int]]:
    """The first row and the number of rows of each of :func:`table_lines`'s lines."""
    spans: list[tuple[int, int]] = []
    last = len(screen_rows) - 1
    i = 0
    while i <= last:
        row = screen_rows[i]
        if i < last and row[:1] in _STARTS:
            nxt = screen_rows[i + 1]
            if nxt[:1] not in _STARTS and nxt.strip():
                spans.append((i, 2))
                i += 2
                continue
        spans.append((i, 1))
        i += 1
    return spans


def sniff(head: Head, mapping: Mapping[str, str] | None) -> WatchPlan | str:
    text = head.text
    if "\x1b[" not in text:
        return "no terminal escape sequences (not a watch capture)"
    if "NVIDIA-SMI" not in text:
        return "terminal output, but no nvidia-smi table in it"
    rows, cols = screen_size(text)
    plan = WatchPlan(rows, cols)
    source = TextSource(head.path, newline="")
    screen = Screen(rows, cols)
    frames = FrameReader(cols)
    try:
        for piece in source.chunks():
            for frame in screen.feed(piece):
                table, _problems = frames.read(frame, screen.changed_rows)
                if table is not None:
                    plan.frames.append(table)
                plan.processes_shown = plan.processes_shown or shows_processes(frame)
                if len(plan.frames) >= 16:
                    break
            if len(plan.frames) >= 16:
                break
    finally:
        source.close()
    return plan


def open_watch(
    path: Path, plan: WatchPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of snapshots of a ``watch nvidia-smi`` capture, one per complete frame."""
    notes = [f"{plan.cols}x{plan.rows} terminal"]
    if mapping:
        notes.append("--map is not used for nvidia-smi tables (their layout names every value)")
    info, interval = stream_info(
        path, FORMAT, LABEL, plan.frames, plan.processes_shown, interval_s, notes
    )
    detail = f"{LABEL}: {path.name}"
    counters = ReadCounters()

    def reader(source: TextSource) -> Iterator[Snapshot]:
        maker = SnapshotMaker(counters, interval, detail)
        screen = Screen(plan.rows, plan.cols)
        frames = FrameReader(plan.cols)
        counts = {"frames": 0, "incomplete": 0}
        counters.found.update(frames=0, incomplete_frames=0, noise_characters=0)
        for piece in source.chunks():
            for frame in screen.feed(piece):
                counts["frames"] += 1
                table, problems = frames.read(frame, screen.changed_rows)
                for reason in problems:
                    note_bad_line(
                        counters, counts["frames"], f"watch frame {counts['frames']}: {reason}"
                    )
                if table is None:
                    counts["incomplete"] += 1
                    if not problems:
                        reason = "watch frame without a whole table"
                        counters.note_bad_line(counts["frames"], reason)
                _update(counters, counts, screen)
                if table is not None:
                    yield maker.make(table)
        if screen.dirty:  # the capture ends in the middle of a redraw
            counts["frames"] += 1
            counts["incomplete"] += 1
            note_bad_line(
                counters, counts["frames"], f"watch frame {counts['frames']}: cut short at the end"
            )
            _update(counters, counts, screen)

    return ImportedStream(path, info, reader, newline="", counters=counters)


def _update(counters: ReadCounters, counts: dict[str, int], screen: Screen) -> None:
    counters.found["frames"] = counts["frames"]
    counters.found["incomplete_frames"] = counts["incomplete"]
    counters.found["noise_characters"] = screen.noise


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_watch,
    metrics=frozenset({METRIC_SM, METRIC_VRAM, METRIC_TEMPERATURE, METRIC_POWER, METRIC_PROCESSES}),
    docs="watch captures",
)
