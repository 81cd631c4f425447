"""``gputop-hints`` without a subcommand: the interactive monitor, or with
``--once``/``--json`` (or without a terminal) a one-off summary.

Textual is imported only when the interactive monitor actually starts, so the
non-interactive paths stay light.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from gputop_hints.cli.args import (
    EXIT_OK,
    INTERVAL_HELP,
    add_config_arg,
    add_cost_arg,
    add_look_args,
    add_source_args,
    check_source_args,
    interval,
    positive,
    usage_error,
)
from gputop_hints.cli.gc_tuning import collections_paused, tune_for_long_run
from gputop_hints.cli.inputs import open_source, print_scenarios, terminal_unusable
from gputop_hints.cli.notify import add_notify_args, notify_settings
from gputop_hints.history import DEFAULT_WINDOW_S
from gputop_hints.sampling.sampler import DEFAULT_INTERVAL_S, MIN_INTERVAL_S

if TYPE_CHECKING:
    from gputop_hints.alerts import NotifySettings
    from gputop_hints.hints.thresholds import Thresholds
    from gputop_hints.sources import Source

USAGE = """\
gputop-hints [options]                          the monitor (--once: a summary)
       gputop-hints {record,replay,report,export,config,explain} ...   (each has --help)"""

DESCRIPTION = """\
A terminal GPU monitor for people who train models: per GPU SM %, memory-access %,
VRAM, PCIe; CPU load per core; every GPU process with its DataLoader workers.

Without an NVIDIA driver it starts in CPU-only mode; add --demo to watch
simulated training jobs instead."""

EPILOG = """\
examples:
  gputop-hints                         monitor this machine's GPUs
  gputop-hints --demo                  simulated GPUs (no driver needed)
  gputop-hints --demo starved-loader   one demo scenario (see --list-scenarios)
  gputop-hints --once                  print a 2-second summary and exit
  gputop-hints --once --json           the same as one JSON document (docs/json.md)
  gputop-hints record -o run.jsonl.gz  headless flight recorder (docs/recording.md)
  gputop-hints replay run.jsonl.gz     the monitor on recorded data
  gputop-hints report gpu.csv          post-mortem of a recording or an nvidia-smi/W&B log
  gputop-hints export                  Prometheus metrics and active findings (docs/cluster.md)
  gputop-hints config --print-defaults the hint thresholds, as YAML to copy and edit
  gputop-hints explain input-starved   what a hint means and what to change (no RULE: list)
  srun --jobid=<id> --overlap --pty gputop-hints    attach to a SLURM job

"""


class _VersionAction(argparse._VersionAction):
    """``--version``, with the version looked up only when asked for (see :mod:`gputop_hints`)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from gputop_hints import __version__

        self.version = f"gputop-hints {__version__}"
        super().__call__(parser, namespace, values, option_string)


class _MonitorParser(argparse.ArgumentParser):
    """The monitor's parser: its help ends with the monitor's keys (tui/keys.py), looked
    up only when the help is shown -- not at every start (``--once``'s, issue 49)."""

    def format_help(self) -> str:
        from gputop_hints.tui.keys import help_lines

        self.epilog = EPILOG + "\n".join(help_lines()) + "\n"
        return super().format_help()


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``gputop-hints [options]`` (the monitor and its one-off summary)."""
    parser = _MonitorParser(
        prog="gputop-hints",
        usage=USAGE,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction)

    add_source_args(parser)

    timing = parser.add_argument_group("sampling")
    timing.add_argument(
        "--interval", type=interval, default=DEFAULT_INTERVAL_S, metavar="S", help=INTERVAL_HELP
    )
    timing.add_argument(
        "--window",
        type=positive,
        default=DEFAULT_WINDOW_S,
        metavar="S",
        help=f"seconds of history in sparklines (default {DEFAULT_WINDOW_S:g})",
    )

    out = parser.add_argument_group("output")
    out.add_argument(
        "--once",
        action="store_true",
        help="sample for --duration seconds, print a plain-text summary and exit (no TTY needed)",
    )
    out.add_argument(
        "--json",
        action="store_true",
        help="like --once, but print one JSON document (schema: docs/json.md)",
    )
    out.add_argument(
        "--duration",
        type=positive,
        default=2.0,
        metavar="S",
        help="seconds to sample for --once/--json (default 2; shorter than --interval: two "
        "samples that far apart)",
    )
    out.add_argument(
        "--user",
        metavar="NAME",
        help="the monitor lists only NAME's GPU processes at first (u changes it; hints cover all)",
    )
    out.add_argument(
        "--readonly",
        action="store_true",
        help="never send signals: the I/T/K keys (SIGINT/SIGTERM/SIGKILL) are off",
    )
    out.add_argument(
        "--no-stacks",
        action="store_true",
        help="never sample a process's stacks with py-spy (by default: when a warning "
        "appears on it, when its detail view opens, and on w)",
    )
    add_cost_arg(out)
    add_config_arg(parser)
    add_look_args(out)
    add_notify_args(parser)
    return parser


def monitor_main(argv: Sequence[str]) -> int:
    """``gputop-hints [options]``: the monitor, or a one-off summary where it cannot run."""
    parser = build_parser()
    args = parser.parse_args(argv)

    if args.list_scenarios:
        print_scenarios()
        return EXIT_OK
    check_source_args(parser, args)
    if (args.once or args.json) and args.duration < args.interval:
        # A summary samples for the time asked: two samples --duration apart (no closer
        # than the shortest interval), not a whole default interval.
        args.interval = max(args.duration, MIN_INTERVAL_S)
    if args.window < 2 * args.interval:
        parser.error(
            f"--window {args.window:g} s must cover at least two samples of --interval "
            f"{args.interval:g} s"
        )

    # Start-up: importing the configuration and the source, reading a file, opening
    # the source (cli/gc_tuning.py).
    with collections_paused():
        from gputop_hints.hints.config_search import find_config
        from gputop_hints.typed_yaml import ConfigError

        # A file to read is read (and checked) now, before anything is drawn; without one
        # the defaults are loaded once the first frame is up (run_tui), their ~0.1 s of
        # imports no longer before it.
        thresholds: Thresholds | None = None
        try:
            path, _how = find_config(args.config)
            if path is not None:
                from gputop_hints.hints.config import load_file

                thresholds = load_file(path)
            notify = notify_settings(args, path)
        except (ConfigError, ValueError) as exc:  # ValueError: BadNotifySetting
            return usage_error(exc)

        from gputop_hints.sources import SourceUnavailable

        try:
            source = open_source(args)
        except SourceUnavailable as exc:
            return usage_error(exc)
        except ValueError as exc:  # unknown demo scenario and the like
            return usage_error(exc)

    once = args.once or args.json
    if not once:
        reason = terminal_unusable()
        if reason is not None:
            print(
                f"gputop-hints: {reason}; printing a one-off summary instead "
                "(use --once to ask for it, or run in a real terminal for the monitor).",
                file=sys.stderr,
            )
            once = True

    try:
        if once:
            return _run_once(source, args, thresholds)
        return run_tui(source, args, thresholds, notify=notify)
    finally:
        source.close()


def _defaults() -> Thresholds:
    with collections_paused():  # the rules' modules and classes (cli/gc_tuning.py)
        from gputop_hints.hints.thresholds import Thresholds

        return Thresholds.defaults()


def _run_once(source: Source, args: argparse.Namespace, thresholds: Thresholds | None) -> int:
    """Sample for ``--duration``, print the summary (text or JSON), exit 0.

    ``thresholds`` None: the defaults, loaded -- with the rules and the summary's
    code -- while a live source waits between its samples, not before the first."""
    from gputop_hints.sampling.once import collect, preroll

    loaded: list[Thresholds] = []

    def load() -> None:
        with collections_paused():  # the rules' modules and classes (cli/gc_tuning.py)
            import gputop_hints.outputs.summary  # noqa: F401  (imported while waiting)

            loaded.append(thresholds if thresholds is not None else _defaults())

    if source.simulated:  # no waiting to fill: its warm-up is run past first (preroll)
        load()
    context = preroll(source, args.interval, loaded[0].general.window_s) if loaded else []
    snapshots = collect(source, args.duration, args.interval, meanwhile=None if loaded else load)
    from gputop_hints.outputs.summary import Summary

    summary = Summary.of(snapshots, loaded[0], context, args.cost_per_gpu_hour)
    # The warned processes' own stacks (py-spy), only where their pids are this
    # machine's: never a demo's, a replay's or a Prometheus node's.
    if source.kind == "live" and not getattr(args, "no_stacks", False):
        from gputop_hints.sampling.once_stacks import read_warned

        stacks = read_warned(summary.findings, summary.latest)
        if stacks:
            summary = Summary.of(
                snapshots, loaded[0], context, args.cost_per_gpu_hour, stacks=stacks
            )
    sys.stdout.write(summary.to_json_text() if args.json else summary.to_text())
    sys.stdout.flush()
    return EXIT_OK


@contextlib.contextmanager
def _asyncio_without_tls() -> Iterator[None]:
    """Import Textual with asyncio's TLS support left out.

    asyncio imports ``ssl`` when it can (for TLS connections, which the monitor
    never opens), and loading OpenSSL costs ~4.5 MB of resident memory, a tenth
    of the monitor's. Hiding ``ssl`` while asyncio is first imported makes it
    take the path it takes on a Python built without ssl; the module is visible
    again afterwards, so a later ``import ssl`` works. Where asyncio or ssl is
    already loaded (tests, an embedding program) nothing changes.
    """
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        yield
        return
    sys.modules["ssl"] = None  # type: ignore[assignment]  # import ssl -> ImportError
    try:
        yield
    finally:
        if "ssl" in sys.modules and sys.modules.get("ssl") is None:
            del sys.modules["ssl"]


EXIT_SIGNAL_BASE = 128
"""A shell's status for a program ended by signal N is 128 + N; the monitor exits with
it when stopped by SIGTERM or SIGHUP (the app does the same once it runs)."""


class _Signalled(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _StopOnSignals:
    """SIGTERM and SIGHUP while the first frame is up and Textual loads: stop there,
    so that the frame's alternate screen is left (``FirstFrame.abandon``) rather than
    the process killed with the terminal still in it."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._raise)

    @staticmethod
    def _raise(signum: int, _frame: object) -> None:
        raise _Signalled(signum)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()


FIRST_FRAME_WAIT_S = 0.25
"""How long the monitor waits for its first tick before importing Textual (which then
overlaps whatever NVML call is still slow): the plain first frame shows at once."""


def run_tui(
    source: Source,
    args: argparse.Namespace,
    thresholds: Thresholds | None,
    interval_s: float | None = None,
    notify: NotifySettings | None = None,
) -> int:
    """Run the full-screen monitor on ``source`` until the user quits; its exit code.
    ``thresholds`` None: the built-in defaults (loaded after the first frame).
    ``notify``: alerts (``--notify``), None or without a channel: none."""
    interval = args.interval if interval_s is None else interval_s
    # Live and demo: sampling starts before the thresholds and Textual are imported;
    # the first tick is drawn as a plain frame (tui/first_frame.py) while they load,
    # and a tick still in a slow NVML call overlaps the imports (NVML calls leave
    # the GIL). Replay has its own reader thread, started by the app.
    sampler = None
    first = None
    stopping = None
    if source.kind != "replay":
        from gputop_hints.tui import first_frame

        # Process rows on screen before Textual is even imported (tui/first_frame.py).
        first = first_frame.FirstFrame.for_terminal()
        first_frame.install(first)
        stopping = _StopOnSignals() if first is not None else None
    try:
        if source.kind != "replay":
            from gputop_hints.sampling.sampler import Sampler

            sampler = Sampler(source, interval, None, on_held=first.draw if first else None)
            sampler.start()
            if first is not None:
                first.wait(FIRST_FRAME_WAIT_S)
        if thresholds is None:
            thresholds = _defaults()
        with _asyncio_without_tls():
            from gputop_hints.tui import glyphs
            from gputop_hints.tui.app import GputopApp

        # Decided once: block characters only where the locale says UTF-8.
        glyphs.configure(ascii=not glyphs.terminal_is_utf8())
        color = not (args.no_color or os.environ.get("NO_COLOR"))
        app = GputopApp(
            source,
            interval_s=interval,
            window_s=args.window,
            theme=args.theme,
            color=color,
            thresholds=thresholds,
            sampler=sampler,
            readonly=getattr(args, "readonly", False),  # replay has no --readonly: it never signals
            user=getattr(args, "user", None),
            stacks=not getattr(args, "no_stacks", False),
            notify=notify,
            cost_per_gpu_hour=getattr(args, "cost_per_gpu_hour", None),
        )
        app.exit_on_signals = True
        if stopping is not None:
            stopping.restore()  # the app installs its own once mounted
        tune_for_long_run()
        app.run()
    except _Signalled as exc:
        return EXIT_SIGNAL_BASE + exc.signum
    finally:
        if stopping is not None:
            stopping.restore()
        if first is not None:
            first.abandon()  # Textual never started: leave the first frame's screen
        if sampler is not None:
            sampler.stop()  # the app stopped it already, unless it never started
    return app.return_code or EXIT_OK
