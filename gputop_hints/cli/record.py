"""``gputop-hints record -o FILE``: a headless flight recorder.

The loop itself (pacing, signals, the summary line) is
:func:`gputop_hints.sampling.record.record`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from gputop_hints.cli.args import (
    EXIT_OK,
    INTERVAL_HELP,
    add_source_args,
    check_demo_only_args,
    interval,
    positive,
    usage_error,
)
from gputop_hints.cli.inputs import open_source, print_scenarios


def build_record_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints record",
        description="Record snapshots to a JSON Lines file (gzip when FILE ends in .gz), one "
        "flushed line per tick, until --duration, Ctrl-C, SIGTERM or a hang-up (SIGHUP). "
        "Replay it with 'gputop-hints replay FILE', summarise it with "
        "'gputop-hints report FILE'.",
    )
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write")
    parser.add_argument("--interval", type=interval, default=1.0, metavar="S", help=INTERVAL_HELP)
    parser.add_argument(
        "--duration", type=positive, metavar="S", help="stop after S seconds (default: never)"
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
    add_source_args(parser)
    return parser


def record_main(argv: Sequence[str]) -> int:
    """``gputop-hints record -o FILE``: record until ``--duration`` or a signal."""
    parser = build_record_parser()
    args = parser.parse_args(argv)
    if args.list_scenarios:
        print_scenarios()
        return EXIT_OK
    check_demo_only_args(parser, args)
    from gputop_hints.sampling.record import record
    from gputop_hints.sources import SourceUnavailable

    try:
        source = open_source(args)
    except (SourceUnavailable, ValueError) as exc:
        return usage_error(exc)
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
