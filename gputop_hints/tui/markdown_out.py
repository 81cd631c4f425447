"""A Markdown section drawn for a terminal (``gputop-hints explain`` on a tty).

Rich renders it -- headings, bold, tables, code -- at the terminal's width. Only the
TUI package imports Rich; the CLI asks this module, and only when its output is a
terminal: piped, ``explain`` prints the Markdown as it is (a pager, a log, a grep).
"""

from __future__ import annotations

from typing import TextIO


def print_markdown(text: str, out: TextIO, width: int) -> None:
    """Draw Markdown ``text`` (the project's own guide, never outside text) on the
    terminal ``out``, ``width`` columns wide."""
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console(file=out, width=width, force_terminal=True, highlight=False)
    console.print(Markdown(text))
