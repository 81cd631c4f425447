"""The Enter screen: one process over the history window, its hints, and its workers.

The widgets are in :mod:`gputop_hints.tui.widgets` (summary, metric sparklines,
findings, worker list); this screen lays them out and hands each its part of a
tick: the process's history, the engine's findings about it and its GPU.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen

from gputop_hints.hints.engine import HintEngine
from gputop_hints.history import History
from gputop_hints.model import Snapshot
from gputop_hints.tui.widgets.findings_view import FindingsView
from gputop_hints.tui.widgets.footer import KeysFooter
from gputop_hints.tui.widgets.header import HeaderBar
from gputop_hints.tui.widgets.metric_sparkline import MetricSparkline
from gputop_hints.tui.widgets.process_summary import ProcessSummary
from gputop_hints.tui.widgets.where_it_waits import StackState, WhereItWaits
from gputop_hints.tui.widgets.worker_list import WorkerList
from gputop_hints.units import human_bytes, percent


class ProcessDetailScreen(Screen[None]):
    """History of one (pid, GPU) process: SM %, main CPU %, workers CPU %, VRAM; its hints."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, pid: int, gpu_index: int, interval_s: float) -> None:
        # No id: a second Enter arriving before the first screen is gone must not
        # collide with it (the app also opens at most one; see on_process_table_opened).
        super().__init__()
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
        yield WhereItWaits()
        yield WorkerList()
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one(FindingsView).focus()

    def update_from(
        self,
        snapshot: Snapshot | None,
        history: History,
        paused: bool,
        engine: HintEngine | None = None,
        stacks: StackState | None = None,
    ) -> None:
        if stacks is not None:
            where = self.query_one(WhereItWaits)
            if where.state != stacks:
                where.state = stacks
                where.refresh(layout=True)
                where.invalidate()
        if engine is not None:
            gpu = snapshot.gpu(self.gpu_index) if snapshot is not None else None
            self.query_one(FindingsView).set_findings(
                engine.for_process(self.pid, self.gpu_index),
                engine.for_gpu(self.gpu_index),
                snapshot.timestamp if snapshot is not None else None,
                engine.thresholds.general.window_s,
                profiling=gpu is not None and gpu.profiling_known,
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
        gpu = snapshot.gpu(self.gpu_index) if snapshot is not None else None
        instance = gpu.mig_instance(proc.mig_instance) if gpu is not None else None
        sm_note = "0-100% of time busy"
        if proc.mig_instance is not None and ph.sm_percent.latest is None:
            sm_note = "none per process under MIG"
        self.query_one("#spark-sm", MetricSparkline).set_series(
            ph.sm_percent, 100.0, percent(ph.sm_percent.latest), sm_note
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
        total = gpu.vram_total_bytes if gpu is not None else None
        if instance is not None and instance.vram_total_bytes:
            vram_high = float(instance.vram_total_bytes)
            vram_note = f"0-{human_bytes(instance.vram_total_bytes)} (MIG {instance.label})"
        elif total:
            vram_high = float(total)
            vram_note = f"0-{human_bytes(total)} (GPU total)"
        else:
            vram_high = ph.vram_bytes.max() or 0.0
            vram_note = f"window max {human_bytes(vram_high)}"
        self.query_one("#spark-vram", MetricSparkline).set_series(
            ph.vram_bytes, vram_high, human_bytes(ph.vram_bytes.latest), vram_note
        )
