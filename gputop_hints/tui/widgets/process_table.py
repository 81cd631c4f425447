"""The GPU process table: a light, line-API table with cached row strips.

Textual's ``DataTable`` cleared and refilled every tick costs several times
more CPU than the rest of the screen together (DESIGN.md, "Performance
notes"), so this table keeps its own rows: on each tick it formats the cells
(cheap string work), re-sorts, and only the rows actually on screen are
turned into strips -- and a row's strip is reused while its cells, selection
and width stay the same. What the columns are, how they sort and which give
way on a narrow terminal is in :mod:`.process_columns`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.strip import Strip

from gputop_hints.hints.findings import Finding
from gputop_hints.model import GpuProcess, JobInfo, WorkerProcess
from gputop_hints.tui.glyphs import shown as shown_text
from gputop_hints.tui.hint_text import SEVERITY_STYLE
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import Line
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.tui.widgets.process_columns import (
    COLUMN_BY_KEY,
    COLUMNS,
    SORT_KEYS,
    Column,
    Hints,
    ProcessKey,
    aligned_cell,
    sort_processes,
    visible_columns,
)
from gputop_hints.units import UNKNOWN, count_text, percent


class ProcessTable(StripWidget, can_focus=True):
    """GPU processes, one per row, with a header naming the sort key."""

    DEFAULT_CSS = """
    ProcessTable {
        height: 1fr;
        min-height: 2;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("enter", "open", "Details"),
    ]

    class Opened(Message):
        """Enter was pressed on a process row."""

        def __init__(self, pid: int, gpu_index: int) -> None:
            super().__init__()
            self.pid = pid
            self.gpu_index = gpu_index

    def __init__(self) -> None:
        super().__init__(id="processes")
        self.sort_key = SORT_KEYS[0]
        self.rows: list[GpuProcess] = []
        self.hints: dict[ProcessKey, Finding] = {}
        """Each process's HINT-cell finding (processes with nothing to say are absent)."""
        self._cells: dict[ProcessKey, tuple[str, ...]] = {}
        self._row_cache: dict[ProcessKey, tuple[tuple[str, ...], tuple[bool, bool], Strip]] = {}
        self._cache_for: tuple[int, Style, int] | None = None
        self.cursor = 0
        self.top = 0
        self._selected_key: ProcessKey | None = None
        self.note = ""
        """Shown instead of rows when there are none (e.g. why there are no GPUs)."""
        self.job: JobInfo | None = None
        """The attached job: its processes first; with ``--all`` the others marked."""

    # --- data ---------------------------------------------------------------

    def update_from(
        self,
        processes: Sequence[GpuProcess],
        hints: Hints | None = None,
        job: JobInfo | None = None,
    ) -> None:
        """Take a tick's processes and the finding to show beside each (from the engine).

        Cells are plain strings; a row's strip is rebuilt only when one of its
        cells changed, so a hint that holds for minutes costs nothing per tick.
        ``job``: the attached job, whose processes are listed first (and, when
        there are no GPU processes, shown by name with their CPU %).
        """
        shown = {key: f for key, f in (hints or {}).items() if f is not None}
        self.hints = shown
        self.job = job
        self.rows = sort_processes(processes, self.sort_key, shown, job_first=job is not None)
        self._cells = {p.key: self._cells_of(p) for p in self.rows}
        self._restore_selection()
        self.invalidate()

    def _cells_of(self, proc: GpuProcess) -> tuple[str, ...]:
        finding = self.hints.get(proc.key)
        return tuple(shown_text(c.cell(proc, finding)) for c in COLUMNS)

    def cycle_sort(self) -> str:
        """Move to the next sort key (``s``); returns its name."""
        position = SORT_KEYS.index(self.sort_key)
        self.sort_key = SORT_KEYS[(position + 1) % len(SORT_KEYS)]
        self.rows = sort_processes(
            self.rows, self.sort_key, self.hints, job_first=self.job is not None
        )
        self._restore_selection()
        self.invalidate()
        return self.sort_key

    @property
    def sort_title(self) -> str:
        return COLUMN_BY_KEY[self.sort_key].title

    @property
    def selected(self) -> GpuProcess | None:
        if 0 <= self.cursor < len(self.rows):
            return self.rows[self.cursor]
        return None

    def _restore_selection(self) -> None:
        """Keep the same process selected across re-sorts and ticks."""
        if self._selected_key is not None:
            for i, proc in enumerate(self.rows):
                if proc.key == self._selected_key:
                    self.cursor = i
                    break
        self._move_to(self.cursor)

    def _move_to(self, row: int) -> None:
        if not self.rows:
            self.cursor = 0
            self.top = 0
            self._selected_key = None
            return
        self.cursor = max(0, min(len(self.rows) - 1, row))
        self._selected_key = self.rows[self.cursor].key
        visible = max(1, self.size.height - 1)
        if self.cursor < self.top:
            self.top = self.cursor
        elif self.cursor >= self.top + visible:
            self.top = self.cursor - visible + 1
        self.top = max(0, min(self.top, max(0, len(self.rows) - visible)))

    # --- keys and mouse -----------------------------------------------------

    def _step(self, delta: int) -> None:
        self._move_to(self.cursor + delta)
        self.invalidate()

    def action_cursor_up(self) -> None:
        self._step(-1)

    def action_cursor_down(self) -> None:
        self._step(1)

    def action_page_up(self) -> None:
        self._step(-max(1, self.size.height - 2))

    def action_page_down(self) -> None:
        self._step(max(1, self.size.height - 2))

    def action_first(self) -> None:
        self._step(-len(self.rows))

    def action_last(self) -> None:
        self._step(len(self.rows))

    def action_open(self) -> None:
        proc = self.selected
        if proc is not None:
            self.post_message(self.Opened(proc.pid, proc.gpu_index))

    def on_click(self, event: events.Click) -> None:
        row = self.top + event.y - 1
        if event.y >= 1 and 0 <= row < len(self.rows):
            self._move_to(row)
            self.invalidate()
            if event.chain >= 2:
                self.action_open()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self._step(3)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._step(-3)

    def on_resize(self, event: events.Resize) -> None:
        self._move_to(self.cursor)

    # --- drawing ------------------------------------------------------------

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        cache_key = (width, base, id(palette))
        if cache_key != self._cache_for:
            self._row_cache.clear()
            self._cache_for = cache_key
        columns = visible_columns(width)
        indices = [COLUMNS.index(c) for c in columns]
        lines = [self._header(columns, width, base, palette)]
        if not self.rows:
            note = self.note or "no GPU processes"
            lines.append(Line().add_text(f" {note}", palette.muted).strip(width, base))
            if self.job is not None and self.job.processes:
                lines.extend(self._job_lines(self.job, width, height - 2, base, palette))
            return lines
        seen: dict[ProcessKey, tuple[tuple[str, ...], tuple[bool, bool], Strip]] = {}
        for row in range(self.top, min(len(self.rows), self.top + max(0, height - 1))):
            proc = self.rows[row]
            cells = self._cells.get(proc.key) or self._cells_of(proc)
            selected = row == self.cursor
            state = (selected, self._foreign(proc))
            cached = self._row_cache.get(proc.key)
            if cached is not None and cached[0] == cells and cached[1] == state:
                strip = cached[2]
            else:
                strip = self._row(proc, cells, columns, indices, selected, width, base, palette)
            seen[proc.key] = (cells, state, strip)
            lines.append(strip)
        self._row_cache = seen
        return lines

    def _foreign(self, proc: GpuProcess) -> bool:
        """A row outside the attached job, shown because of ``--all``."""
        job = self.job
        return job is not None and not job.filtered and proc.in_job is not True

    def _job_lines(
        self, job: JobInfo, width: int, room: int, base: Style, p: Palette
    ) -> list[Strip]:
        """The job's own processes, for when none holds a GPU (CPU-only mode)."""
        if room <= 0:
            return []
        total = percent(job.cpu_percent)
        count = len(job.processes)
        lines = [
            Line()
            .add_text(
                f" job {job.job_id}: {count_text(count, 'process')}, CPU {total}", p.core_allowed
            )
            .strip(width, base)
        ]
        shown_procs: list[WorkerProcess] = list(job.processes[: max(0, room - 1)])
        if len(shown_procs) < count and shown_procs:
            shown_procs = shown_procs[:-1]
        for proc in shown_procs:
            line = Line().add(f" {proc.pid:>7} ", p.text)
            line.add(f"{percent(proc.cpu_percent):>6} ", p.cpu)
            line.add(f"{proc.state or '?':<2}", p.muted)
            line.add_text(proc.name or "", p.text)
            lines.append(line.strip(width, base))
        hidden = count - len(shown_procs)
        if hidden > 0:
            lines.append(Line().add(f"  +{hidden} more", p.muted).strip(width, base))
        return lines[:room]

    def _header(self, columns: list[Column], width: int, base: Style, p: Palette) -> Strip:
        line = Line().add(" ")
        for column in columns:
            title = (
                column.title + ("▼" if column.descending else "▲")
                if (column.key == self.sort_key)
                else column.title
            )
            style = p.header_accent if column.key == self.sort_key else p.label
            text = title.rjust(column.width) if column.align_right else title.ljust(column.width)
            line.add_text(text[: column.width], style).add(" ")
        line.add("COMMAND", p.label)
        shown = f"sort: {self.sort_title} (s)  {count_text(len(self.rows), 'process')}"
        job = self.job
        if job is not None and not job.filtered:
            in_job = sum(1 for proc in self.rows if proc.in_job)
            shown = f"{in_job} in job {job.job_id} first, others dimmed  " + shown
        if self.rows and len(self.rows) > max(1, self.size.height - 1):
            last = min(len(self.rows), self.top + max(1, self.size.height - 1))
            shown += f"  {self.top + 1}-{last}"
        if width - line.cells - 4 >= len(shown):
            line.pad_to(width - len(shown) - 1).add(shown, p.muted)
        return line.strip(width, base)

    def _row(
        self,
        proc: GpuProcess,
        cells: tuple[str, ...],
        columns: list[Column],
        indices: list[int],
        selected: bool,
        width: int,
        base: Style,
        p: Palette,
    ) -> Strip:
        line = Line()
        if selected:
            row_style = p.selected
            line.add(" ", row_style)
            for column, index in zip(columns, indices, strict=True):
                line.add_text(aligned_cell(cells[index], column), row_style).add(" ", row_style)
            line.add_text(proc.command or proc.name or "", row_style)
            return line.pad_to(width, row_style).strip(width, row_style)
        # With --all inside a job, the other users' rows are dimmed and marked.
        foreign = self._foreign(proc)
        line.add(shown_text("·") if foreign else " ", p.muted)
        finding = self.hints.get(proc.key)
        for column, index in zip(columns, indices, strict=True):
            text = cells[index]
            style: Style
            if foreign:
                style = p.muted
            elif column.severity_styled and finding is not None:
                style = getattr(p, SEVERITY_STYLE[finding.severity])
            else:
                style = getattr(p, column.style)
            if text == UNKNOWN:
                style = p.muted
            line.add_text(aligned_cell(text, column), style).add(" ")
        line.add_text(proc.command or proc.name or "", p.muted if foreign else p.text)
        return line.strip(width, base)
