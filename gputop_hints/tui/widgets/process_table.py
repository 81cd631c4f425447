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

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.strip import Strip

from gputop_hints.hints.findings import Finding, Severity
from gputop_hints.model import GpuProcess, JobInfo, Launcher, WorkerProcess
from gputop_hints.outputs.process_tree import RowKey, TreeRow, build_tree
from gputop_hints.sources.live.signals import SignalTarget
from gputop_hints.text import visible as visible_text
from gputop_hints.tui.glyphs import shown as shown_text
from gputop_hints.tui.hint_text import SEVERITY_MARK, SEVERITY_STYLE
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import Line
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.tui.widgets.process_columns import (
    COLUMN_BY_KEY,
    COLUMN_INDEX,
    COLUMNS,
    SORT_KEYS,
    Column,
    Hints,
    ProcessKey,
    aligned_cell,
    mig_gpu_cell,
    sort_processes,
    visible_columns,
    without_arguments,
)
from gputop_hints.units import UNKNOWN, count_text, human_bytes, percent

RankFindings = Mapping[ProcessKey, Sequence[Finding]]
"""Each process's own findings, for a launcher row's roll-up (tree view)."""


UNSEEN_COMMAND = "(in another PID namespace: run on the host, or the container with --pid=host)"
"""The COMMAND cell of a process NVML lists but this PID namespace cannot see."""


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
        Binding("right", "expand", "Expand", show=False),
        Binding("left", "collapse", "Collapse", show=False),
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
        self.reverse_sort = False
        """``r``: the sort column's order turned round."""
        self.show_arguments = True
        """``a``: the COMMAND column with its arguments, or only the program (and script)."""
        self.rows: list[GpuProcess] = []
        """The processes shown: sorted, and filtered by :attr:`user` and :attr:`search`."""
        self.all_rows: list[GpuProcess] = []
        """Every GPU process of the tick, sorted (the hints still cover all of them)."""
        self.user: str | None = None
        """``u`` / ``--user``: only this user's processes (None: everyone's)."""
        self.unseen: frozenset[ProcessKey] = frozenset()
        """Processes NVML lists that this PID namespace cannot see (Snapshot.unseen_processes)."""
        self.search = ""
        """``/`` (``f`` in replay): only processes whose command line holds this text."""
        self.hints: dict[ProcessKey, Finding] = {}
        """Each process's HINT-cell finding (processes with nothing to say are absent)."""
        self._cells: dict[ProcessKey, tuple[str, ...]] = {}
        self._row_cache: dict[ProcessKey, tuple[tuple[str, ...], tuple[bool, bool], Strip]] = {}
        self._cache_for: tuple[int, Style, int, bool, bool] | None = None
        self.cursor = 0
        self.top = 0
        self._chosen = False
        """Whether the user moved the selection since the last new order: until they do,
        the first row stays selected as the rows move (worst first changes as hints come
        and go); once they do, the selection follows their process."""
        self._selected_key: ProcessKey | None = None
        self.note = ""
        """Shown instead of rows when there are none (e.g. why there are no GPUs)."""
        self.job: JobInfo | None = None
        """The attached job: its processes first; with ``--all`` the others marked."""
        self.tree_view = False
        """Tree view (``t``): processes under their launcher, workers under each."""
        self.launchers: tuple[Launcher, ...] = ()
        self.rank_findings: RankFindings = {}
        self.toggled: set[RowKey] = set()
        """Tree rows the user folded or unfolded (see process_tree.is_expanded)."""
        self.tree_rows: list[TreeRow] = []
        self._selected_row_key: RowKey | None = None
        self.mig_labels: Mapping[tuple[int, int, int], str] = {}
        """``(GPU, GPU instance, compute instance)`` -> the MIG instance's label."""
        self.mig = False
        """Some process runs on a MIG instance: the GPU column names it."""
        self.containers = False
        """Some process runs in a container, pod or batch job: CONTAINER is shown."""

    # --- data ---------------------------------------------------------------

    def update_from(
        self,
        processes: Sequence[GpuProcess],
        hints: Hints | None = None,
        job: JobInfo | None = None,
        launchers: Sequence[Launcher] = (),
        rank_findings: RankFindings | None = None,
        unseen: frozenset[ProcessKey] = frozenset(),
        mig_labels: Mapping[tuple[int, int, int], str] | None = None,
    ) -> None:
        """Take a tick's processes and the finding to show beside each (from the engine).

        Cells are plain strings; a row's strip is rebuilt only when one of its
        cells changed, so a hint that holds for minutes costs nothing per tick.
        ``job``: the attached job, whose processes are listed first (and, when
        there are no GPU processes, shown by name with their CPU %).
        ``mig_labels``: each MIG instance's label (its profile), by ``(GPU, GPU
        instance id, compute instance id)``, for the GPU column of the processes on one.
        """
        self.mig_labels = mig_labels or {}
        self.mig = any(p.mig_instance is not None for p in processes)
        self.containers = any(p.container for p in processes)
        shown = {key: f for key, f in (hints or {}).items() if f is not None}
        self.hints = shown
        self.unseen = unseen
        self.job = job
        self.launchers = tuple(launchers)
        self.rank_findings = rank_findings or {}
        self.all_rows = sort_processes(
            processes, self.sort_key, shown, job_first=job is not None, reverse=self.reverse_sort
        )
        self.rows = self._filtered(self.all_rows)
        self._cells = {}  # filled as rows are drawn: only the visible ones cost anything
        self._rebuild_tree()
        self._restore_selection()
        self.invalidate()

    def _rebuild_tree(self) -> None:
        if self.tree_view:
            self.tree_rows = build_tree(self.rows, self.launchers, self.rank_findings, self.toggled)
        else:
            self.tree_rows = []

    def toggle_tree(self) -> bool:
        """Switch between the flat table and the tree view (``t``); returns tree on/off.

        The selected process stays selected."""
        chosen = self.selected
        self.tree_view = not self.tree_view
        self._rebuild_tree()
        if chosen is not None:
            self._selected_key = chosen.key
            self._selected_row_key = ("process", chosen.pid, chosen.gpu_index, 0)
        self._restore_selection()
        self.invalidate()
        return self.tree_view

    def set_expanded(self, expanded: bool) -> bool:
        """Unfold or fold the selected tree row (right / left, or Enter on a launcher);
        on a row that cannot fold, left goes to its parent. Returns whether it changed."""
        row = self.selected_row
        if row is None:
            return False
        if row.children and row.expanded != expanded:
            self.toggled ^= {row.key}
            self._rebuild_tree()
            self._restore_selection()
            self.invalidate()
            return True
        if not expanded and row.depth > 0:
            for i in range(self.cursor - 1, -1, -1):
                if self.tree_rows[i].depth < row.depth:
                    self._step(i - self.cursor)
                    break
        return False

    def _cells_for(self, proc: GpuProcess) -> tuple[str, ...]:
        """``proc``'s cells this tick, made on first use (a row scrolled out of view
        costs nothing)."""
        cells = self._cells.get(proc.key)
        if cells is None:
            cells = self._cells[proc.key] = self._cells_of(proc)
        return cells

    def _cells_of(self, proc: GpuProcess) -> tuple[str, ...]:
        finding = self.hints.get(proc.key)
        cells = tuple(shown_text(c.cell(proc, finding)) for c in COLUMNS)
        if proc.mig_instance is None:
            return cells
        label = self.mig_labels.get((proc.gpu_index, *proc.mig_instance))
        at = COLUMN_INDEX["gpu"]
        return (*cells[:at], shown_text(mig_gpu_cell(proc, label)), *cells[at + 1 :])

    def cycle_sort(self) -> str:
        """Move to the next sort key (``s``); returns its name."""
        # Sorted by a column s skips (a click on CONTAINER): s starts the cycle again.
        position = SORT_KEYS.index(self.sort_key) if self.sort_key in SORT_KEYS else -1
        self.sort_key = SORT_KEYS[(position + 1) % len(SORT_KEYS)]
        self._resort()
        return self.sort_key

    def column_at(self, x: int) -> str | None:
        """The sortable column whose title is drawn at cell ``x`` of the header."""
        start = 1  # the header begins with one blank cell, as every row does
        for column in visible_columns(self.size.width, self.mig, self.containers):
            if start <= x < start + column.width:
                return column.key if column.sort_value is not None else None
            start += column.width + 1
        return None

    def sort_by(self, key: str) -> None:
        """A click on a column title: sort by it; on the sort column, reverse the order."""
        if key == self.sort_key:
            self.toggle_reverse()
            return
        self.sort_key, self.reverse_sort = key, False
        self._resort()

    def toggle_reverse(self) -> bool:
        """Turn the sort order round (``r``); returns whether it is now reversed."""
        self.reverse_sort = not self.reverse_sort
        self._resort()
        return self.reverse_sort

    def toggle_arguments(self) -> bool:
        """Show or hide the commands' arguments (``a``); returns whether they show."""
        self.show_arguments = not self.show_arguments
        self._row_cache.clear()
        self.invalidate()
        return self.show_arguments

    def set_filter(self, *, user: str | None, search: str) -> None:
        """Show only ``user``'s processes (None: all) whose command holds ``search``
        (case-insensitive; "" matches all)."""
        self.user, self.search = user, search.strip()
        self.rows = self._filtered(self.all_rows)
        self._rebuild_tree()
        self._restore_selection()
        self.invalidate()

    def _filtered(self, processes: list[GpuProcess]) -> list[GpuProcess]:
        user, search = self.user, self.search.casefold()
        if user is None and not search:
            return processes
        return [
            p
            for p in processes
            if (user is None or p.user == user)
            and (not search or search in (p.command or p.name or "").casefold())
        ]

    @property
    def filter_text(self) -> str:
        """What the header says is filtered ("" when nothing is)."""
        parts = []
        if self.user is not None:
            parts.append(f"user {visible_text(self.user)} (u)")
        if self.search:
            parts.append(f"command has '{visible_text(self.search)}' (/)")
        return ", ".join(parts)

    def _resort(self) -> None:
        """A new order (``s``, ``r``, a click): the top of the list comes into view with
        the first row selected -- keeping the old selection would scroll the list to it
        and hide the rows the new order puts first."""
        self._resort_keeping()
        self._chosen = False
        self._selected_key = None
        self._selected_row_key = None
        self.cursor = 0
        self.top = 0
        self._move_to(0)

    def _resort_keeping(self) -> None:
        self.all_rows = sort_processes(
            self.all_rows,
            self.sort_key,
            self.hints,
            job_first=self.job is not None,
            reverse=self.reverse_sort,
        )
        self.rows = self._filtered(self.all_rows)
        self._rebuild_tree()
        self._restore_selection()
        self.invalidate()

    def _command(self, command: str) -> str:
        return command if self.show_arguments else without_arguments(command)

    def _command_of(self, proc: GpuProcess) -> str:
        if proc.key in self.unseen:
            return UNSEEN_COMMAND
        return self._command(proc.command or proc.name or "")

    @property
    def sort_title(self) -> str:
        return COLUMN_BY_KEY[self.sort_key].title

    @property
    def row_count(self) -> int:
        """Lines of rows: processes, or in the tree view every row shown."""
        return len(self.tree_rows) if self.tree_view else len(self.rows)

    @property
    def selected(self) -> GpuProcess | None:
        """The selected GPU process (None on a launcher or worker row of the tree)."""
        if self.tree_view:
            row = self.selected_row
            return row.process if row is not None and row.kind == "process" else None
        if 0 <= self.cursor < len(self.rows):
            return self.rows[self.cursor]
        return None

    @property
    def selected_row(self) -> TreeRow | None:
        """The selected row of the tree view (None in the flat table)."""
        if self.tree_view and 0 <= self.cursor < len(self.tree_rows):
            return self.tree_rows[self.cursor]
        return None

    def selected_target(self) -> SignalTarget | None:
        """What a signal key would be sent to: the selected row's process, whatever its kind."""
        row = self.selected_row
        if row is not None:
            create_time = row.process.create_time if row.kind == "process" and row.process else None
            return SignalTarget(row.pid, row.user, row.command, create_time)
        proc = self.selected
        if proc is None:
            return None
        return SignalTarget(proc.pid, proc.user, proc.command or proc.name or "", proc.create_time)

    def _restore_selection(self) -> None:
        """Keep the same process selected across ticks once the user chose one; else the
        first row."""
        if not self._chosen:
            self._move_to(0)
            return
        if self.tree_view:
            if self._selected_row_key is not None:
                for i, row in enumerate(self.tree_rows):
                    if row.key == self._selected_row_key:
                        self.cursor = i
                        break
        elif self._selected_key is not None:
            for i, proc in enumerate(self.rows):
                if proc.key == self._selected_key:
                    self.cursor = i
                    break
        self._move_to(self.cursor)

    def _move_to(self, row: int) -> None:
        count = self.row_count
        if not count:
            self.cursor = 0
            self.top = 0
            self._selected_key = None
            self._selected_row_key = None
            return
        self.cursor = max(0, min(count - 1, row))
        if self.tree_view:
            chosen = self.tree_rows[self.cursor]
            self._selected_row_key = chosen.key
            if chosen.kind == "process" and chosen.process is not None:
                self._selected_key = chosen.process.key
        else:
            self._selected_key = self.rows[self.cursor].key
            self._selected_row_key = ("process", *self._selected_key, 0)
        visible = max(1, self.size.height - 1)
        if self.cursor < self.top:
            self.top = self.cursor
        elif self.cursor >= self.top + visible:
            self.top = self.cursor - visible + 1
        self.top = max(0, min(self.top, max(0, count - visible)))

    # --- keys and mouse -----------------------------------------------------

    def _step(self, delta: int) -> None:
        self._chosen = True
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
        self._step(-self.row_count)

    def action_last(self) -> None:
        self._step(self.row_count)

    def action_expand(self) -> None:
        self.set_expanded(True)

    def action_collapse(self) -> None:
        self.set_expanded(False)

    def action_open(self) -> None:
        row = self.selected_row
        if row is not None and row.kind == "launcher":
            self.set_expanded(not row.expanded)  # a launcher has no detail screen
            return
        proc = self.selected
        if row is not None and row.kind == "worker":
            proc = row.process  # a worker's details are its rank's
        if proc is not None:
            self.post_message(self.Opened(proc.pid, proc.gpu_index))

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:
            key = self.column_at(event.x)
            if key is not None:
                self.sort_by(key)
            return
        row = self.top + event.y - 1
        if event.y >= 1 and 0 <= row < self.row_count:
            self._chosen = True
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
        # The columns shown (CONTAINER, the MIG GPU column) change a row's strip even
        # where none of its own cells changed.
        cache_key = (width, base, id(palette), self.mig, self.containers)
        if cache_key != self._cache_for:
            self._row_cache.clear()
            self._cache_for = cache_key
        columns = visible_columns(width, self.mig, self.containers)
        indices = [COLUMN_INDEX[c.key] for c in columns]
        lines = [self._header(columns, width, base, palette)]
        if not self.rows:
            note = self.note or "no GPU processes"
            if self.all_rows:
                note = f"none of {count_text(len(self.all_rows), 'process')}: {self.filter_text}"
            lines.append(Line().add_text(f" {note}", palette.muted).strip(width, base))
            if self.job is not None and self.job.processes:
                lines.extend(self._job_lines(self.job, width, height - 2, base, palette))
            return lines
        if self.tree_view:
            return lines + self._tree_lines(columns, indices, width, height, base, palette)
        seen: dict[ProcessKey, tuple[tuple[str, ...], tuple[bool, bool], Strip]] = {}
        for row in range(self.top, min(len(self.rows), self.top + max(0, height - 1))):
            proc = self.rows[row]
            cells = self._cells_for(proc)
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

    def _header_columns(self, columns: list[Column], p: Palette, notes: Sequence[str]) -> Line:
        """The header's column titles without the COMMAND title, the HINT title followed by
        the first of ``notes`` its column has room for."""
        line = Line().add(" ")
        for column in columns:
            descending = column.descending != self.reverse_sort
            title = (
                column.title + ("▼" if descending else "▲")
                if (column.key == self.sort_key)
                else column.title
            )
            if column.key == "hint":
                for note in notes:
                    if len(title) + 1 + len(note) <= column.width:
                        title = f"{title} {note}"
                        break
            style = p.header_accent if column.key == self.sort_key else p.label
            text = title.rjust(column.width) if column.align_right else title.ljust(column.width)
            line.add_text(text[: column.width], style).add(" ")
        return line

    def _header(self, columns: list[Column], width: int, base: Style, p: Palette) -> Strip:
        # How many processes have hints shows in the HINT title's spare cells, at every
        # width: "HINT▼ 5 of 64 with hints" (issue 44).
        troubled = sum(1 for f in self.hints.values() if f.severity >= Severity.WARNING)
        total = len(self.all_rows)
        line = self._header_columns(
            columns, p, (f"{troubled} of {total} with hints", f"{troubled}/{total} hints")
        )
        line.add("COMMAND" if self.show_arguments else "COMMAND (no args: a)", p.label)
        order = ", reversed (r)" if self.reverse_sort else ""
        count = count_text(len(self.rows), "process")
        if self.unseen:
            count += f", {len(self.unseen)} in another PID namespace"
        if len(self.rows) != len(self.all_rows):
            count = f"{len(self.rows)} of {count_text(len(self.all_rows), 'process')}"
        shown = f"sort: {self.sort_title}{order} (s)  {count}"
        if self.filter_text:
            shown = f"only {self.filter_text}  " + shown
        if self.tree_view:
            shown = f"tree (t)  {count_text(len(self.launchers), 'launcher')}  " + shown
        job = self.job
        if job is not None and not job.filtered:
            in_job = sum(1 for proc in self.rows if proc.in_job)
            shown = f"{in_job} in job {job.job_id} first, others dimmed  " + shown
        position = ""
        if self.rows and self.row_count > max(1, self.size.height - 1):
            last = min(self.row_count, self.top + max(1, self.size.height - 1))
            position = f"{self.top + 1}-{last}"
            shown += f"  {position}"
        room = width - line.cells - 4
        if self.filter_text and room < len(shown):
            # A filter hides rows: what it is must show even where the rest does not fit.
            shown = f"only {self.filter_text}  {count}"
        elif room < len(shown) and position:
            # That the list scrolls, and where it is, shows at every width.
            shown = f"rows {position}" if room >= len(position) + 5 else position
        if room >= len(shown):
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
            line.add_text(self._command_of(proc), row_style)
            return line.pad_to(width, row_style).strip(width, row_style)
        # With --all inside a job, the other users' rows are dimmed and marked.
        foreign = self._foreign(proc)
        line.add(shown_text("·") if foreign else " ", p.muted)
        finding = self.hints.get(proc.key)
        _add_cells(line, columns, indices, cells, finding, foreign, p)
        command = self._command_of(proc)
        line.add_text(command, p.muted if foreign or proc.key in self.unseen else p.text)
        return line.strip(width, base)

    # --- the tree view ------------------------------------------------------

    def _tree_lines(
        self,
        columns: list[Column],
        indices: list[int],
        width: int,
        height: int,
        base: Style,
        p: Palette,
    ) -> list[Strip]:
        """The tree view's rows on screen (drawn each time: a tree is a short list)."""
        lines: list[Strip] = []
        for index in range(self.top, min(len(self.tree_rows), self.top + max(0, height - 1))):
            row = self.tree_rows[index]
            selected = index == self.cursor
            lines.append(self._tree_row(row, columns, indices, selected, width, base, p))
        return lines

    def _tree_cells(self, row: TreeRow) -> tuple[str, ...]:
        if row.kind == "process" and row.process is not None:
            return self._cells_for(row.process)
        by_key: dict[str, str] = {"pid": str(row.pid)}
        if row.kind == "launcher" and row.launcher is not None:
            ranks = [proc for proc in self.rows if proc.launcher_pid == row.pid]
            vram = [proc.vram_bytes for proc in ranks if proc.vram_bytes is not None]
            by_key["user"] = visible_text(row.launcher.user or UNKNOWN)[:9]
            by_key["vram"] = human_bytes(sum(vram)) if vram else UNKNOWN
            by_key["cpu"] = percent(row.launcher.cpu_percent)
            by_key["workers"] = count_text(row.children, "rank")
            by_key["hint"] = _rollup_text(row)
        elif row.worker is not None:
            by_key["cpu"] = percent(row.worker.cpu_percent)
            by_key["workers"] = f"worker {row.worker.state or '?'}"
            by_key["rss"] = human_bytes(row.worker.rss_bytes)
        return tuple(shown_text(by_key.get(c.key, "")) for c in COLUMNS)

    def _tree_row(
        self,
        row: TreeRow,
        columns: list[Column],
        indices: list[int],
        selected: bool,
        width: int,
        base: Style,
        p: Palette,
    ) -> Strip:
        cells = self._tree_cells(row)
        command = shown_text(_tree_prefix(row)) + self._command(row.command)
        line = Line()
        if selected:
            row_style = p.selected
            line.add(" ", row_style)
            for column, index in zip(columns, indices, strict=True):
                line.add_text(aligned_cell(cells[index], column), row_style).add(" ", row_style)
            line.add_text(command, row_style)
            return line.pad_to(width, row_style).strip(width, row_style)
        proc = row.process if row.kind == "process" else None
        foreign = proc is not None and self._foreign(proc)
        line.add(shown_text("·") if foreign else " ", p.muted)
        finding: Finding | None = None
        if proc is not None:
            finding = self.hints.get(proc.key)
        elif row.rollup is not None:
            finding = row.rollup.worst
        _add_cells(line, columns, indices, cells, finding, foreign or row.kind == "worker", p)
        command_style = p.header_accent if row.kind == "launcher" else p.text
        line.add_text(command, p.muted if foreign or row.kind == "worker" else command_style)
        return line.strip(width, base)


def _rollup_text(row: TreeRow) -> str:
    """A launcher's HINT cell: its ranks' worst finding and how many there are."""
    rollup = row.rollup
    if rollup is None or rollup.worst is None:
        return ""
    worst = rollup.worst
    mark = SEVERITY_MARK[worst.severity]
    if rollup.findings == 1:
        return f"{mark} {worst.label}"
    return f"{mark} {rollup.findings} on {rollup.ranks_with_findings}: {worst.label}"


def _tree_prefix(row: TreeRow) -> str:
    """Indent, branch and fold mark before the command: ``├─▸ python train.py``."""
    fold = ("▾ " if row.expanded else "▸ ") if row.children else ""
    if row.depth == 0:
        return fold or ""
    branch = "└─" if row.last else "├─"
    return "  " * (row.depth - 1) + branch + (fold or " ")


def _add_cells(
    line: Line,
    columns: Sequence[Column],
    indices: Sequence[int],
    cells: Sequence[str],
    finding: Finding | None,
    muted: bool,
    p: Palette,
) -> None:
    """One row's cells in their columns' styles: muted rows (another job's, a worker) and
    unknown values in the muted style, the HINT column in its finding's severity."""
    for column, index in zip(columns, indices, strict=True):
        text = cells[index]
        style: Style
        if muted:
            style = p.muted
        elif column.severity_styled and finding is not None:
            style = getattr(p, SEVERITY_STYLE[finding.severity])
        else:
            style = getattr(p, column.style)
        if text == UNKNOWN:
            style = p.muted
        line.add_text(aligned_cell(text, column), style).add(" ")
