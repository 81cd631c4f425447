"""``gputop-hints report FILE``: a post-mortem of a recording or a log.

The report itself is :mod:`gputop_hints.outputs.report`; this module reads the
arguments, opens FILE and prints the text or JSON.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gputop_hints.cli.args import add_input_args, usage_error
from gputop_hints.cli.inputs import input_errors, open_input
from gputop_hints.cli.progress import ReadProgress


def build_report_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints report",
        description="Summarise a recording or a GPU log: per-GPU statistics, time spent in "
        "each hint with evidence and advice, and what the data cannot show.",
    )
    add_input_args(parser)
    parser.add_argument("--json", action="store_true", help="one JSON document instead of text")
    parser.add_argument(
        "--fail-on",
        choices=("warning", "critical"),
        help="exit 1 if any finding of this severity or worse was active (SLURM epilog, CI)",
    )
    return parser


def report_main(argv: Sequence[str]) -> int:
    """Print the report of FILE; exit 1 when ``--fail-on`` was reached, 2 on bad input."""
    args = build_report_parser().parse_args(argv)
    from gputop_hints.hints.config import load
    from gputop_hints.outputs.report import build_report, report_json_text, report_text

    try:
        thresholds = load(args.config)
        stream = open_input(args)
    except input_errors() as exc:
        return usage_error(exc)
    try:
        with ReadProgress(args.file, sys.stderr):
            report = build_report(stream, thresholds)
    finally:
        stream.close()
    sys.stdout.write(report_json_text(report) if args.json else report_text(report))
    sys.stdout.flush()
    return report.exit_code(args.fail_on)
