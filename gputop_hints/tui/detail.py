"""The Enter screen: one process over the history window, and its workers."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Footer

from gputop_hints.history import History, ProcessHistory, Series
from gputop_hints.model import Snapshot
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import Line, sparkline
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.tui.widgets.header import HeaderBar, clock_text
from gputop_hints.units import UNKNOWN, human_bytes, percent

_LABEL = 14
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
    DEFAULT_CSS = """
    WorkerList {
        height: 1fr;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="workers")
        self.process: ProcessHistory | None = None

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


class ProcessDetailScreen(Screen[None]):
    """History of one (pid, GPU) process: SM %, main CPU %, workers CPU %, VRAM."""

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
        yield WorkerList()
        yield Footer()

    def update_from(self, snapshot: Snapshot | None, history: History, paused: bool) -> None:
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
