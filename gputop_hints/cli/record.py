"""``gputop-hints record -o FILE``: a headless flight recorder.

The loop itself (pacing, signals, the summary line) is
:func:`gputop_hints.sampling.record.record`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gputop_hints.cli.args import (
    EXIT_OK,
    EXIT_USAGE,
    INTERVAL_HELP,
    add_config_arg,
    add_source_args,
    at_least,
    check_source_args,
    interval,
    positive,
    usage_error,
)
from gputop_hints.cli.inputs import open_source, print_scenarios
from gputop_hints.cli.notify import add_notify_args, notify_settings
from gputop_hints.cli.output_file import (
    OutputRefused,
    check_output,
    create_missing_directories,
    lock_output,
)
from gputop_hints.sampling.sampler import DEFAULT_INTERVAL_S
from gputop_hints.typed_yaml import ConfigError

if TYPE_CHECKING:
    from gputop_hints.alerts import Notifier
    from gputop_hints.model import Snapshot
    from gputop_hints.sampling.record import RecordStacks


def build_record_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints record",
        description="Record snapshots to a JSON Lines file (gzip when FILE ends in .gz), one "
        "flushed line per tick, until --duration, Ctrl-C, SIGTERM or a hang-up (SIGHUP). "
        "Replay it with 'gputop-hints replay FILE', summarise it with "
        "'gputop-hints report FILE'.",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="where to write; an existing FILE is replaced only if it is empty or a recording",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace FILE even if it is an earlier recording or not a recording at all "
        "(and, with --max-bytes, FILE.1 ... even if they are not recordings)",
    )
    parser.add_argument(
        "--interval", type=interval, default=DEFAULT_INTERVAL_S, metavar="S", help=INTERVAL_HELP
    )
    parser.add_argument(
        "--duration", type=positive, metavar="S", help="stop after S seconds (default: never)"
    )
    parser.add_argument(
        "--max-bytes",
        type=at_least(1),
        metavar="N",
        help="rotate when FILE reaches N bytes: FILE -> FILE.1 -> ... (each part reads alone)",
    )
    parser.add_argument(
        "--keep",
        type=at_least(0),
        default=5,
        metavar="K",
        help="rotated parts to keep (default 5; 0 keeps none)",
    )
    parser.add_argument(
        "--no-stacks",
        action="store_true",
        help="never sample a process's stacks with py-spy (by default, with --notify on a "
        "live source: once when a warning appears on it, written to FILE as a stack line "
        "that 'report' quotes)",
    )
    add_source_args(parser)
    add_config_arg(parser)
    add_notify_args(parser)
    return parser


def record_main(argv: Sequence[str]) -> int:
    """``gputop-hints record -o FILE``: record until ``--duration`` or a signal."""
    parser = build_record_parser()
    args = parser.parse_args(argv)
    if args.list_scenarios:
        print_scenarios()
        return EXIT_OK
    check_source_args(parser, args)
    from gputop_hints.hints.config_search import find_config
    from gputop_hints.sampling.record import EXIT_WRITE_FAILED

    try:
        config_path, _how = find_config(args.config)
        args.notify_settings = notify_settings(args, config_path)
        args.config_path = config_path
    except (ConfigError, ValueError) as exc:  # ValueError: BadNotifySetting
        return usage_error(exc)

    output = Path(args.output)
    try:
        created = create_missing_directories(output)
    except OSError as exc:
        print(
            f"gputop-hints record: cannot create the directory for {output}: {exc}",
            file=sys.stderr,
        )
        return EXIT_WRITE_FAILED
    if created is not None:
        print(f"gputop-hints record: created directory {created}", file=sys.stderr)
    existed = output.exists()
    try:
        # Locked before it is looked at: a second recorder must not even truncate it.
        lock = lock_output(output)
    except (OutputRefused, OSError) as exc:
        return usage_error(exc)
    try:
        code = _record_locked(args, output)
        if code == EXIT_USAGE and not existed:
            output.unlink(missing_ok=True)  # refused: leave no empty file behind
        return code
    finally:
        if lock is not None:
            os.close(lock)


def _record_locked(args: argparse.Namespace, output: Path) -> int:
    from gputop_hints.sampling.record import record
    from gputop_hints.sources import SourceUnavailable

    try:
        check_output(output, force=args.force, rotation_keep=args.keep if args.max_bytes else 0)
    except OutputRefused as exc:
        return usage_error(exc)
    try:
        source = open_source(args)
    except (SourceUnavailable, ValueError) as exc:
        return usage_error(exc)
    try:
        on_tick, notifier, stacks = _alerts(args, source.kind == "live")
    except ConfigError as exc:
        source.close()
        return usage_error(exc)
    try:
        return record(
            source,
            args.output,
            interval_s=args.interval,
            duration_s=args.duration,
            max_bytes=args.max_bytes,
            keep=args.keep,
            on_tick=on_tick,
            stacks=None if stacks is None else stacks.drain,
        )
    finally:
        if stacks is not None:
            stacks.close()
        if notifier is not None:
            notifier.close()
        source.close()


def _alerts(
    args: argparse.Namespace, live: bool
) -> tuple[Callable[[Snapshot], None] | None, Notifier | None, RecordStacks | None]:
    """``--notify`` while recording: the hints run on every tick recorded, and their
    alerts go out -- the bell and OSC to this terminal only when standard output is
    one, the command always. (None, None, None) when alerts are off.

    On a ``live`` source, unless ``--no-stacks``, a process the hints warn about is also
    sampled with py-spy in the background (the third value, sampling.record.RecordStacks,
    whose ``drain`` hands the readings to the loop, which writes them; they go to the
    hints too, so the alerts that follow name the frame). Never on a demo or a replay: their pids
    are not this machine's. Without ``--notify`` the hints do not run, so nothing is
    sampled (docs/recording.md says why)."""
    settings = args.notify_settings
    if settings is None or not settings.enabled:
        return None, None, None
    from gputop_hints.alerts import Notifier
    from gputop_hints.hints.config import load_file
    from gputop_hints.hints.diagnoser import Diagnoser

    thresholds = load_file(args.config_path) if args.config_path is not None else None
    diagnoser = Diagnoser(thresholds, interval_s=args.interval)
    terminal = None
    if sys.stdout.isatty():
        # Straight to the file descriptor: sys.stdout shows control characters
        # visibly (cli/__init__.py), and these are meant for the terminal.
        fd = sys.stdout.fileno()

        def terminal(data: str) -> None:
            with contextlib.suppress(OSError):  # the terminal gone: the recording goes on
                os.write(fd, data.encode("utf-8"))

    elif settings.channels & {"bell", "osc"}:
        print(
            "gputop-hints record: --notify: standard output is not a terminal, so the bell "
            "and OSC notifications go nowhere"
            + ("; the command still runs" if "cmd" in settings.channels else ""),
            file=sys.stderr,
        )

    def problem(message: str) -> None:
        print(f"gputop-hints record: {message}", file=sys.stderr)

    notifier = Notifier(settings, terminal, problem)
    sampler: RecordStacks | None = None
    if live and not args.no_stacks:
        from gputop_hints.sampling.record import RecordStacks

        sampler = RecordStacks(on_reading=diagnoser.engine.set_stacks)

    def on_tick(snapshot: Snapshot) -> None:
        findings = diagnoser.feed(snapshot)
        notifier.tick(findings, snapshot)
        if sampler is not None:
            sampler.consider(findings, snapshot)

    return on_tick, notifier, sampler
