"""``gputop-hints replay FILE``: the monitor on recorded data, hints as if live."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gputop_hints.cli.args import (
    EXIT_USAGE,
    add_cost_arg,
    add_input_args,
    add_look_args,
    positive,
    usage_error,
)
from gputop_hints.cli.inputs import input_errors, open_input, terminal_unusable
from gputop_hints.cli.monitor import run_tui
from gputop_hints.history import DEFAULT_WINDOW_S


def build_replay_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints replay",
        description="Play a recording (or a GPU log) back in the monitor, hints computed as if "
        "live. Keys: space pause, n step, + / - speed, g / G jump to start / end, / seek to a "
        "time.",
    )
    add_input_args(parser)
    parser.add_argument(
        "--speed",
        type=float,
        default=1.0,
        metavar="X",
        help="playback speed, 1-64 (default 1: real time)",
    )
    parser.add_argument(
        "--window",
        type=positive,
        default=DEFAULT_WINDOW_S,
        metavar="S",
        help=f"seconds of history in sparklines (default {DEFAULT_WINDOW_S:g})",
    )
    add_cost_arg(parser)
    add_look_args(parser.add_argument_group("look"))
    return parser


def replay_main(argv: Sequence[str]) -> int:
    """Replay FILE in the monitor; exit 2 when it cannot be read or there is no terminal."""
    parser = build_replay_parser()
    args = parser.parse_args(argv)
    if not 1 <= args.speed <= 64:
        parser.error(f"--speed {args.speed:g} is outside 1-64")
    from gputop_hints.hints.config import load
    from gputop_hints.sources.replay import ReplayEmpty, ReplaySource

    try:
        thresholds = load(args.config)
        probe = open_input(args)
        is_recording = probe.info.format == "recording"
        probe.close()
        source = ReplaySource(
            args.file[0] if is_recording else (lambda: open_input(args)), speed=args.speed
        )
    except ReplayEmpty:
        # As report says of it: nothing is wrong with an empty recording (a recorder
        # stopped before its first tick), there is only nothing to show.
        detail = f" ({probe.info.detail})" if probe.info.detail else ""
        print(f"{' '.join(args.file)}: no samples{detail}: nothing to replay.")
        return 0
    except input_errors() as exc:
        return usage_error(exc)
    reason = terminal_unusable()
    if reason is not None:
        source.close()
        print(
            f"gputop-hints: {reason}; replay needs a terminal "
            f"(try 'gputop-hints report {' '.join(args.file)}').",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        return run_tui(source, args, thresholds, interval_s=source.interval_s)
    finally:
        source.close()
