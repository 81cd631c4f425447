"""``gputop-hints config``: show or check the thresholds the hints use."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from gputop_hints.cli.args import EXIT_OK, add_config_arg, usage_error


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
    add_config_arg(parser)
    return parser


def config_main(argv: Sequence[str]) -> int:
    """``gputop-hints config ...``."""
    from gputop_hints.hints import config

    args = build_config_parser().parse_args(argv)
    if args.print_defaults:
        sys.stdout.write(config.defaults_text())
        return EXIT_OK
    if args.show:
        given = args.config or "(not given)"
        print(f"--config PATH           {given}")
        print(f"$GPUTOP_HINTS_CONFIG    {os.environ.get('GPUTOP_HINTS_CONFIG') or '(unset)'}")
        print(f"user config             {config.user_config_path()}")
        try:
            path, how = config.find_config(args.config)
        except config.ConfigError as exc:
            return usage_error(exc)
        print(f"in effect               {path or 'built-in defaults'} ({how})")
        return EXIT_OK
    try:
        if not Path(args.check).is_file():
            raise config.ConfigError(args.check, None, None, "no such file (given with --check)")
        config.load_file(Path(args.check))
        from gputop_hints.alerts.config import load_notify

        load_notify(Path(args.check))  # the notify: section (docs/alerts.md)
    except config.ConfigError as exc:
        return usage_error(exc)
    print(f"{args.check}: OK")
    return EXIT_OK
