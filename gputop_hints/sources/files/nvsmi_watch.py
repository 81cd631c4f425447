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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _datelines as dates
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._nvsmi_parser import TableReader
from gputop_hints.sources.files._nvsmi_rows import TableSnapshot
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


def read_frame(screen_rows: list[str], cols: int) -> tuple[TableSnapshot | None, list[str]]:
    """The table on one screen, and what did not read in it."""
    problems: list[str] = []
    reader = TableReader(
        lambda _n, reason: problems.append(reason),
        expect_processes=shows_processes(screen_rows),
    )
    found: TableSnapshot | None = None
    for number, line in enumerate(table_lines(screen_rows, cols), start=1):
        found = reader.feed(number, line) or found
    return reader.finish() or found, problems


class FrameReader:
    """:func:`read_frame` for one capture, remembering the last frame read.

    Most redraws change only the clock: the frame's lines other than its date
    lines are then the same as the last frame's, and so is what the table reader
    makes of them except the time -- which is taken from the new date line
    instead of reading the whole table again."""

    def __init__(self, cols: int) -> None:
        self.cols = cols
        self._lines: list[str] | None = None
        """The last frame's lines; ``_marks`` says what each is (the table line
        itself, or whether a non-table line is a date line) and ``_stamps`` the
        time of each date line -- kept up to date line by line."""
        self._marks: list[str | bool] = []
        self._stamps: dict[int, float] = {}
        self._processes = False
        self._valid = False
        """Whether ``_last`` was read from lines marked as ``_marks`` now are."""
        self._last: tuple[TableSnapshot | None, list[str]] = (None, [])

    def read(self, screen_rows: list[str]) -> tuple[TableSnapshot | None, list[str]]:
        lines = table_lines(screen_rows, self.cols)
        processes = shows_processes(screen_rows)  # read_frame's expectation
        same = self._valid and processes == self._processes
        before = self._lines
        if before is not None and len(before) == len(lines):
            marks, stamps = self._marks, self._stamps
            for i, line in enumerate(lines):
                if line == before[i]:
                    continue
                mark, stamp = _mark(line)
                if stamp is not None:
                    stamps[i + 1] = stamp
                else:
                    stamps.pop(i + 1, None)
                if mark != marks[i]:
                    same = False
                    marks[i] = mark
        else:
            same = False
            marks, stamps = [], {}
            for i, line in enumerate(lines):
                mark, stamp = _mark(line)
                if stamp is not None:
                    stamps[i + 1] = stamp
                marks.append(mark)
            self._marks, self._stamps = marks, stamps
        self._lines = lines
        self._processes = processes
        if same:
            table, problems = self._last
            if table is not None and table.timestamp is not None:
                table = replace(table, timestamp=stamps[table.line])
            return table, list(problems)
        table, problems = read_frame(screen_rows, self.cols)
        self._valid = True
        self._last = (table, list(problems))
        return table, problems


def _mark(line: str) -> tuple[str | bool, float | None]:
    """What TableReader makes of a line as far as FrameReader tells frames apart -- a
    table line is itself, any other line a date line (its value aside) or nothing --
    and the time of a date line."""
    text = line.strip()
    if text and text[0] not in "|+":
        stamp = dates.date_line(text)
        return stamp is not None, stamp
    return line, None


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
                table, _problems = frames.read(frame)
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
                table, problems = frames.read(frame)
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
