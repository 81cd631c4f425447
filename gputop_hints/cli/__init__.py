"""Command line: ``gputop-hints`` and ``python -m gputop_hints``.

The interactive monitor is the default (:mod:`.monitor`); ``--once`` and
``--json`` print a summary and exit, for batch logs and scripts. Each
subcommand has its module: :mod:`.record`, :mod:`.replay`, :mod:`.report`,
:mod:`.config`, :mod:`.explain`, :mod:`.run`; what they share is in :mod:`.args` and
:mod:`.inputs`. Heavy
imports (Textual, nvitop, the importers) happen only inside the command that
needs them, so the non-interactive paths stay light.

:func:`main` ends every command quietly when the user stops it (Ctrl-C: exit
130, as a shell reports a program killed by SIGINT) or when the reader of its
output goes away (``gputop-hints --json | head -c 10``: exit 141, as for
SIGPIPE), instead of printing a traceback. Whatever it writes to standard
output and error shows control characters visibly (:class:`~gputop_hints.text.VisibleStream`):
error messages quote file names and file contents that anybody may have written.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from gputop_hints.cli.gc_tuning import collections_paused
from gputop_hints.text import VisibleStream

SUBCOMMANDS = ("config", "explain", "export", "record", "replay", "report", "run")
"""Each is ``gputop_hints.cli.<name>.<name>_main``, imported only when it runs: the
monitor's start-up does not load the recorder, the report or the explainer."""


def subcommand(name: str) -> Callable[[Sequence[str]], int]:
    """The ``main`` of subcommand ``name`` (one of :data:`SUBCOMMANDS`), imported now."""
    # Spelled out, not importlib: the import checks (lint-imports) see every edge.
    if name == "config":
        from gputop_hints.cli.config import config_main

        return config_main
    if name == "explain":
        from gputop_hints.cli.explain import explain_main

        return explain_main
    if name == "export":
        from gputop_hints.cli.export import export_main

        return export_main
    if name == "record":
        from gputop_hints.cli.record import record_main

        return record_main
    if name == "replay":
        from gputop_hints.cli.replay import replay_main

        return replay_main
    if name == "report":
        from gputop_hints.cli.report import report_main

        return report_main
    if name == "run":
        from gputop_hints.cli.run import run_main

        return run_main
    raise ValueError(f"no subcommand {name!r}")


EXIT_INTERRUPTED = 130
"""Ctrl-C (SIGINT): 128 + the signal's number, what a shell shows for an interrupted program."""
EXIT_READER_GONE = 141
"""The reader of standard output went away: 128 + SIGPIPE, what ``yes | head`` reports."""


EXIT_NO_OUTPUT = 2
"""Standard output closed (``>&-``) for a command whose work is what it prints."""

WITHOUT_OUTPUT = ("export", "record")
"""Subcommands whose work is not their standard output: they run with it closed."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``gputop-hints`` with ``argv`` (default: the process's); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    streams = (sys.stdout, sys.stderr)
    stdout_closed = sys.stdout is None
    if stdout_closed:
        _stand_in_for_closed_stdout()
    # Output and error messages quote process names, file names, CSV headers and
    # arguments: shown, never obeyed. (JSON escapes control characters itself.)
    if sys.stdout is not None and not isinstance(sys.stdout, VisibleStream):
        sys.stdout = VisibleStream(sys.stdout)
    if sys.stderr is not None and not isinstance(sys.stderr, VisibleStream):
        sys.stderr = VisibleStream(sys.stderr)
    args = _subcommand_first(args)
    if stdout_closed and not (args and args[0] in WITHOUT_OUTPUT):
        print(
            "gputop-hints: standard output is closed (>&-): nothing to print to; "
            "send it to a file or a pipe ('record -o FILE' records without it)",
            file=sys.stderr,
        )
        _restore_streams(*streams)
        return EXIT_NO_OUTPUT
    try:
        if args and args[0] in SUBCOMMANDS:
            with collections_paused():  # start-up imports (cli/gc_tuning.py)
                command_main = subcommand(args[0])
            return command_main(args[1:])
        with collections_paused():
            from gputop_hints.cli.monitor import monitor_main

        return monitor_main(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _discard_standard_output()
        return EXIT_READER_GONE
    finally:
        _restore_streams(*streams)


SHARED_OPTIONS = ("--config",)
"""Options with a value that the monitor and the subcommands (but explain) take alike,
so they may come before the subcommand: ``gputop-hints --config x.yaml report f.csv``."""


def _subcommand_first(args: list[str]) -> list[str]:
    """``[--config X] SUBCOMMAND ...`` -> ``SUBCOMMAND ... --config X``; else unchanged."""
    moved: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word in SHARED_OPTIONS and i + 1 < len(args):
            moved += args[i : i + 2]
            i += 2
        elif any(word.startswith(f"{o}=") for o in SHARED_OPTIONS):
            moved.append(word)
            i += 1
        else:
            break
    if moved and i < len(args) and args[i] in SUBCOMMANDS:
        return [args[i], *args[i + 1 :], *moved]
    return args


def _restore_streams(stdout: TextIO | None, stderr: TextIO | None) -> None:
    """Put back the streams :func:`main` wrapped (tests call it in-process)."""
    for name, original in (("stdout", stdout), ("stderr", stderr)):
        current = getattr(sys, name)
        if current is not original and isinstance(current, VisibleStream):
            with contextlib.suppress(OSError, ValueError):
                current.flush()
            setattr(sys, name, original)


def _stand_in_for_closed_stdout() -> None:
    """Standard output closed (``gputop-hints record -o X >&-``): descriptor 1 is
    pointed at /dev/null and Python given a ``sys.stdout`` on it.

    Left closed, the next file opened (the recording) would get descriptor 1 and
    receive whatever is written to standard output; and nvitop calls
    ``sys.stdout.isatty()`` when imported, a traceback on ``None``."""
    try:
        os.fstat(1)
    except OSError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        if devnull != 1:
            os.dup2(devnull, 1)
            os.close(devnull)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 -- lives as long as the process


def _discard_standard_output() -> None:
    """Point standard output at /dev/null: nobody reads it any more.

    Python flushes ``sys.stdout`` once more at exit; into the broken pipe that
    would print "Exception ignored ... BrokenPipeError" after all.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor behind sys.stdout: nothing to flush
        pass
