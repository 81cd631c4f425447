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
from gputop_hints.sampling.sampler import MAX_INTERVAL_S, MIN_INTERVAL_S, collect

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds
    from gputop_hints.model import JobInfo, Snapshot
    from gputop_hints.sources import Source
    from gputop_hints.sources.files.stream import SnapshotStream

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
  gputop-hints record -o run.jsonl.gz  headless flight recorder (docs/recording.md)
  gputop-hints replay run.jsonl.gz     the monitor on recorded data
  gputop-hints report gpu.csv          post-mortem of a recording or an nvidia-smi/W&B log
  gputop-hints config --print-defaults the hint thresholds, as YAML to copy and edit
  srun --jobid=<id> --overlap --pty gputop-hints    attach to a SLURM job

keys in the monitor: q quit, ? help, p pause, s sort, t theme,
arrows/Enter open a process, Esc back.
"""


def _usage_error(exc: BaseException) -> int:
    """Say what was wrong with the input (file, line, key where known) and exit 2."""
    print(f"gputop-hints: {exc}", file=sys.stderr)
    return EXIT_USAGE


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


def _add_source_args(parser: argparse.ArgumentParser) -> None:
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
        "--job",
        metavar="ID",
        help="attach to SLURM job ID from outside it (e.g. a login shell on the node); "
        "inside a job (srun --jobid=ID --overlap) it is found by itself",
    )
    src.add_argument(
        "--all",
        action="store_true",
        help="inside a job, show every GPU process on the node, the job's marked",
    )
    src.add_argument(
        "--require-gpu",
        action="store_true",
        help="exit with status 2 instead of starting CPU-only when NVML cannot be loaded",
    )


def _add_config_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="thresholds YAML (default: $GPUTOP_HINTS_CONFIG, then "
        "$XDG_CONFIG_HOME/gputop-hints/config.yaml, then built-in; see "
        "'gputop-hints config --print-defaults')",
    )


def _add_look_args(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--theme",
        default="dark",
        metavar="NAME",
        help="colour theme: dark (default), light, high-contrast, monochrome, or a user theme",
    )
    group.add_argument(
        "--no-color",
        action="store_true",
        help="no colours (also when the NO_COLOR environment variable is set)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gputop-hints {__version__}")

    _add_source_args(parser)

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
    _add_config_arg(parser)
    _add_look_args(out)
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
            job=_demo_job(args),
        )
    from gputop_hints.sources.live.source import LiveSource

    return LiveSource(
        args.interval, require_gpu=args.require_gpu, job=args.job, all_processes=args.all
    )


def _demo_job(args: argparse.Namespace) -> JobInfo | None:
    """The SLURM job the demo runs in, if any: the header shows it, the GPUs stay simulated."""
    from gputop_hints.sources.live.slurm import detect_job

    context = detect_job(job_id=args.job)
    if context is None:
        return None
    return context.info(filtered=False)


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
            return _usage_error(exc)
        print(f"in effect               {path or 'built-in defaults'} ({how})")
        return EXIT_OK
    try:
        if not Path(args.check).is_file():
            raise config.ConfigError(args.check, None, None, "no such file (given with --check)")
        config.load_file(Path(args.check))
    except config.ConfigError as exc:
        return _usage_error(exc)
    print(f"{args.check}: OK")
    return EXIT_OK


def _add_input_args(parser: argparse.ArgumentParser) -> None:
    """How to read FILE: recordings are recognised by content; logs may need hints."""
    parser.add_argument(
        "file",
        metavar="FILE",
        help="a 'gputop-hints record' file (.jsonl or .jsonl.gz), an nvidia-smi --query-gpu "
        "CSV, nvidia-smi dmon output, a W&B wandb-events.jsonl, or a CSV with metric columns",
    )
    parser.add_argument(
        "--format",
        choices=("recording", "nvidia-smi-csv", "nvidia-smi-dmon", "wandb", "csv"),
        help="skip detection and read FILE as this format",
    )
    parser.add_argument(
        "--interval",
        type=_positive,
        metavar="S",
        help="seconds between samples, for logs without timestamps",
    )
    parser.add_argument(
        "--map",
        metavar="SPEC",
        help="which CSV column is which metric, e.g. "
        "'sm=gpu_util,vram_used=mem_used_mb,vram_total=mem_total_mb,time=ts' (docs/import.md)",
    )
    _add_config_arg(parser)


def _open_input(args: argparse.Namespace) -> SnapshotStream:
    from gputop_hints.sources.files import open_stream, parse_mapping

    mapping = parse_mapping(args.map) if args.map else None
    return open_stream(args.file, format=args.format, interval_s=args.interval, mapping=mapping)


def _input_errors() -> tuple[type[BaseException], ...]:
    from gputop_hints.hints.config import ConfigError
    from gputop_hints.sources.files.stream import UnrecognisedFormat

    return (UnrecognisedFormat, ConfigError, ValueError, OSError)


def record_main(argv: Sequence[str]) -> int:
    """``gputop-hints record -o FILE``: a headless flight recorder."""
    parser = argparse.ArgumentParser(
        prog="gputop-hints record",
        description="Record snapshots to a JSON Lines file (gzip when FILE ends in .gz), one "
        "flushed line per tick, until --duration or Ctrl-C/SIGTERM. Replay it with "
        "'gputop-hints replay FILE', summarise it with 'gputop-hints report FILE'.",
    )
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write")
    parser.add_argument(
        "--interval",
        type=_interval,
        default=1.0,
        metavar="S",
        help=f"seconds between samples ({MIN_INTERVAL_S:g}-{MAX_INTERVAL_S:g}, default 1)",
    )
    parser.add_argument(
        "--duration", type=_positive, metavar="S", help="stop after S seconds (default: never)"
    )
    parser.add_argument(
        "--max-bytes",
        type=int,
        metavar="N",
        help="rotate when FILE reaches N bytes: FILE -> FILE.1 -> ... (each part reads alone)",
    )
    parser.add_argument(
        "--keep", type=int, default=5, metavar="K", help="rotated parts to keep (default 5)"
    )
    _add_source_args(parser)
    args = parser.parse_args(argv)
    if args.list_scenarios:
        _print_scenarios()
        return EXIT_OK
    if args.demo is None and (args.gpus is not None or args.processes is not None):
        parser.error("--gpus and --processes only apply to --demo")
    from gputop_hints.sampling.record import record
    from gputop_hints.sources import SourceUnavailable

    try:
        source = _open_source(args)
    except (SourceUnavailable, ValueError) as exc:
        return _usage_error(exc)
    try:
        return record(
            source,
            args.output,
            interval_s=args.interval,
            duration_s=args.duration,
            max_bytes=args.max_bytes,
            keep=args.keep,
        )
    finally:
        source.close()


def report_main(argv: Sequence[str]) -> int:
    """``gputop-hints report FILE``: a post-mortem of a recording or a log."""
    parser = argparse.ArgumentParser(
        prog="gputop-hints report",
        description="Summarise a recording or a GPU log: per-GPU statistics, time spent in "
        "each hint with evidence and advice, and what the data cannot show.",
    )
    _add_input_args(parser)
    parser.add_argument("--json", action="store_true", help="one JSON document instead of text")
    parser.add_argument(
        "--fail-on",
        choices=("warning", "critical"),
        help="exit 1 if any finding of this severity or worse was active (SLURM epilog, CI)",
    )
    args = parser.parse_args(argv)
    from gputop_hints.hints.config import load
    from gputop_hints.outputs.report import build_report, report_json_text, report_text

    try:
        thresholds = load(args.config)
        stream = _open_input(args)
    except _input_errors() as exc:
        return _usage_error(exc)
    try:
        report = build_report(stream, thresholds)
    finally:
        stream.close()
    sys.stdout.write(report_json_text(report) if args.json else report_text(report))
    sys.stdout.flush()
    return report.exit_code(args.fail_on)


def replay_main(argv: Sequence[str]) -> int:
    """``gputop-hints replay FILE``: the monitor on recorded data."""
    parser = argparse.ArgumentParser(
        prog="gputop-hints replay",
        description="Play a recording (or a GPU log) back in the monitor, hints computed as if "
        "live. Keys: space pause, n step, + / - speed, g / G jump to start / end, / seek to a "
        "time.",
    )
    _add_input_args(parser)
    parser.add_argument(
        "--speed",
        type=float,
        default=1.0,
        metavar="X",
        help="playback speed, 1-64 (default 1: real time)",
    )
    parser.add_argument(
        "--window",
        type=_positive,
        default=DEFAULT_WINDOW_S,
        metavar="S",
        help=f"seconds of history in sparklines (default {DEFAULT_WINDOW_S:g})",
    )
    _add_look_args(parser.add_argument_group("look"))
    args = parser.parse_args(argv)
    if not 1 <= args.speed <= 64:
        parser.error(f"--speed {args.speed:g} is outside 1-64")
    from gputop_hints.hints.config import load
    from gputop_hints.sources.replay import ReplaySource

    try:
        thresholds = load(args.config)
        probe = _open_input(args)
        is_recording = probe.info.format == "recording"
        probe.close()
        source = ReplaySource(
            args.file if is_recording else (lambda: _open_input(args)), speed=args.speed
        )
    except _input_errors() as exc:
        return _usage_error(exc)
    reason = _terminal_unusable()
    if reason is not None:
        source.close()
        print(
            f"gputop-hints: {reason}; replay needs a terminal "
            f"(try 'gputop-hints report {args.file}').",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        return _run_tui(source, args, thresholds, interval_s=source.interval_s)
    finally:
        source.close()


SUBCOMMANDS = {
    "config": config_main,
    "record": record_main,
    "replay": replay_main,
    "report": report_main,
}


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
        return _usage_error(exc)

    from gputop_hints.sources import SourceUnavailable

    try:
        source = _open_source(args)
    except SourceUnavailable as exc:
        return _usage_error(exc)
    except ValueError as exc:  # unknown demo scenario and the like
        return _usage_error(exc)

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
    from gputop_hints.outputs.summary import Summary

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


def _run_tui(
    source: Source,
    args: argparse.Namespace,
    thresholds: Thresholds,
    interval_s: float | None = None,
) -> int:
    from gputop_hints.tui import glyphs
    from gputop_hints.tui.app import GputopApp

    # Decided once: block characters only where the locale says UTF-8.
    glyphs.configure(ascii=not glyphs.terminal_is_utf8())
    color = not (args.no_color or os.environ.get("NO_COLOR"))
    app = GputopApp(
        source,
        interval_s=args.interval if interval_s is None else interval_s,
        window_s=args.window,
        theme=args.theme,
        color=color,
        thresholds=thresholds,
    )
    app.exit_on_signals = True
    app.run()
    return app.return_code or EXIT_OK
