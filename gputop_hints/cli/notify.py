"""``--notify`` and ``--notify-cmd``: the options the monitor and ``record`` share, and
the settings they make together with the config file's ``notify:`` section
(``gputop_hints.alerts``; docs/alerts.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gputop_hints.alerts import NotifySettings


def add_notify_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("alerts (docs/alerts.md)")
    group.add_argument(
        "--notify",
        nargs="?",
        const="",
        metavar="CHANNELS",
        help="tell when a warning or worse appears and when it clears: bell (the terminal "
        "bell), osc (a desktop notification through the terminal: OSC 9 and 777; in tmux "
        "set -g allow-passthrough on), cmd (--notify-cmd), comma-separated; alone: the "
        "config's notify.channels, else bell,osc",
    )
    group.add_argument(
        "--notify-cmd",
        metavar="CMD",
        help="run CMD (split as a shell would, run without one) for each alert with the event "
        'as one JSON object on standard input, e.g. "curl -sS -d @- https://ntfy.sh/TOPIC"',
    )


def notify_settings(args: argparse.Namespace, config_path: Path | None) -> NotifySettings | None:
    """The config file's ``notify:`` section with the command line over it; None when
    neither a config file nor an option asks (no alerts).

    Raises ConfigError (the file) or BadNotifySetting (the options)."""
    if config_path is None and args.notify is None and args.notify_cmd is None:
        # Nothing asks for alerts: the alerts package (its channels, and the config
        # reader with the thresholds and rules behind it) is not imported before the
        # first frame or a --once summary.
        return None
    from gputop_hints.alerts import combine
    from gputop_hints.alerts.config import load_notify

    return combine(load_notify(config_path), args.notify, args.notify_cmd)
