"""The monitor's Textual app.

Data flow: a :class:`~gputop_hints.sampling.sampler.Sampler` thread calls
``source.sample()`` and posts a :class:`SnapshotReady` message; its handler
(:meth:`GputopApp.ingest`, also called directly by tests) appends the tick to
the :class:`~gputop_hints.history.History`, runs the
:class:`~gputop_hints.hints.engine.HintEngine` once over it, and hands every
widget its new data and findings inside one ``batch_update()``, so a tick costs
one repaint. Widgets only read; they never sample, never compute a diagnosis,
and rebuild their lines lazily.

Everything time-related on screen comes from snapshot timestamps, so a run fed
a fixed sequence of snapshots (``autostart=False``) draws the same every time.

Replay (a :class:`~gputop_hints.sources.replay.ReplaySource`): a
:class:`~gputop_hints.sampling.replay_player.ReplayPlayer` thread takes the
sampler's place. It reads the recording, several ticks per refresh at high
speed, and posts them as one :class:`ReplayBatchReady`; :meth:`GputopApp.ingest_many`
puts each through history and the hints, as live, and repaints once. Pause,
step, speed and seeks are commands to that thread; after a seek, history and
hints start over from a pre-roll of the window before the target.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.screen import Screen
from textual.widgets import Footer

from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Finding
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.history import History
from gputop_hints.model import Snapshot
from gputop_hints.sampling.replay_player import ReplayBatch, ReplayPlayer, clamp_speed
from gputop_hints.sampling.replay_time import SeekError, parse_seek, span_text, speed_text
from gputop_hints.sampling.sampler import Sampler
from gputop_hints.sources import Source
from gputop_hints.sources.replay import ReplaySource
from gputop_hints.tui import glyphs, partial_output
from gputop_hints.tui.detail import ProcessDetailScreen
from gputop_hints.tui.messages import ReplayBatchReady, SamplingFailed, SnapshotReady
from gputop_hints.tui.themes import DEFAULT_THEME, MONOCHROME_THEME, ThemeSet, load_themes
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.tui.widgets.cpu_panel import CpuPanel, lines_needed
from gputop_hints.tui.widgets.gpu_panel import RICH_HEIGHT, GpuPanel
from gputop_hints.tui.widgets.header import (
    APP_NAME,
    GpuUnavailableBanner,
    HeaderBar,
    ReplayStatus,
)
from gputop_hints.tui.widgets.process_table import ProcessTable

RICH_PANEL_MIN_WIDTH = 76
"""Narrowest column a rich GPU panel gets before panels go side by side."""
COMPACT_LINE_WIDTH = 80
TABLE_MIN_HEIGHT = 8
"""Header plus seven rows: the table must stay useful when GPUs are many."""


class MainScreen(Screen[None]):
    """The monitor's screen; tells the app when the terminal size changed."""

    def __init__(self, on_resized: Callable[[], None]) -> None:
        super().__init__(id="main")
        self._on_resized = on_resized

    def on_resize(self, event: events.Resize) -> None:
        self._on_resized()


class GputopApp(App[None]):
    """GPU panels, host CPU, the process table; ``?`` explains every metric."""

    CSS_PATH = "app.tcss"
    TITLE = APP_NAME
    ENABLE_COMMAND_PALETTE = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("s", "cycle_sort", "Sort"),
        Binding("t", "cycle_theme", "Theme"),
        # Replay only (check_action hides them otherwise). Arrows, home and end
        # stay with the process table.
        Binding("space", "toggle_pause", "Pause", show=False),
        Binding("n", "replay_step", "Step"),
        Binding("plus,equals_sign", "replay_faster", "Speed", key_display="+/-"),
        Binding("minus", "replay_slower", "Slower", show=False),
        Binding("g", "replay_start", "Start/End", key_display="g/G"),
        Binding("G", "replay_end", "End", show=False),
        Binding("slash,colon", "replay_seek", "Seek", key_display="/"),
    ]
    REPLAY_ACTIONS: ClassVar[frozenset[str]] = frozenset(
        {
            "replay_step",
            "replay_faster",
            "replay_slower",
            "replay_start",
            "replay_end",
            "replay_seek",
        }
    )

    def __init__(
        self,
        source: Source,
        interval_s: float = 1.0,
        window_s: float = 120.0,
        theme: str = DEFAULT_THEME,
        color: bool = True,
        autostart: bool = True,
        *,
        themes: ThemeSet | None = None,
        thresholds: Thresholds | None = None,
        start_paused: bool = False,
    ) -> None:
        """``themes`` lets a caller that already loaded them (the CLI) pass them in,
        so broken theme files are read, and reported, once. ``thresholds`` (from
        the user's YAML; None means the built-in defaults) drive the hints.
        ``start_paused``: a replay opens on its first tick and waits for ``space``."""
        # Textual reads NO_COLOR itself (and greys everything out); we also switch
        # to the monochrome theme so shapes, not hues, carry meaning.
        self.color = color and "NO_COLOR" not in os.environ
        # Changed cells only, not whole lines: what a slow SSH link pays for.
        partial_output.install()
        super().__init__()
        self.source = source
        self.interval_s = interval_s
        self.window_s = window_s
        self.autostart = autostart
        self.history = History(window_s, interval_s)
        self.thresholds = thresholds if thresholds is not None else Thresholds.defaults()
        self.engine = HintEngine(self.thresholds)
        self.findings: tuple[Finding, ...] = ()
        """The findings visible after the latest tick, worst first."""
        self.last_ingest_s = 0.0
        """Wall time the latest :meth:`ingest` took, engine included (for profiling)."""
        self.sampler: Sampler | None = None
        self.paused = start_paused
        self.replay: ReplaySource | None = source if isinstance(source, ReplaySource) else None
        """The source's replay controls; None when watching live or a demo."""
        self.player: ReplayPlayer | None = None
        self.replay_ended = False
        """The last recorded tick is on screen; playback stopped there."""
        self.snapshot: Snapshot | None = None
        self.ticks_ingested = 0
        self._layout_key: tuple[int, ...] | None = None
        self._gpu_panels: dict[int, GpuPanel] = {}
        self._last_error: str | None = None
        self._source_closed = False
        self.exit_on_signals = False
        """Quit cleanly on SIGTERM and SIGHUP (the CLI sets it; tests running the
        app in-process leave the test runner's own handlers alone)."""

        theme_set = themes if themes is not None else load_themes()
        self.theme_errors = list(theme_set.errors)
        """Theme files that were skipped, for the CLI to print."""
        self.notes: list[str] = [f"Theme skipped: {error}" for error in self.theme_errors]
        for loaded in theme_set.themes.values():
            self.register_theme(loaded)
        if self.color:
            self.theme_names = theme_set.names
            wanted = theme
        else:
            self.theme_names = [n for n in theme_set.names if n == MONOCHROME_THEME]
            wanted = MONOCHROME_THEME
        if wanted not in theme_set.themes:
            if theme_set.themes:
                self.notes.append(
                    f"Unknown theme {wanted!r}; available: {', '.join(theme_set.names)}"
                )
            wanted = DEFAULT_THEME if DEFAULT_THEME in theme_set.themes else "textual-dark"
        self.theme = wanted

    # --- building the screen -----------------------------------------------

    def compose(self) -> ComposeResult:
        # The main screen's widgets are kept by reference: while the detail or
        # help screen is on top, `query_one` would search that screen instead.
        self.header = HeaderBar(self.interval_s)
        self.header.source_kind = getattr(self.source, "kind", "")
        self.header.paused = self.paused
        self.header.replay = self.replay_status()
        self.banner = GpuUnavailableBanner()
        self.gpu_area = Container(id="gpus")
        self.cpu_panel = CpuPanel()
        self.process_table = ProcessTable()
        yield self.header
        yield self.banner
        yield self.gpu_area
        yield self.cpu_panel
        yield self.process_table
        yield Footer()

    def on_mount(self) -> None:
        if self.exit_on_signals:
            self._handle_exit_signals()
        self.process_table.focus()
        if self.notes:
            # Reported once, together, rather than a toast per file.
            self.notify("\n".join(self.notes), severity="warning", timeout=10)
        self._apply_layout()
        if self.autostart:
            self.start_sampling()

    def start_sampling(self) -> None:
        """Start the sampler thread, or the replay thread (``autostart`` does this on mount)."""
        if self.sampler is not None or self.player is not None:
            return
        if self.replay is not None:
            self.player = ReplayPlayer(
                self.replay,
                self._on_replay_batch,
                preroll_s=self.window_s,
                on_error=self._on_sample_error,
            )
            self.player.pause(self.paused)
            self.player.start()
            if self.paused:
                self.player.step()  # open on the first tick, not on an empty screen
            return
        self.sampler = Sampler(
            self.source, self.interval_s, self._on_sample, on_error=self._on_sample_error
        )
        self.sampler.pause(self.paused)
        self.sampler.start()

    def _on_sample(self, snapshot: Snapshot) -> None:
        """Runs on the sampler thread: hand the frozen snapshot over, nothing else."""
        self.post_message(SnapshotReady(snapshot))

    def _on_replay_batch(self, batch: ReplayBatch) -> None:
        """Runs on the replay thread: hand the frozen batch over, nothing else."""
        self.post_message(ReplayBatchReady(batch))

    def _on_sample_error(self, error: BaseException) -> None:
        self.post_message(SamplingFailed(f"{type(error).__name__}: {error}"))

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        if not self.paused:  # a tick already in flight when `p` was pressed
            self.ingest(message.snapshot)

    def on_replay_batch_ready(self, message: ReplayBatchReady) -> None:
        # Taken even while paused: the recording was read, and a step or a seek
        # while paused is exactly such a batch.
        batch = message.batch
        try:
            with self.batch_update():
                if batch.restart:
                    self.restart_history()
                self.replay_ended = batch.at_end
                if batch.at_end and not self.paused:
                    self._set_paused(True)
                if batch.snapshots:
                    self.ingest_many(batch.snapshots)
                else:
                    self._show_replay_status()
        finally:
            if self.player is not None:
                self.player.consumed()
        if batch.at_end:
            self.notify(
                "End of recording: g goes back to the start, / seeks to a time.",
                title="Replay",
                timeout=6,
            )

    def on_sampling_failed(self, message: SamplingFailed) -> None:
        if message.error != self._last_error:
            self._last_error = message.error
            self.notify(f"Sampling failed: {message.error}", severity="error", timeout=8)

    def on_unmount(self) -> None:
        self.shutdown()

    def _handle_exit_signals(self) -> None:
        """SIGTERM (``kill``, a job ending) and SIGHUP (an SSH link dropping) quit like ``q``:
        Textual restores the terminal -- main screen back, cursor shown -- and the
        sampler stops, instead of the default death that leaves the alternate
        screen up. The loop drops the handlers when it closes."""
        loop = asyncio.get_running_loop()
        for number in (signal.SIGTERM, signal.SIGHUP):
            # Not the main thread, or a platform without them: keep the defaults.
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(number, self._exit_on_signal, number)

    def _exit_on_signal(self, number: signal.Signals) -> None:
        # The sampler must not post more ticks to an app that is leaving.
        self.shutdown()
        self.exit(return_code=128 + int(number))

    def shutdown(self) -> None:
        """Stop sampling and release the source (idempotent)."""
        if self._source_closed:
            return
        self._source_closed = True
        if self.sampler is not None:
            self.sampler.stop()
        if self.player is not None:
            self.player.stop()
        self.source.close()

    # --- one tick -----------------------------------------------------------

    def ingest(self, snapshot: Snapshot) -> None:
        """Take one tick: append to history, run the hints, update every widget in one batch."""
        self.ingest_many((snapshot,))

    def ingest_many(self, snapshots: Sequence[Snapshot]) -> None:
        """Take several ticks in order, each through history and the hints exactly as
        live, then update every widget once, for the newest (fast replay)."""
        if not snapshots:
            return
        started = time.perf_counter()
        history = self.history
        engine = self.engine
        for snapshot in snapshots:
            history.append(snapshot)
            self.findings = engine.update(history)
        self.ticks_ingested += len(snapshots)
        snapshot = snapshots[-1]
        self.snapshot = snapshot
        hints = {
            proc.key: engine.worst_for_process(proc.pid, proc.gpu_index)
            for proc in snapshot.processes
        }
        with self.batch_update():
            self._sync_gpu_panels(snapshot)
            self.header.update_from(snapshot)
            self._show_replay_status()
            self.banner.set_reason(snapshot.gpu_unavailable_reason)
            for index, panel in self._gpu_panels.items():
                panel.update_from(
                    snapshot.gpu(index),
                    history.gpus.get(index),
                    engine.for_gpu(index),
                    ticks=history.ticks,
                )
            self.cpu_panel.update_from(snapshot.host, snapshot.job)
            table = self.process_table
            table.note = (
                "no GPU processes (no GPUs: see the banner above)"
                if snapshot.gpu_unavailable_reason
                else ""
            )
            table.update_from(snapshot.processes, hints, snapshot.job)
            self._apply_layout()
            screen = self.screen
            if isinstance(screen, ProcessDetailScreen):
                screen.update_from(snapshot, history, self.paused, engine)
                screen.query_one(HeaderBar).set_replay(self.header.replay)
        self.last_ingest_s = time.perf_counter() - started

    def restart_history(self) -> None:
        """Forget every tick and every hint: the next tick starts a fresh window.

        For replay after a seek: time jumped, so the old window must not be
        joined to the new one (nor a hint's "since" carried over)."""
        self.history = History(self.window_s, self.interval_s)
        self.engine = HintEngine(self.thresholds)
        self.findings = ()

    # --- replay ---------------------------------------------------------------

    def replay_status(self) -> ReplayStatus | None:
        """What the header says about the replay (None when not replaying)."""
        replay = self.replay
        if replay is None:
            return None
        return ReplayStatus(replay.speed, replay.start_time, replay.end_time, self.replay_ended)

    def _show_replay_status(self) -> None:
        status = self.replay_status()
        if status is None:
            return
        self.header.set_replay(status)
        for header in self.screen.query(HeaderBar):
            header.set_replay(status)

    def _sync_gpu_panels(self, snapshot: Snapshot) -> None:
        """Mount or remove panels only when the set of GPUs changes."""
        indices = [gpu.index for gpu in snapshot.gpus]
        if list(self._gpu_panels) == indices:
            return
        container = self.gpu_area
        for index in list(self._gpu_panels):
            if index not in indices:
                self._gpu_panels.pop(index).remove()
        new = [GpuPanel(index) for index in indices if index not in self._gpu_panels]
        if new:
            container.mount(*new)
        self._gpu_panels = {
            index: self._gpu_panels.get(index)
            or next(panel for panel in new if panel.index == index)
            for index in indices
        }
        if new and len(new) != len(indices):
            container.sort_children(key=lambda w: w.index if isinstance(w, GpuPanel) else 0)

    # --- layout -------------------------------------------------------------

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(self._apply_layout)

    def _apply_layout(self) -> None:
        """Pick rich or compact shapes for the GPU and CPU panels to fit the terminal.

        Runs on resize and on ticks, but only touches styles when the outcome
        changes, so a steady screen never re-lays itself out.
        """
        width, height = self.size
        gpus = len(self._gpu_panels)
        cores = self.snapshot.host.core_count if self.snapshot is not None else 0
        if not hasattr(self, "banner"):
            return
        banner = self.banner
        banner_height = banner.height_for(width)
        key = (width, height, gpus, cores, banner_height)
        if key == self._layout_key:
            return
        self._layout_key = key
        banner.styles.height = max(1, banner_height)
        available = height - 2 - banner_height
        table_min = min(TABLE_MIN_HEIGHT, max(2, available // 3))

        rich_cols = max(1, min(gpus, width // RICH_PANEL_MIN_WIDTH)) if gpus else 1
        rich_rows = math.ceil(gpus / rich_cols)
        rich_height = rich_rows * RICH_HEIGHT + max(0, rich_rows - 1)
        compact_cols = max(1, min(gpus, width // COMPACT_LINE_WIDTH)) if gpus else 1
        compact_height = math.ceil(gpus / compact_cols)
        cpu_rich = lines_needed(cores, width, compact=False)
        cpu_compact = lines_needed(cores, width, compact=True)
        choices = [
            (False, rich_cols, rich_height, False, cpu_rich),
            (False, rich_cols, rich_height, True, cpu_compact),
            (True, compact_cols, compact_height, False, cpu_rich),
            (True, compact_cols, compact_height, True, cpu_compact),
        ]
        fitting = [c for c in choices if c[2] + c[4] + table_min <= available]
        gpu_compact, cols, gpu_height, cpu_is_compact, cpu_height = (
            fitting[0] if fitting else choices[-1]
        )
        if not fitting:
            # Too small for everything: GPU lines scroll in what is left.
            gpu_height = max(1, min(gpu_height, available - cpu_height - 2))
        container = self.gpu_area
        container.set_class(gpu_compact, "-compact")
        container.styles.grid_size_columns = cols
        container.styles.height = gpu_height if gpus else 0
        cpu = self.cpu_panel
        cpu.set_compact(cpu_is_compact)
        cpu.styles.height = max(1, min(cpu_height, available - 2))

    # --- actions --------------------------------------------------------------

    def action_help(self) -> None:
        # Imported on first use: the Markdown widget and its parser cost a few MB
        # of resident memory that a monitor left running for hours need not carry.
        from gputop_hints.tui.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
        else:
            self.push_screen(HelpScreen(replay=self.replay is not None))

    def action_toggle_pause(self) -> None:
        if self.paused and self.replay_ended:
            self.notify("End of recording: g goes back to the start, / seeks to a time.", timeout=4)
            return
        self._set_paused(not self.paused)

    def _set_paused(self, paused: bool) -> None:
        self.paused = paused
        if self.sampler is not None:
            self.sampler.pause(paused)
        if self.player is not None:
            self.player.pause(paused)
        self.header.set_paused(paused)
        for header in self.screen.query(HeaderBar):
            header.set_paused(paused)

    def get_key_display(self, binding: Binding) -> str:
        # The footer's own symbols (the Enter key's) must not reach an ASCII terminal.
        return glyphs.shown(super().get_key_display(binding))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Replay keys exist (and show in the footer) only when replaying.
        if action in self.REPLAY_ACTIONS:
            return self.replay is not None
        return True

    def action_replay_step(self) -> None:
        """One recorded tick forward; pauses first if playing."""
        if self.player is None:
            return
        if not self.paused:
            self._set_paused(True)
        self.player.step()

    def action_replay_faster(self) -> None:
        self._set_speed(2.0)

    def action_replay_slower(self) -> None:
        self._set_speed(0.5)

    def _set_speed(self, factor: float) -> None:
        replay = self.replay
        if replay is None:
            return
        wanted = clamp_speed(replay.speed * factor)
        if wanted == replay.speed:
            limit = "fastest" if factor > 1 else "slowest"
            self.notify(f"{speed_text(wanted)} is the {limit} replay speed.", timeout=2)
            return
        if self.player is not None:
            self.player.set_speed(wanted)
        else:
            replay.speed = wanted
        self._show_replay_status()

    def action_replay_start(self) -> None:
        if self.player is not None:
            self.player.seek_start()

    def action_replay_end(self) -> None:
        if self.player is not None:
            self.player.seek_end()

    def action_replay_seek(self) -> None:
        from gputop_hints.tui.seek_prompt import SeekPrompt

        replay = self.replay
        if replay is None or isinstance(self.screen, SeekPrompt):
            return
        here = self.snapshot.timestamp if self.snapshot is not None else None
        self.push_screen(
            SeekPrompt(span_text(replay.start_time, replay.end_time, here)), self.seek_to
        )

    def seek_to(self, text: str | None) -> None:
        """Jump to the time ``text`` names (the seek prompt's answer); a bad one is
        reported and the position kept."""
        replay = self.replay
        if text is None or replay is None:
            return
        position = self.snapshot.timestamp if self.snapshot is not None else replay.start_time
        try:
            target = parse_seek(
                text, position=position, start=replay.start_time, end=replay.end_time
            )
        except SeekError as exc:
            self.notify(str(exc), title="Seek", severity="error", timeout=6)
            return
        if self.player is not None:
            self.player.seek(target)

    def action_cycle_sort(self) -> None:
        self.process_table.cycle_sort()

    def action_cycle_theme(self) -> None:
        if not self.color:
            self.notify("Colours are off (NO_COLOR or --no-color): one monochrome theme.")
            return
        names = self.theme_names
        if not names:
            return
        position = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(position + 1) % len(names)]
        self.notify(f"Theme: {self.theme}", timeout=2)

    def watch_theme(self, theme: str) -> None:
        if not self.screen_stack:
            return
        for widget in self.screen.query(StripWidget):
            widget.invalidate()

    def on_process_table_opened(self, message: ProcessTable.Opened) -> None:
        screen = ProcessDetailScreen(message.pid, message.gpu_index, self.interval_s)
        self.push_screen(screen)
        screen.call_after_refresh(
            screen.update_from, self.snapshot, self.history, self.paused, self.engine
        )
        screen.call_after_refresh(self._show_replay_status)
