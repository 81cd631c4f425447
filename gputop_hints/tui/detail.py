"""The Enter screen: one process over the history window, its hints, and its workers.

The hints part lists every visible finding about the process and every
GPU-level finding about its GPU, each with the evidence behind it -- metric,
value, threshold, whether it was met, and whose numbers they are (the process's
own, the whole device's, or the host's) -- the advice, since when it holds,
and where the docs explain it. It renders the engine's findings as they are.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer

from gputop_hints.hints.catalogue import CATALOGUE
from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Evidence, Finding, Scope
from gputop_hints.history import History, ProcessHistory, Series
from gputop_hints.model import Snapshot
from gputop_hints.tui.hint_text import SEVERITY_MARK, SEVERITY_STYLE, duration_text, fit_text
from gputop_hints.tui.palette import Palette, on_base, palette_for
from gputop_hints.tui.render import Line, sparkline
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.tui.widgets.header import HeaderBar, clock_text
from gputop_hints.units import UNKNOWN, human_bytes, percent

_LABEL = 15
_VALUE = 9
_NOTE = 28


class ProcessSummary(StripWidget):
    DEFAULT_CSS = """
    ProcessSummary {
        height: 3;
        background: $surface;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="detail-summary")
        self.process: ProcessHistory | None = None
        self.gone_since: float | None = None

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        p = palette
        ph = self.process
        if ph is None:
            return [
                Line().add(" process no longer in the history window", p.muted).strip(width, base)
            ]
        proc = ph.latest
        first = Line().add(f" PID {proc.pid}", p.header_accent)
        first.add(f"  GPU {proc.gpu_index}", p.text)
        first.add_text(f"  user {proc.user or UNKNOWN}", p.text)
        first.add(f"  state {proc.state or UNKNOWN}", p.muted)
        if self.gone_since is not None:
            first.add(f"  exited (last seen {clock_text(self.gone_since)})", p.warning)
        second = Line().add(" ").add_text(proc.command or proc.name or "", p.text)
        third = Line().add(
            f" VRAM {human_bytes(proc.vram_bytes)}  SM {percent(proc.sm_percent)}"
            f"  CPU {percent(proc.cpu_percent)}  RSS {human_bytes(proc.rss_bytes)}"
            f"  workers {len(proc.workers)} using {percent(proc.workers_cpu_percent)}",
            p.muted,
        )
        return [first.strip(width, base), second.strip(width, base), third.strip(width, base)]


class MetricSparkline(StripWidget):
    """Label, fixed-scale sparkline of a series, current value and the scale used."""

    def __init__(self, label: str, style_name: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="metric-sparkline")
        self.label = label
        self.style_name = style_name
        self.values: list[float | None] = []
        self.high = 100.0
        self.value_text = UNKNOWN
        self.note = ""

    def set_series(self, series: Series | None, high: float, value_text: str, note: str) -> None:
        self.values = series.last() if series is not None else []
        self.high = high
        self.value_text = value_text
        self.note = note
        self.invalidate()

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        note_width = _NOTE if width >= 70 else 0
        spark_width = max(1, width - _LABEL - _VALUE - note_width - 1)
        line = Line().add(f" {self.label:<{_LABEL - 1}}"[:_LABEL], palette.label)
        style: Style = getattr(palette, self.style_name)
        line.add(sparkline(self.values, spark_width, self.high), style)
        line.add(self.value_text.rjust(_VALUE), palette.text)
        if note_width:
            line.add(" ").add(self.note[: note_width - 1], palette.muted)
        return [line.strip(width, base)]


class WorkerList(StripWidget):
    """The process's worker children; as tall as its rows, so the hints get the rest."""

    DEFAULT_CSS = """
    WorkerList {
        height: auto;
        max-height: 40%;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="workers")
        self.process: ProcessHistory | None = None

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        workers = self.process.latest.workers if self.process is not None else ()
        return 2 + len(workers)

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        p = palette
        workers = self.process.latest.workers if self.process is not None else ()
        header = Line().add(f" WORKERS ({len(workers)})", p.header_accent)
        lines = [header.strip(width, base)]
        if not workers:
            lines.append(Line().add(" no child processes", p.muted).strip(width, base))
            return lines
        lines.append(
            Line()
            .add(f" {'PID':>7} {'STATE':>5} {'CPU%':>6} {'RSS':>8}  NAME", p.label)
            .strip(width, base)
        )
        for worker in workers[: max(0, height - 2)]:
            line = Line().add(f" {worker.pid:>7} {worker.state or UNKNOWN:>5} ", p.text)
            line.add(f"{percent(worker.cpu_percent):>6}", p.workers)
            line.add(f" {human_bytes(worker.rss_bytes):>8}  ", p.muted)
            line.add_text(worker.name or "", p.text)
            lines.append(line.strip(width, base))
        return lines


@dataclass(frozen=True, slots=True)
class _Span:
    text: str
    style: str
    """A :class:`Palette` field name: resolved when drawn, so a theme change needs no re-wrap."""


_Row = tuple[_Span, ...]
_INDENT = "   "
_VALUE_WIDTH = 10
_MET_WIDTH = 4
_SCOPE_WIDTH = 7
_COLUMN_GAP = 2
_THRESHOLD_MAX_WIDTH = 48
_SCOPE_TEXT: dict[Scope, str] = {
    Scope.PROCESS: "process",
    Scope.DEVICE: "device",
    Scope.HOST: "host",
}
_EVIDENCE_SCOPE_TEXT: dict[Scope, str] = {
    Scope.PROCESS: "GPU-side evidence: this process's own samples (per-process NVML)",
    Scope.DEVICE: "GPU-side evidence: the whole device (no per-process numbers for this)",
    Scope.HOST: "evidence: host-side numbers",
}


def _met_text(met: bool | None) -> tuple[str, str]:
    if met is None:
        return "–", "muted"
    return ("yes", "text") if met else ("no", "muted")


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, max(1, width), break_on_hyphens=False) or [""]


def checked_rules(subject: str) -> str:
    """The catalogue titles of the rules about ``subject`` ("process" or "gpu"), joined."""
    return ", ".join(info.title for info in CATALOGUE if info.subject == subject)


class FindingsView(ScrollView, can_focus=True):
    """A process's findings and its GPU's, with evidence and advice; scrolls when long.

    The text is wrapped once per data or width change into rows of named
    styles; strips are made from those rows only for the lines on screen.
    """

    DEFAULT_CSS = """
    FindingsView {
        height: 1fr;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-gutter: stable;
        scrollbar-size-vertical: 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_up", "Up", show=False),
        Binding("down", "scroll_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "Bottom", show=False),
    ]

    def __init__(self, pid: int, gpu_index: int) -> None:
        super().__init__(id="detail-hints")
        self.pid = pid
        self.gpu_index = gpu_index
        self.own: tuple[Finding, ...] = ()
        """Findings about this process, worst first."""
        self.gpu_level: tuple[Finding, ...] = ()
        """GPU-level findings about the process's GPU, worst first."""
        self.now: float | None = None
        self.window_s = 0.0
        self._rows: list[_Row] = []
        self._strips: list[Strip | None] = []
        self._strips_for: tuple[int, Style] | None = None
        self._wrapped_for = 0

    def set_findings(
        self,
        own: tuple[Finding, ...],
        gpu_level: tuple[Finding, ...],
        now: float | None,
        window_s: float,
    ) -> None:
        self.own = own
        self.gpu_level = gpu_level
        self.now = now
        self.window_s = window_s
        self._rewrap()

    def text_lines(self) -> list[str]:
        """Every line of the hints, scrolled or not, as plain text (for tests)."""
        return ["".join(span.text for span in row) for row in self._rows]

    def on_resize(self, event: events.Resize) -> None:
        if self.scrollable_content_region.width != self._wrapped_for:
            self._rewrap()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips_for = None

    def _rewrap(self) -> None:
        width = self.scrollable_content_region.width
        if width <= 0:
            return
        self._wrapped_for = width
        self._rows = self._build_rows(width)
        self._strips = [None] * len(self._rows)
        self.virtual_size = Size(width, len(self._rows))
        self.refresh()

    # --- text -----------------------------------------------------------------

    def _build_rows(self, width: int) -> list[_Row]:
        rows: list[_Row] = [(_Span(f" HINTS FOR PID {self.pid}", "header_accent"),)]
        window = f"over the last {self.window_s:.0f} s"
        if self.own:
            for finding in self.own:
                rows.extend(self._finding_rows(finding, width))
        else:
            checked = f"checked {window}: {checked_rules('process')}"
            if not self.gpu_level:
                checked += f"; on GPU {self.gpu_index}: {checked_rules('gpu')}"
            rows.extend(
                self._wrapped(f"No hints for this process -- {checked}.", width, " ", "muted")
            )
        if self.gpu_level:
            rows.append(())
            heading = f" GPU {self.gpu_index}: WHOLE-DEVICE HINTS (all its processes)"
            rows.append((_Span(heading, "header_accent"),))
            for finding in self.gpu_level:
                rows.extend(self._finding_rows(finding, width))
        return rows

    @staticmethod
    def _wrapped(text: str, width: int, indent: str, style: str) -> list[_Row]:
        return [(_Span(indent + part, style),) for part in _wrap(text, width - len(indent) - 1)]

    def _finding_rows(self, finding: Finding, width: int) -> list[_Row]:
        severity = SEVERITY_STYLE[finding.severity]
        title: list[_Span] = [
            _Span(f" {SEVERITY_MARK[finding.severity]} {finding.severity.label.upper()}", severity),
            _Span("  ", "text"),
            _Span(finding.label, "title"),
        ]
        since = self._since(finding)
        if since:
            title.append(_Span(f"  {since}", "muted"))
        rule = f"  [{finding.rule_label}]"
        if sum(len(span.text) for span in title) + len(rule) < width:
            title.append(_Span(rule, "muted"))
        rows: list[_Row] = [()]
        rows.append(tuple(title))
        rows.extend(self._wrapped(finding.summary, width, _INDENT, "text"))
        if finding.subject.pid is not None:
            rows.append((_Span(_INDENT + _EVIDENCE_SCOPE_TEXT[finding.evidence_scope], "muted"),))
        rows.extend(self._evidence_rows(finding, width))
        if finding.advice:
            rows.append((_Span(_INDENT + "What to change:", "label"),))
            for advice in finding.advice:
                parts = _wrap(advice, width - len(_INDENT) - 3)
                for i, part in enumerate(parts):
                    bullet = "• " if i == 0 else "  "
                    rows.append((_Span(_INDENT + bullet + part, "text"),))
        if finding.anchor:
            rows.append((_Span(f"{_INDENT}docs/hints.md#{finding.anchor}", "muted"),))
        return rows

    def _since(self, finding: Finding) -> str:
        started = finding.started_at
        if started is None:
            return ""
        age = f" ({duration_text(self.now - started)})" if self.now is not None else ""
        return f"since {clock_text(started)}{age}"

    def _evidence_rows(self, finding: Finding, width: int) -> list[_Row]:
        fixed = _VALUE_WIDTH + _MET_WIDTH + _SCOPE_WIDTH + 4 * _COLUMN_GAP
        flexible = max(20, width - len(_INDENT) - fixed - 1)
        metric_width = max(12, min(44, flexible * 9 // 20))
        threshold_width = max(8, min(_THRESHOLD_MAX_WIDTH, flexible - metric_width))
        widths = (metric_width, _VALUE_WIDTH, threshold_width, _MET_WIDTH, _SCOPE_WIDTH)
        gap = " " * _COLUMN_GAP
        header = gap.join(title.ljust(w) for title, w in zip(_EVIDENCE_TITLES, widths, strict=True))
        rows: list[_Row] = [(_Span(_INDENT + header.rstrip(), "label"),)]
        for evidence in finding.evidence:
            rows.extend(self._evidence_row(evidence, widths, finding))
        return rows

    @staticmethod
    def _evidence_row(evidence: Evidence, widths: tuple[int, ...], finding: Finding) -> list[_Row]:
        met, met_style = _met_text(evidence.met)
        if evidence.met:
            met_style = SEVERITY_STYLE[finding.severity]
        scope = _SCOPE_TEXT[evidence.scope]
        columns = (
            (_wrap(evidence.metric, widths[0]), "text"),
            ([fit_text(evidence.shown_value, widths[1])], "text"),
            (_wrap(evidence.threshold, widths[2]), "muted"),
            ([met], met_style),
            ([scope], "text"),
        )
        height = max(len(parts) for parts, _ in columns)
        rows: list[_Row] = []
        for line_no in range(height):
            spans: list[_Span] = [_Span(_INDENT, "text")]
            for position, ((parts, style), cell_width) in enumerate(
                zip(columns, widths, strict=True)
            ):
                if position:
                    spans.append(_Span(" " * _COLUMN_GAP, "text"))
                text = parts[line_no] if line_no < len(parts) else ""
                spans.append(_Span(text.ljust(cell_width), style))
            rows.append(tuple(spans))
        return rows

    # --- drawing --------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        row_index = y + self.scroll_offset.y
        palette = on_base(palette_for(self.app), base)
        key = (id(palette), base)
        if key != self._strips_for:
            self._strips = [None] * len(self._rows)
            self._strips_for = key
        if not 0 <= row_index < len(self._rows):
            return Strip.blank(width, base)
        strip = self._strips[row_index]
        if strip is None or strip.cell_length != width:
            line = Line()
            for span in self._rows[row_index]:
                style: Style = getattr(palette, span.style)
                line.add_text(span.text, style)
            strip = self._strips[row_index] = line.strip(width, base)
        return strip


_EVIDENCE_TITLES = ("EVIDENCE", "VALUE", "THRESHOLD", "MET", "SCOPE")


class ProcessDetailScreen(Screen[None]):
    """History of one (pid, GPU) process: SM %, main CPU %, workers CPU %, VRAM; its hints."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, pid: int, gpu_index: int, interval_s: float) -> None:
        super().__init__(id="detail")
        self.pid = pid
        self.gpu_index = gpu_index
        self._interval_s = interval_s

    def compose(self) -> ComposeResult:
        yield HeaderBar(self._interval_s)
        yield ProcessSummary()
        yield MetricSparkline("SM %", "sm", id="spark-sm")
        yield MetricSparkline("main CPU %", "cpu", id="spark-cpu")
        yield MetricSparkline("workers CPU %", "workers", id="spark-workers")
        yield MetricSparkline("VRAM", "vram", id="spark-vram")
        yield FindingsView(self.pid, self.gpu_index)
        yield WorkerList()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(FindingsView).focus()

    def update_from(
        self,
        snapshot: Snapshot | None,
        history: History,
        paused: bool,
        engine: HintEngine | None = None,
    ) -> None:
        if engine is not None:
            self.query_one(FindingsView).set_findings(
                engine.for_process(self.pid, self.gpu_index),
                engine.for_gpu(self.gpu_index),
                snapshot.timestamp if snapshot is not None else None,
                engine.thresholds.general.window_s,
            )
        header = self.query_one(HeaderBar)
        header.paused = paused
        if snapshot is not None:
            header.update_from(snapshot)
        ph = history.process(self.pid, self.gpu_index)
        summary = self.query_one(ProcessSummary)
        summary.process = ph
        latest_ts = snapshot.timestamp if snapshot is not None else None
        summary.gone_since = (
            ph.last_seen
            if ph is not None and latest_ts is not None and ph.last_seen < latest_ts
            else None
        )
        summary.invalidate()
        workers = self.query_one(WorkerList)
        count = len(ph.latest.workers) if ph is not None else 0
        if workers.process is None or len(workers.process.latest.workers) != count:
            workers.refresh(layout=True)
        workers.process = ph
        workers.invalidate()
        if ph is None:
            return
        proc = ph.latest
        self.query_one("#spark-sm", MetricSparkline).set_series(
            ph.sm_percent, 100.0, percent(ph.sm_percent.latest), "0-100% of time busy"
        )
        self.query_one("#spark-cpu", MetricSparkline).set_series(
            ph.cpu_percent, 100.0, percent(ph.cpu_percent.latest), "0-100% = one core"
        )
        count = max(1, len(proc.workers))
        self.query_one("#spark-workers", MetricSparkline).set_series(
            ph.workers_cpu_percent,
            100.0 * count,
            percent(ph.workers_cpu_percent.latest),
            f"0-{100 * count}% ({len(proc.workers)} workers)",
        )
        gpu = snapshot.gpu(self.gpu_index) if snapshot is not None else None
        total = gpu.vram_total_bytes if gpu is not None else None
        if total:
            vram_high = float(total)
            vram_note = f"0-{human_bytes(total)} (GPU total)"
        else:
            vram_high = ph.vram_bytes.max() or 0.0
            vram_note = f"window max {human_bytes(vram_high)}"
        self.query_one("#spark-vram", MetricSparkline).set_series(
            ph.vram_bytes, vram_high, human_bytes(ph.vram_bytes.latest), vram_note
        )
