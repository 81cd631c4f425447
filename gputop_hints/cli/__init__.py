"""Command line: ``gputop-hints`` and ``python -m gputop_hints``.

The interactive monitor is the default (:mod:`.monitor`); ``--once`` and
``--json`` print a summary and exit, for batch logs and scripts. Each
subcommand has its module: :mod:`.record`, :mod:`.replay`, :mod:`.report`,
:mod:`.config`; what they share is in :mod:`.args` and :mod:`.inputs`. Heavy
imports (Textual, nvitop, the importers) happen only inside the command that
needs them, so the non-interactive paths stay light.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from gputop_hints.cli.config import config_main
from gputop_hints.cli.monitor import monitor_main
from gputop_hints.cli.record import record_main
from gputop_hints.cli.replay import replay_main
from gputop_hints.cli.report import report_main

SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "config": config_main,
    "record": record_main,
    "replay": replay_main,
    "report": report_main,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``gputop-hints`` with ``argv`` (default: the process's); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        return SUBCOMMANDS[args[0]](args[1:])
    return monitor_main(args)
