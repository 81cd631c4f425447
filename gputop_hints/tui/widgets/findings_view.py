"""The detail screen's hints: every finding about a process and about its GPU.

Each finding comes with the evidence behind it -- metric, value, threshold,
whether it was met, and whose numbers they are (the process's own, the whole
device's, or the host's) -- the advice, since when it holds, and where the docs
explain it. It renders the engine's findings as they are and decides nothing.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gputop_hints.hints.catalogue import CATALOGUE
from gputop_hints.hints.findings import Evidence, Finding, Scope
from gputop_hints.outputs.finding_text import more_text
from gputop_hints.tui.hint_text import SEVERITY_MARK, SEVERITY_STYLE, duration_text, fit_text
from gputop_hints.tui.palette import on_base, palette_for
from gputop_hints.tui.render import Line
from gputop_hints.tui.widgets.header import clock_text


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


def checked_rules(subject: str, profiling: bool = False) -> str:
    """The catalogue titles of the rules about ``subject`` ("process" or "gpu"), joined;
    those that run only on GPM profiling only where the GPU gives it (``profiling``)."""
    return ", ".join(
        info.title
        for info in CATALOGUE
        if info.subject == subject and (profiling or not info.needs_profiling)
    )


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
        self.profiling = False
        """Whether the GPU gives GPM profiling (then its rules were checked too)."""
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
        profiling: bool = False,
    ) -> None:
        self.own = own
        self.profiling = profiling
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
            checked = f"checked {window}: {checked_rules('process', self.profiling)}"
            if not self.gpu_level:
                checked += f"; on GPU {self.gpu_index}: {checked_rules('gpu', self.profiling)}"
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
        rows.append((_Span(_INDENT + more_text(finding), "muted"),))
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
