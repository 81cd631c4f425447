"""Command line: ``gputop-hints`` and ``python -m gputop_hints``.

The interactive monitor is the default. ``--once`` and ``--json`` print a
summary and exit, for batch logs and scripts. Textual is imported only when the
interactive monitor actually starts, so the non-interactive paths stay light.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gputop_hints import __version__
from gputop_hints.history import DEFAULT_WINDOW_S
from gputop_hints.sampler import MAX_INTERVAL_S, MIN_INTERVAL_S, collect

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds
    from gputop_hints.model import Snapshot
    from gputop_hints.sources import Source

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2

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
  srun --jobid=<id> --overlap --pty gputop-hints    attach to a SLURM job

keys in the monitor: q quit, ? help, p pause, s sort, t theme,
arrows/Enter open a process, Esc back.
"""


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"{value:g} s is outside the allowed range {MIN_INTERVAL_S:g}-{MAX_INTERVAL_S:g} s"
        )
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value:g}")
    return value


def _count(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}-{high}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gputop-hints {__version__}")

    src = parser.add_argument_group("what to watch")
    src.add_argument(
        "--demo",
        nargs="?",
        const="",
        metavar="SCENARIO",
        help="simulated training jobs instead of this machine's GPUs "
        "(default scenario: mixed; see --list-scenarios)",
    )
    src.add_argument(
        "--list-scenarios", action="store_true", help="list the demo scenarios and exit"
    )
    src.add_argument(
        "--gpus", type=_count(1, 8), metavar="N", help="demo: number of simulated GPUs (1-8)"
    )
    src.add_argument(
        "--processes",
        type=_count(1, 256),
        metavar="N",
        help="demo: number of simulated GPU processes",
    )
    src.add_argument("--seed", type=int, default=0, help="demo: random seed (default 0)")
    src.add_argument(
        "--require-gpu",
        action="store_true",
        help="exit with status 2 instead of starting CPU-only when NVML cannot be loaded",
    )

    timing = parser.add_argument_group("sampling")
    timing.add_argument(
        "--interval",
        type=_interval,
        default=1.0,
        metavar="S",
        help=f"seconds between samples ({MIN_INTERVAL_S:g}-{MAX_INTERVAL_S:g}, default 1)",
    )
    timing.add_argument(
        "--window",
        type=_positive,
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
        type=_positive,
        default=2.0,
        metavar="S",
        help="seconds to sample for --once/--json (default 2)",
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="thresholds YAML (default: $GPUTOP_HINTS_CONFIG, then "
        "$XDG_CONFIG_HOME/gputop-hints/config.yaml, then built-in; see "
        "'gputop-hints config --print-defaults')",
    )
    out.add_argument(
        "--theme",
        default="dark",
        metavar="NAME",
        help="colour theme: dark (default), light, high-contrast, monochrome, or a user theme",
    )
    out.add_argument(
        "--no-color",
        action="store_true",
        help="no colours (also when the NO_COLOR environment variable is set)",
    )
    return parser


def _open_source(args: argparse.Namespace) -> Source:
    if args.demo is not None:
        from gputop_hints.sources.demo import DEFAULT_SCENARIO, DemoSource

        return DemoSource(
            args.demo or DEFAULT_SCENARIO,
            gpus=args.gpus,
            processes=args.processes,
            seed=args.seed,
            interval_s=args.interval,
        )
    from gputop_hints.sources.live import LiveSource

    return LiveSource(args.interval, require_gpu=args.require_gpu)


def _print_scenarios() -> None:
    from gputop_hints.sources.demo import DEFAULT_SCENARIO, list_scenarios

    scenarios = list_scenarios()
    width = max(len(s.name) for s in scenarios)
    print("Demo scenarios (gputop-hints --demo NAME):")
    for s in scenarios:
        mark = " (default)" if s.name == DEFAULT_SCENARIO else ""
        print(f"  {s.name:<{width}}  {s.description}{mark}")


def _terminal_unusable() -> str | None:
    """Why a full-screen UI cannot run here, or None when it can."""
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        return "standard input/output is not a terminal"
    if os.environ.get("TERM", "") in ("dumb", "unknown"):
        return f"TERM={os.environ.get('TERM')} cannot draw a full-screen interface"
    return None


def build_config_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints config",
        description="Show or check the thresholds the hints use (YAML; docs/config.md).",
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--print-defaults",
        action="store_true",
        help="print the built-in thresholds as a commented YAML file to copy and edit",
    )
    what.add_argument(
        "--check", metavar="PATH", help="validate a config file; exit 2 with file:line if broken"
    )
    what.add_argument(
        "--show",
        action="store_true",
        help="print where the config is looked for and which file is in effect",
    )
    return parser


def config_main(argv: Sequence[str]) -> int:
    """``gputop-hints config ...``."""
    from gputop_hints.hints import config

    args = build_config_parser().parse_args(argv)
    if args.print_defaults:
        sys.stdout.write(config.defaults_text())
        return EXIT_OK
    if args.show:
        print("--config PATH           (given on the command line)")
        print(f"$GPUTOP_HINTS_CONFIG    {os.environ.get('GPUTOP_HINTS_CONFIG') or '(unset)'}")
        print(f"user config             {config.user_config_path()}")
        try:
            path, how = config.find_config(None)
        except config.ConfigError as exc:
            print(f"gputop-hints: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(f"in effect               {path or 'built-in defaults'} ({how})")
        return EXIT_OK
    try:
        if not Path(args.check).is_file():
            raise config.ConfigError(args.check, None, None, "no such file (given with --check)")
        config.load_file(Path(args.check))
    except config.ConfigError as exc:
        print(f"gputop-hints: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{args.check}: OK")
    return EXIT_OK


SUBCOMMANDS = {"config": config_main}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]](argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)

    if args.list_scenarios:
        _print_scenarios()
        return EXIT_OK
    if args.demo is None and (args.gpus is not None or args.processes is not None):
        parser.error("--gpus and --processes only apply to --demo")
    if args.window < 2 * args.interval:
        parser.error(
            f"--window {args.window:g} s must cover at least two samples of --interval "
            f"{args.interval:g} s"
        )

    from gputop_hints.hints.config import ConfigError, load

    try:
        thresholds = load(args.config)
    except ConfigError as exc:
        print(f"gputop-hints: {exc}", file=sys.stderr)
        return EXIT_USAGE

    from gputop_hints.sources import SourceUnavailable

    try:
        source = _open_source(args)
    except SourceUnavailable as exc:
        print(f"gputop-hints: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:  # unknown demo scenario and the like
        print(f"gputop-hints: {exc}", file=sys.stderr)
        return EXIT_USAGE

    once = args.once or args.json
    if not once:
        reason = _terminal_unusable()
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
        return _run_tui(source, args, thresholds)
    finally:
        source.close()


def _demo_preroll_s(source: Source) -> float:
    """Simulated seconds to skip so that a one-off demo summary shows the jobs past warm-up."""
    onsets = getattr(source, "label_onsets", None)
    start = getattr(source, "start_time", None)
    if not onsets or start is None:
        return 0.0
    return float(max(t - start for t in onsets.values())) + 20.0


def _run_once(source: Source, args: argparse.Namespace, thresholds: Thresholds) -> int:
    from gputop_hints.summary import Summary

    context: list[Snapshot] = []
    if source.simulated:
        keep = round(thresholds.general.window_s / args.interval) + 1
        for _ in range(round(_demo_preroll_s(source) / args.interval)):
            context = [*context[-keep:], source.sample()]
    snapshots = collect(source, args.duration, args.interval)
    summary = Summary.of(snapshots, thresholds, context)
    if args.json:
        json.dump(summary.to_json(), sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(summary.to_text())
    sys.stdout.flush()
    return EXIT_OK


def _run_tui(source: Source, args: argparse.Namespace, thresholds: Thresholds) -> int:
    from gputop_hints.tui.app import GputopApp

    color = not (args.no_color or os.environ.get("NO_COLOR"))
    app = GputopApp(
        source,
        interval_s=args.interval,
        window_s=args.window,
        theme=args.theme,
        color=color,
        thresholds=thresholds,
    )
    app.run()
    return app.return_code or EXIT_OK
