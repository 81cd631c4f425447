"""The monitor's Textual app.

Data flow: a :class:`~gputop_hints.sampling.sampler.Sampler` thread calls
``source.sample()`` and posts a :class:`SnapshotReady` message; its handler
(:meth:`GputopApp.ingest`, also called directly by tests) feeds the tick to
the :class:`~gputop_hints.hints.diagnoser.Diagnoser` (the history and the hint
engine run once over it), and hands every
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
step, speed and seeks are commands to that thread (:mod:`.playback`); after a
seek, history and hints start over from a pre-roll of the window before the target.

How the panels share the terminal is decided in :mod:`.layout`; the widgets
live in :mod:`.widgets`, the screens over this one in :mod:`.screens`.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.console import RenderableType
from textual import events
from textual.app import AutopilotCallbackType, ComposeResult
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.filter import Monochrome, NoColor
from textual.notifications import SeverityLevel
from textual.screen import Screen

from gputop_hints.alerts import Notifier, NotifySettings
from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.hints.engine import ActivitySeed, HintEngine, activity_seed
from gputop_hints.hints.findings import Finding, Severity
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.history import History
from gputop_hints.model import GpuSample, Snapshot
from gputop_hints.outputs.cost_text import cost_short
from gputop_hints.outputs.node_findings import node_findings_view
from gputop_hints.sampling.sampler import Sampler
from gputop_hints.sampling.stacks import StackResult, StackService
from gputop_hints.sources import Source
from gputop_hints.sources.live.signals import SignalResult, SignalTarget, refusal, send_signal
from gputop_hints.stacks import WORDS
from gputop_hints.text import visible, visible_lines
from gputop_hints.tui import glyphs, input_decoding, partial_output
from gputop_hints.tui.keys import KEYS
from gputop_hints.tui.layout import choose_layout
from gputop_hints.tui.messages import ReplayBatchReady, SamplingFailed, SnapshotReady, StacksReady
from gputop_hints.tui.playback import END_OF_RECORDING_NOTE, PlaybackControls
from gputop_hints.tui.screens.detail import ProcessDetailScreen
from gputop_hints.tui.screens.main import MainScreen
from gputop_hints.tui.themes import DEFAULT_THEME, ThemeSet, choose_theme, load_themes
from gputop_hints.tui.truecolor import use_skip_truecolor
from gputop_hints.tui.tty_driver import TerminalDriver
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.tui.widgets.cpu_panel import CpuPanel
from gputop_hints.tui.widgets.filter_bar import FilterBar
from gputop_hints.tui.widgets.footer import KeysFooter
from gputop_hints.tui.widgets.gpu_area import GpuArea
from gputop_hints.tui.widgets.gpu_panel import RICH_HEIGHT, panel_height
from gputop_hints.tui.widgets.gpu_unavailable_banner import GpuUnavailableBanner
from gputop_hints.tui.widgets.header import APP_NAME, HeaderBar
from gputop_hints.tui.widgets.node_findings import NodeFindingsTable
from gputop_hints.tui.widgets.process_columns import SORT_KEYS
from gputop_hints.tui.widgets.process_table import ProcessTable
from gputop_hints.tui.widgets.where_it_waits import StackState

if TYPE_CHECKING:  # the replay machinery loads every file reader: only when replaying
    from rich.terminal_theme import TerminalTheme

    from gputop_hints.sampling.replay_player import ReplayBatch, ReplayPlayer
    from gputop_hints.sources.replay import ReplaySource

NEVER_DROPPED = frozenset({"q", "ctrl+c"})
"""Keys a flood never drowns: quitting always works."""
KEY_BACKLOG_LIMIT = 128
"""A key is dropped while more messages than this wait behind it. Typing, key
repeat and a held-down arrow on a busy machine never queue that many; a paste
into the monitor (thousands of keys in one read, each a sort, theme or help
toggle) would otherwise cost CPU and memory without bound, and leave the screen
unresponsive until it had all been replayed."""

HELP_SCREEN = "help"
"""The name the help screen is installed under (built on the first ``?``)."""


PROMETHEUS_PROCESSES = (
    "processes are not read from Prometheus: run gputop-hints on a node to see its own"
)


MAX_ARRIVED = 10
"""The most ticks kept waiting for a screen that fell behind the sampler (ten seconds at
the default interval): enough to ride out a stall -- a suspended terminal, a slow SSH
link, a burst of load -- with the history whole, and a small bound on what a screen
that stays slower holds (each waiting tick is a whole snapshot, every process's row)."""


class GputopApp(PlaybackControls):
    """GPU panels, host CPU, the process table; ``?`` explains every metric."""

    CSS_PATH = "app.tcss"
    TITLE = APP_NAME
    ENABLE_COMMAND_PALETTE = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            k.keys,
            k.action,
            k.description,
            show=k.show,
            key_display=k.display,
            priority=k.priority,
        )
        for k in KEYS
    ]
    """From the one key table (tui.keys), which ``--help`` also lists."""

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
        sampler: Sampler | None = None,
        readonly: bool = False,
        user: str | None = None,
        stacks: bool = True,
        notify: NotifySettings | None = None,
        cost_per_gpu_hour: float | None = None,
    ) -> None:
        """``themes`` lets a caller that already loaded them (the CLI) pass them in,
        so broken theme files are read, and reported, once. ``thresholds`` (from
        the user's YAML; None means the built-in defaults) drive the hints.
        ``start_paused``: a replay opens on its first tick and waits for ``space``.
        ``sampler``: one already sampling ``source``, made without callbacks (the
        CLI starts it before importing Textual); the app attaches to it on mount
        instead of starting its own. ``readonly`` (``--readonly``): the signal keys
        send nothing and say so. ``user`` (``--user``): only that user's processes
        are listed at first (``u`` changes it). ``stacks`` (off with ``--no-stacks``):
        sample a process's stacks with py-spy when a warning first appears on it, when
        its detail view opens and on ``w`` (live only; docs/stacks.md). ``notify``
        (``--notify``): alerts when a warning or worse appears or clears; the alerts
        package decides and makes the bytes, this app only writes them (docs/alerts.md).
        ``cost_per_gpu_hour``: the header's running cost also in money."""
        # Without colour (NO_COLOR, --no-color) the monochrome theme is used, so
        # shapes and attributes, not hues, carry meaning.
        self.color = color and "NO_COLOR" not in os.environ
        super().__init__()
        use_skip_truecolor(self._filters)  # the same drawing, fewer segments rebuilt
        if not self.color:
            # no-color.org: no colour at all -- not Textual's greyscale, which still
            # writes 256-colour greys. Bold, dim, reverse and underline stay.
            self._filters = [f for f in self._filters if not isinstance(f, Monochrome)]
            self._filters.append(NoColor())
        self.source = source
        self.interval_s = interval_s
        self.window_s = window_s
        self.autostart = autostart
        self.readonly = readonly
        self._only_user = user
        self.last_signal_result: SignalResult | None = None
        """What the latest confirmed signal did (for tests)."""
        self.thresholds = thresholds if thresholds is not None else Thresholds.defaults()
        self.diagnoser = Diagnoser(self.thresholds, interval_s=interval_s, window_s=window_s)
        self.cost_per_gpu_hour = cost_per_gpu_hour
        """The history behind every sparkline and the hints run over it."""
        self.last_ingest_s = 0.0
        """Wall time the latest :meth:`ingest` took, engine included (for profiling)."""
        self.sampler: Sampler | None = None
        self._early_sampler = sampler
        self.paused = start_paused
        self.replay: ReplaySource | None = (
            cast("ReplaySource", source) if source.kind == "replay" else None
        )
        """The source's replay controls; None when watching live or a demo."""
        self.player: ReplayPlayer | None = None
        self.replay_ended = False
        """The last recorded tick is on screen; playback stopped there."""
        self.snapshot: Snapshot | None = None
        self.node: str | None = None
        """With GPUs of several nodes (``--prometheus``): show only this node's (``N``)."""
        self.ticks_ingested = 0
        self._arrived: list[Snapshot] = []
        """Ticks the sampler handed over that the app has not taken yet (at most
        MAX_ARRIVED): one SnapshotReady message is in flight for all of them."""
        self._arrived_lock = threading.Lock()
        self.ticks_dropped = 0
        """Ticks dropped because the screen fell more than MAX_ARRIVED ticks behind."""
        self._said_dropped = False
        self.notifier: Notifier | None = (
            Notifier(notify, self._write_to_terminal, self._notify_problem)
            if notify is not None and notify.enabled
            else None
        )
        """Alerts (``--notify``); None when off."""
        self.stacks_off: str | None = (
            "stack sampling is off (--no-stacks)"
            if not stacks
            else None
            if source.kind == "live"
            else "no stacks here: the processes are not on this machine (demo, replay, cluster)"
        )
        """Why stacks are never sampled in this run; None: they are, on request."""
        self._stack_service: StackService | None = None
        self._layout_key: tuple[int, ...] | None = None
        self._patched_output = False
        self._last_error: str | None = None
        self._pending_toggles: dict[str, int] = {}
        """Presses of sort and theme read but not applied yet (see _coalesce)."""
        self._source_closed = False
        self.exit_on_signals = False
        """Quit cleanly on SIGTERM and SIGHUP (the CLI sets it; tests running the
        app in-process leave the test runner's own handlers alone)."""

        theme_set = themes if themes is not None else load_themes()
        self.theme_errors = list(theme_set.errors)
        """Theme files that were skipped, for the CLI to print."""
        for loaded in theme_set.themes.values():
            self.register_theme(loaded)
        choice = choose_theme(theme_set, theme, self.color)
        self.notes: list[str] = choice.notes
        self.theme_names = choice.cycle
        self.theme = choice.name

    async def on_event(self, event: events.Event) -> None:
        if (
            isinstance(event, events.Key)
            and not event.is_forwarded
            and event.key not in NEVER_DROPPED
            and self.message_queue_size > KEY_BACKLOG_LIMIT
        ):
            return  # part of a flood: see KEY_BACKLOG_LIMIT
        await super().on_event(event)

    # --- building the screen -----------------------------------------------

    def compose(self) -> ComposeResult:
        # The main screen's widgets are kept by reference: while the detail or
        # help screen is on top, `query_one` would search that screen instead.
        self.header = HeaderBar(self.interval_s)
        self.header.source_kind = getattr(self.source, "kind", "")
        self.header.paused = self.paused
        self.header.replay = self.replay_status()
        self.banner = GpuUnavailableBanner()
        self.gpu_area = GpuArea()
        self.cpu_panel = CpuPanel()
        self.process_table = ProcessTable()
        self.process_table.user = self._only_user
        yield self.header
        yield self.banner
        yield self.gpu_area
        yield self.cpu_panel
        yield self.process_table
        self.node_findings = NodeFindingsTable()
        self.node_findings.display = False
        yield self.node_findings
        self.filter_bar = FilterBar()
        yield self.filter_bar
        yield KeysFooter()

    def on_mount(self) -> None:
        # Changed cells only, not whole lines: what a slow SSH link pays for.
        # Installed while this app runs, not when it is built (see partial_output).
        self._patched_output = partial_output.install()
        if self.exit_on_signals:
            self._handle_exit_signals()
        self.app_resume_signal.subscribe(self, self._repaint_after_resume)
        self.process_table.focus()
        if self.notes:
            # Reported once, together, rather than a toast per file.
            self.notify("\n".join(self.notes), severity="warning", timeout=10)
        self._apply_layout()
        if self.autostart:
            self.start_sampling()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A toast; what it says may hold file names and library errors, so control
        characters are shown visibly and, unless asked, square brackets are not
        read as markup."""
        super().notify(
            visible_lines(message),
            title=visible(title),
            severity=severity,
            timeout=timeout,
            markup=markup,
        )

    def _repaint_after_resume(self, _app: object) -> None:
        """Draw every cell again after Ctrl-Z and ``fg`` (SIGTSTP, SIGCONT).

        The terminal's screen was cleared while stopped, but the widgets cache
        their lines and only changed cells are written, so labels that never
        change stayed blank until something moved them."""
        for widget in self.screen.query(StripWidget):
            widget.invalidate()
        self.screen.refresh(layout=True, repaint=True)

    def start_sampling(self) -> None:
        """Start the sampler thread, or the replay thread (``autostart`` does this on mount)."""
        if self.sampler is not None or self.player is not None:
            return
        if self.replay is not None:
            from gputop_hints.sampling.replay_player import ReplayPlayer

            thresholds = self.diagnoser.thresholds
            self.player = ReplayPlayer(
                self.replay,
                self._on_replay_batch,
                preroll_s=self.window_s,
                on_error=self._on_sample_error,
                seed_from=lambda snaps: activity_seed(snaps, thresholds),
            )
            self.player.pause(self.paused)
            self.player.start()
            if self.paused:
                self.player.step()  # open on the first tick, not on an empty screen
            return
        if self._early_sampler is not None:
            self.sampler, self._early_sampler = self._early_sampler, None
            self.sampler.pause(self.paused)
            self.sampler.attach(self._on_sample, self._on_sample_error)
            return
        self.sampler = Sampler(
            self.source, self.interval_s, self._on_sample, on_error=self._on_sample_error
        )
        self.sampler.pause(self.paused)
        self.sampler.start()

    def _on_sample(self, snapshot: Snapshot) -> None:
        """Runs on the sampler thread: hand the frozen snapshot over, nothing else.

        While a tick is still waiting for the app (a slow terminal, a loaded host, a
        big node whose repaint takes longer than the interval), the new one joins it
        instead of queueing a message of its own: the app takes every waiting tick
        through the history and the hints and repaints once, for the newest. Without
        that, a screen slower than the sampler queued a whole snapshot a tick without
        bound (a 22-minute soak at 8 x 512 on a loaded 2-core host: 179 -> 662 MB, still rising).
        More than MAX_ARRIVED ticks behind, the oldest are dropped (counted in
        ``ticks_dropped``; the history sees a gap, as after a stalled sample)."""
        with self._arrived_lock:
            self._arrived.append(snapshot)
            if len(self._arrived) > MAX_ARRIVED:
                del self._arrived[0]
                self.ticks_dropped += 1
            if len(self._arrived) > 1:
                return  # the message already on its way takes this one too
        self.post_message(SnapshotReady(snapshot))

    def _on_replay_batch(self, batch: ReplayBatch) -> None:
        """Runs on the replay thread: hand the frozen batch over, nothing else."""
        self.post_message(ReplayBatchReady(batch))

    def _on_sample_error(self, error: BaseException) -> None:
        self.post_message(SamplingFailed(f"{type(error).__name__}: {error}"))

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        with self._arrived_lock:
            arrived, self._arrived = self._arrived, []
        if not self.paused:  # ticks already in flight when `p` was pressed are dropped
            self.ingest_many(arrived or (message.snapshot,))
        if self.ticks_dropped and not self._said_dropped:
            self._said_dropped = True
            self.notify(
                "The screen fell behind the sampler: ticks older than "
                f"{MAX_ARRIVED} are dropped (the history shows the gap). A longer "
                "--interval or a smaller terminal keeps up.",
                severity="warning",
                timeout=10,
            )

    def on_replay_batch_ready(self, message: ReplayBatchReady) -> None:
        # Taken even while paused: the recording was read, and a step or a seek
        # while paused is exactly such a batch.
        batch = message.batch
        try:
            with self.batch_update():
                if batch.restart:
                    self.restart_history()
                    if isinstance(batch.seed, ActivitySeed):
                        self.diagnoser.engine.seed(batch.seed)
                self.replay_ended = batch.at_end
                if batch.at_end and not self.paused:
                    self.set_paused(True)
                if batch.snapshots:
                    self.ingest_many(batch.snapshots)
                else:
                    self.show_replay_status()
        finally:
            if self.player is not None:
                self.player.consumed()
        if batch.at_end:
            self.notify(END_OF_RECORDING_NOTE, title="Replay", timeout=6)

    def on_sampling_failed(self, message: SamplingFailed) -> None:
        if message.error != self._last_error:
            self._last_error = message.error
            self.notify(f"Sampling failed: {message.error}", severity="error", timeout=8)

    def get_driver_class(self) -> type[Driver]:
        """On Linux, draw on the controlling terminal even when standard error is
        redirected (:mod:`.tty_driver`)."""
        driver = super().get_driver_class()
        if sys.platform.startswith("linux") and issubclass(TerminalDriver, driver):
            return TerminalDriver
        return driver

    async def run_async(
        self,
        *,
        headless: bool = False,
        inline: bool = False,
        inline_no_clear: bool = False,
        mouse: bool = True,
        size: tuple[int, int] | None = None,
        auto_pilot: AutopilotCallbackType | None = None,
    ) -> Any:
        """Run the app and return what ``exit`` was given. While it runs, a byte of
        input that is not UTF-8 is shown as U+FFFD instead of crashing the input
        thread (:mod:`.input_decoding`)."""
        input_decoding.install()
        try:
            return await super().run_async(
                headless=headless,
                inline=inline,
                inline_no_clear=inline_no_clear,
                mouse=mouse,
                size=size,
                auto_pilot=auto_pilot,
            )
        finally:
            input_decoding.uninstall()

    def on_unmount(self) -> None:
        self.shutdown()
        if self._patched_output:
            self._patched_output = False
            partial_output.uninstall()

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

    def action_interrupt(self) -> None:
        """Ctrl+C: quit as on SIGINT, exit status 130 (the terminal is in raw mode, so
        the key comes here, not as a signal). Textual's own binding only said which key
        quits, its markup printed as it was."""
        self._exit_on_signal(signal.SIGINT)

    def panic(self, *renderables: RenderableType) -> None:
        """Textual's exit for a crash outside a message handler -- its input thread's, for
        one -- left exit status 0, as if the user had quit: a crash is 1 here, as it is
        for an exception in a handler."""
        if self.return_code is None:
            self._return_code = 1
        super().panic(*renderables)

    def _exit_on_signal(self, number: signal.Signals) -> None:
        # The sampler must not post more ticks to an app that is leaving.
        self.shutdown()
        self.exit(return_code=128 + int(number))

    def _write_to_terminal(self, data: str) -> None:
        """An alert's bell and OSC bytes, straight to the terminal (not drawn)."""
        if self._driver is not None and not self.is_headless:
            self._driver.write(data)

    def _notify_problem(self, message: str) -> None:
        """A failing --notify-cmd, said once as a toast (called from its worker thread)."""
        with contextlib.suppress(RuntimeError):
            self.notify(message, severity="warning", timeout=10)

    def shutdown(self) -> None:
        """Stop sampling and release the source (idempotent)."""
        if self._source_closed:
            return
        self._source_closed = True
        if self.player is not None:
            self.player.stop()
        if self._stack_service is not None:
            self._stack_service.close()
        if self.notifier is not None:
            self.notifier.close(wait_s=1.0)
        if self.sampler is not None:
            # Closing the source wakes a tick waiting on a GPU that does not answer
            # (a hung NVML call): the quit does not wait out the tick's deadline.
            self.sampler.stop(wake=self.source.close)
        else:
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
        diagnoser = self.diagnoser
        notifier = self.notifier
        for snapshot in snapshots:
            findings = diagnoser.feed(snapshot)
            if notifier is not None:
                notifier.tick(findings, snapshot)
        history = diagnoser.history
        engine = diagnoser.engine
        self.ticks_ingested += len(snapshots)
        snapshot = snapshots[-1]
        self.snapshot = snapshot
        hints = engine.inline_for_processes(snapshot.processes)
        if self.stacks_off is None and not self.paused:
            self._stacks_for_warnings(engine.active)
        rank_findings = (
            {proc.key: engine.for_process(proc.pid, proc.gpu_index) for proc in snapshot.processes}
            if self.process_table.tree_view
            else None
        )
        with self.batch_update():
            self.gpu_area.show_gpus([gpu.index for gpu in self._shown_gpus(snapshot)])
            self.header.update_from(snapshot)
            totals = diagnoser.costs.totals()
            self.header.set_cost(cost_short(totals, self.cost_per_gpu_hour), totals.lost_s >= 0.5)
            self.show_replay_status()
            self.banner.set_reason(snapshot.gpu_unavailable_reason, snapshot.source)
            self._update_gpu_panels(snapshot)
            self.cpu_panel.update_from(snapshot.host, snapshot.job, self.findings)
            table = self.process_table
            table.note = (
                "no GPU processes (no GPUs: see the banner above)"
                if snapshot.gpu_unavailable_reason
                else PROMETHEUS_PROCESSES
                if snapshot.source == "prometheus"
                else ""
            )
            table.update_from(
                snapshot.processes,
                hints,
                snapshot.job,
                snapshot.launchers,
                rank_findings,
                snapshot.unseen_processes(),
                {(gpu.index, *m.key): m.label for gpu in snapshot.gpus for m in gpu.mig_instances},
            )
            self._update_node_findings(snapshot)
            self._apply_layout()
            screen = self.screen
            if isinstance(screen, ProcessDetailScreen):
                screen.update_from(
                    snapshot, history, self.paused, engine, self.stack_state(screen.pid)
                )
                screen.query_one(HeaderBar).set_replay(self.header.replay)
        self.last_ingest_s = time.perf_counter() - started

    def restart_history(self) -> None:
        """Forget every tick and every hint: the next tick starts a fresh window.

        For replay after a seek: time jumped, so the old window must not be
        joined to the new one (nor a hint's "since" carried over)."""
        self.diagnoser.restart()

    @property
    def history(self) -> History:
        return self.diagnoser.history

    @property
    def engine(self) -> HintEngine:
        return self.diagnoser.engine

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The findings visible after the latest tick, worst first."""
        return self.diagnoser.findings

    # --- layout -------------------------------------------------------------

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(self._apply_layout)

    def _apply_layout(self) -> None:
        """Pick rich or compact shapes for the GPU and CPU panels to fit the terminal.

        Runs on resize and on ticks, but only touches styles when the outcome
        changes, so a steady screen never re-lays itself out.
        """
        if not hasattr(self, "banner"):
            return  # a resize before compose: nothing to lay out yet
        width, height = self.size
        gpus = len(self.gpu_area.panels)
        cores = self.snapshot.host.core_count if self.snapshot is not None else 0
        rich_height = (
            panel_height(self._shown_gpus(self.snapshot))
            if self.snapshot is not None
            else RICH_HEIGHT
        )
        banner = self.banner
        banner_height = banner.height_for(width)
        key = (width, height, gpus, cores, banner_height, rich_height)
        if key == self._layout_key:
            return
        self._layout_key = key
        banner.styles.height = max(1, banner_height)
        layout = choose_layout(width, height, gpus, cores, banner_height, rich_height)
        container = self.gpu_area
        container.set_class(layout.gpu_compact, "-compact")
        if rich_height != RICH_HEIGHT and not layout.gpu_compact:
            # A line per MIG instance under its GPU.
            container.styles.grid_rows = str(rich_height)
            for panel in container.panels.values():
                panel.styles.height = rich_height
        else:  # the stylesheet's heights (rich or compact)
            container.styles.clear_rule("grid_rows")
            for panel in container.panels.values():
                panel.styles.clear_rule("height")
        container.styles.grid_size_columns = layout.gpu_columns
        container.styles.height = layout.gpu_height if gpus else 0
        self.cpu_panel.set_compact(layout.cpu_compact)
        self.cpu_panel.styles.height = layout.cpu_height

    # --- actions --------------------------------------------------------------

    def action_help(self) -> None:
        """``?``: open the guide, or close it (at once: Esc may follow in the same read)."""
        # Imported on first use: the Markdown widget and its parser cost a few MB
        # of resident memory that a monitor left running for hours need not carry.
        from gputop_hints.tui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
            return
        if any(isinstance(screen, HelpScreen) for screen in self.screen_stack):
            return  # already open under another screen: one copy is enough
        # Built once and kept: the guide is hundreds of Markdown widgets, and
        # rebuilding them on every `?` cost CPU and memory a key flood multiplied.
        if not self.is_screen_installed(HELP_SCREEN):
            self.install_screen(HelpScreen(replay=self.replay is not None), HELP_SCREEN)
        self.push_screen(HELP_SCREEN)

    def _coalesce(self, what: str) -> None:
        """Count a press of a costly toggle (sort, theme) and apply them all once, after
        every key already read: a burst of ``s`` and ``c`` costs one re-sort and one
        restyle of every widget, not one per key, and a ``q`` behind them is reached
        at once. (Floods of pasted keys are cut down before they get here:
        :mod:`.input_decoding`.)"""
        pending = self._pending_toggles
        first = not pending
        pending[what] = pending.get(what, 0) + 1
        if first:
            self.call_later(self._apply_toggles)

    def _apply_toggles(self) -> None:
        pending, self._pending_toggles = self._pending_toggles, {}
        sorts = pending.get("sort", 0) % len(SORT_KEYS)
        for _ in range(sorts):
            self.process_table.cycle_sort()
        themes = pending.get("theme", 0)
        if themes:
            self._cycle_theme(themes)

    def get_key_display(self, binding: Binding) -> str:
        # The footer's own symbols (the Enter key's) must not reach an ASCII terminal.
        return glyphs.shown(super().get_key_display(binding))

    def action_cycle_sort(self) -> None:
        self._coalesce("sort")

    def action_reverse_sort(self) -> None:
        """``r``: the sort column's order turned round (unknown values stay last)."""
        if isinstance(self.screen, MainScreen):
            self.process_table.toggle_reverse()

    def action_toggle_arguments(self) -> None:
        """``a``: the COMMAND column with or without the commands' arguments."""
        if isinstance(self.screen, MainScreen):
            self.process_table.toggle_arguments()

    def action_filter(self) -> None:
        """``/`` (``f`` in replay, where ``/`` seeks): show only processes whose command
        line holds a text."""
        if isinstance(self.screen, MainScreen) and not self.filter_bar.display:
            # A line under the table, which follows each key (a dialog blanked the screen).
            table = self.process_table
            self.filter_bar.open(
                table.search,
                lambda text: table.set_filter(user=table.user, search=text),
                self._focus_table,
            )

    def _focus_table(self) -> None:
        self.process_table.focus()

    def action_live_filter(self) -> None:
        self.action_filter()

    def action_cycle_user(self) -> None:
        """``u``: everyone's processes, then only yours, then each other user's in turn."""
        if not isinstance(self.screen, MainScreen):
            return
        table = self.process_table
        me = getpass.getuser()
        others = sorted({p.user for p in table.all_rows if p.user and p.user != me})
        order: list[str | None] = [None, me, *others]
        at = order.index(table.user) if table.user in order else 0
        table.set_filter(user=order[(at + 1) % len(order)], search=table.search)

    def _shown_gpus(self, snapshot: Snapshot) -> tuple[GpuSample, ...]:
        """The GPUs the panel shows: all, or only :attr:`node`'s."""
        if self.node is None:
            return snapshot.gpus
        return tuple(g for g in snapshot.gpus if g.node == self.node)

    def _update_gpu_panels(self, snapshot: Snapshot) -> None:
        """Every GPU panel on screen from ``snapshot`` and the history it ends."""
        diagnoser = self.diagnoser
        history = diagnoser.history
        for index, panel in self.gpu_area.panels.items():
            panel.update_from(
                snapshot.gpu(index),
                history.gpus.get(index),
                diagnoser.engine.for_gpu(index),
                ticks=history.ticks,
                verdict=diagnoser.verdicts.of(index),
            )

    def _update_node_findings(self, snapshot: Snapshot) -> None:
        """``--prometheus``: the nodes' own findings (all, or :attr:`node`'s) where the
        process table would only say that no processes are read."""
        prometheus = snapshot.source == "prometheus"
        self.process_table.display = not prometheus
        self.node_findings.display = prometheus
        if not prometheus:
            return
        down = snapshot.gpu_unavailable_reason is not None
        self.node_findings.update_from(
            self.process_table.note,
            None
            if down
            else node_findings_view(snapshot.node_findings, self.node, snapshot.timestamp),
        )

    def action_cycle_node(self) -> None:
        """``N``: a job across nodes: only one node's GPUs, each node in turn, then all."""
        snapshot = self.snapshot
        if snapshot is None or not isinstance(self.screen, MainScreen):
            return
        nodes = sorted({g.node for g in snapshot.gpus if g.node is not None})
        if not nodes:
            self.notify("N shows one node at a time in a job across nodes (--prometheus)")
            return
        order: list[str | None] = [None, *nodes]
        at = order.index(self.node) if self.node in order else 0
        self.node = order[(at + 1) % len(order)]
        self.gpu_area.show_gpus([g.index for g in self._shown_gpus(snapshot)])
        self._update_gpu_panels(snapshot)  # the latest tick's figures, not the next's
        self._update_node_findings(snapshot)
        self.call_after_refresh(self._apply_layout)
        shown = "all nodes" if self.node is None else f"node {visible(self.node)} only"
        self.notify(f"GPUs of {shown} (N: next)")

    def action_clear_filters(self) -> None:
        """Esc: every process again (the user and command filters both cleared)."""
        if isinstance(self.screen, MainScreen):
            self.process_table.set_filter(user=None, search="")

    def action_cycle_theme(self) -> None:
        self._coalesce("theme")

    def _cycle_theme(self, steps: int) -> None:
        if not self.color:
            self.notify("Colours are off (NO_COLOR or --no-color): one monochrome theme.")
            return
        names = self.theme_names
        if not names:
            return
        position = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(position + steps) % len(names)]
        self.notify(f"Theme: {self.theme}", timeout=2)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The tree and the signals act on the process table: not from the screens over it.
        if action in ("toggle_tree", "signal") and not isinstance(self.screen, MainScreen):
            return False
        if action == "live_filter":
            return self.replay is None  # in replay `/` seeks (`f` filters there)
        return super().check_action(action, parameters)

    def action_toggle_tree(self) -> None:
        """``t``: the process tree (launcher, ranks, workers) or the flat table."""
        if not isinstance(self.screen, MainScreen):
            return
        table = self.process_table
        if not table.tree_view:
            snapshot = self.snapshot
            table.rank_findings = (
                {}
                if snapshot is None
                else {
                    p.key: self.engine.for_process(p.pid, p.gpu_index) for p in snapshot.processes
                }
            )
        table.toggle_tree()

    def action_signal(self, name: str) -> None:
        """``I`` / ``T`` / ``K``: ask, then send SIGINT / SIGTERM / SIGKILL to the
        selected process. Refused at once with ``--readonly`` and in demo or replay."""
        if not isinstance(self.screen, MainScreen):
            return
        refused = refusal(getattr(self.source, "kind", ""), self.readonly)
        if refused is not None:
            self.last_signal_result = SignalResult(False, refused)
            self.notify(refused, severity="warning", timeout=5)
            return
        target = self.process_table.selected_target()
        if target is None:
            self.notify("No process selected.", timeout=3)
            return
        from gputop_hints.tui.screens.signal_confirm import SignalConfirmScreen

        def answered(send: bool | None) -> None:
            if send:
                self._send_signal(target, name)
            else:
                self.notify(f"{name} not sent (cancelled).", timeout=3)

        self.push_screen(SignalConfirmScreen(target, name), answered)

    def _send_signal(self, target: SignalTarget, name: str) -> None:
        result = send_signal(
            target, name, source_kind=getattr(self.source, "kind", ""), readonly=self.readonly
        )
        self.last_signal_result = result
        self.notify(result.message, severity="information" if result.sent else "error", timeout=6)

    def _refresh_truecolor_filter(self, theme: TerminalTheme) -> None:
        # Textual puts a new ANSIToTruecolor in on a theme change; keep ours instead.
        super()._refresh_truecolor_filter(theme)
        use_skip_truecolor(self._filters)

    def watch_theme(self, theme: str) -> None:
        if not self.screen_stack:
            return
        for widget in self.screen.query(StripWidget):
            widget.invalidate()

    # --- stacks (issue 45) ---------------------------------------------------------

    def request_stacks(self, pid: int, *, manual: bool) -> bool:
        """Ask for ``pid``'s stacks (its main process and its busiest workers); False when
        stacks are off here, the pid is not on screen, or the rate limits refuse it."""
        if self.stacks_off is not None or self.snapshot is None:
            return False
        proc = next((p for p in self.snapshot.processes if p.pid == pid), None)
        if proc is None:
            return False
        workers = [w.pid for w in sorted(proc.workers, key=lambda w: -(w.cpu_percent or 0.0))]
        if self._stack_service is None:
            self._stack_service = StackService(self._on_stacks)
        return self._stack_service.request(pid, workers, manual=manual)

    def _on_stacks(self, result: StackResult) -> None:
        """Runs on the stack thread: hand the result over, nothing else."""
        self.post_message(StacksReady(result))

    def on_stacks_ready(self, message: StacksReady) -> None:
        result = message.result
        at = self.snapshot.timestamp if self.snapshot is not None else result.at
        self.engine.set_stacks(result.reading, at)
        screen = self.screen
        if isinstance(screen, ProcessDetailScreen) and screen.pid == result.pid:
            screen.update_from(
                self.snapshot, self.history, self.paused, self.engine, self.stack_state(result.pid)
            )
        elif result.manual:
            top = result.reading.categories[0] if result.reading.categories else None
            text = (
                f"pid {result.pid}: {top.share * 100:.0f} % {WORDS.get(top.name, top.name)}"
                if top is not None
                else f"pid {result.pid}: not sampled ({result.reading.reason or 'no samples'})"
            )
            self.notify(visible(text), timeout=6)

    def stack_state(self, pid: int) -> StackState:
        """What the detail view's WHERE IT WAITS shows for ``pid`` now."""
        if self.stacks_off is not None:
            return StackState(disabled=self.stacks_off)
        got = self.engine.stacks_of(pid)
        sampling = self._stack_service is not None and self._stack_service.pending(pid)
        if got is None:
            return StackState(sampling=sampling)
        at, reading = got
        age = self.snapshot.timestamp - at if self.snapshot is not None else None
        return StackState(reading, None if age is None else max(0.0, age), sampling)

    def _stacks_for_warnings(self, active: Sequence[Finding]) -> None:
        """A warning or worse on a process: ask for its stacks (rate-limited, so a node
        of warned processes costs one sampling a minute at most). Runs every tick: the
        rate limits are asked first, the snapshot is searched only for a pid they let
        through."""
        warned = {
            f.subject.pid
            for f in active
            if f.subject.pid is not None and f.severity >= Severity.WARNING
        }
        service = self._stack_service
        due = [pid for pid in warned if service is None or service.due(pid)]
        if not due:
            return
        asked = [pid for pid in due if self.request_stacks(pid, manual=False)]
        if asked and self._stack_service is not None and self.snapshot is not None:
            self._stack_service.forget({p.pid for p in self.snapshot.processes})

    def action_where_it_waits(self) -> None:
        """``w``: sample the selected (or the detail view's) process's stacks now."""
        screen = self.screen
        if self.stacks_off is not None:
            self.notify(self.stacks_off, timeout=5)
            return
        if isinstance(screen, ProcessDetailScreen):
            pid: int | None = screen.pid
        else:
            target = self.process_table.selected_target()
            pid = target.pid if target is not None else None
        if pid is None:
            self.notify("No process selected.", timeout=3)
            return
        if self.request_stacks(pid, manual=True):
            self.notify(f"pid {pid}: sampling its stacks with py-spy (~3 s)...", timeout=4)
            if isinstance(screen, ProcessDetailScreen):
                screen.update_from(
                    self.snapshot, self.history, self.paused, self.engine, self.stack_state(pid)
                )
        else:
            self.notify(f"pid {pid}: already being sampled, or not on screen.", timeout=4)

    def action_device_holders(self) -> None:
        """``h``: who holds the GPU device files (``fuser -v /dev/nvidia*``), read-only;
        on a source that is not this machine's GPUs, why not."""
        from gputop_hints.sources.live.device_holders import refusal
        from gputop_hints.tui.screens.device_holders import DeviceHoldersScreen

        if not isinstance(self.screen, DeviceHoldersScreen):
            ghosts = [f for f in self.findings if f.rule == "ghost-memory"]
            self.push_screen(DeviceHoldersScreen(refusal(getattr(self.source, "kind", "")), ghosts))

    def on_process_table_opened(self, message: ProcessTable.Opened) -> None:
        # Only from the table on screen: a second Enter read together with the first
        # asks again after the first detail screen is already up.
        if not isinstance(self.screen, MainScreen):
            return
        screen = ProcessDetailScreen(message.pid, message.gpu_index, self.interval_s)
        self.push_screen(screen)
        self.request_stacks(message.pid, manual=True)
        screen.call_after_refresh(
            screen.update_from,
            self.snapshot,
            self.history,
            self.paused,
            self.engine,
            self.stack_state(message.pid),
        )
        screen.call_after_refresh(self.show_replay_status)
