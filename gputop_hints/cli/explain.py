"""``gputop-hints explain [RULE]``: what a hint means, from the hints guide.

Every finding ends with ``more: gputop-hints explain RULE``. The guide is
``docs/hints.md``; a pip install has no ``docs/`` folder, so the wheel carries
it as ``gputop_hints/_data/hints.md`` (pyproject.toml, ``force-include``) and
this command prints the rule's section from whichever copy is there. Without a
RULE it lists the rules; a RULE that is not one gets the nearest names.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shutil
import sys
import textwrap
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from gputop_hints.cli.args import EXIT_OK, EXIT_USAGE

GUIDE = "docs/hints.md"
LIST_WIDTH = 100
"""Columns of the rule list: readable in a terminal, a pager or a log."""

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_SLUG_DROPS = re.compile(r"[^\w\- ]")


def load_hints_guide() -> str | None:
    """The hints guide as Markdown, or None when this install lacks it.

    Installed wheels carry it as ``gputop_hints/_data/hints.md``; a source
    checkout or an editable install reads the repository's ``docs/hints.md``.
    """
    packaged = resources.files("gputop_hints") / "_data" / "hints.md"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    repo_copy = Path(__file__).resolve().parents[2] / "docs" / "hints.md"
    if repo_copy.is_file():
        return repo_copy.read_text(encoding="utf-8")
    return None


def heading_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: the ``#...`` in ``docs/hints.md#input-starved``."""
    return _SLUG_DROPS.sub("", heading.strip().lower()).replace(" ", "-")


def guide_section(guide: str, anchor: str) -> str | None:
    """The section of ``guide`` whose heading has ``anchor``, with its subsections.

    It runs to the next heading of the same or a higher level; a trailing
    horizontal rule (the guide's separator between parts) is left out.
    """
    lines = guide.splitlines()
    start: int | None = None
    level = 0
    for i, line in enumerate(lines):
        match = _HEADING.match(line)
        if match is None:
            continue
        if start is None:
            if heading_slug(match.group(2)) == anchor:
                start, level = i, len(match.group(1))
        elif len(match.group(1)) <= level:
            lines = lines[start:i]
            break
    else:
        if start is None:
            return None
        lines = lines[start:]
    while lines and lines[-1].strip() in ("", "---"):
        lines.pop()
    return "\n".join(lines) + "\n"


def build_explain_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints explain",
        description="Print what a hint means, when it fires, its evidence, thresholds, advice "
        f"and false positives: the rule's section of the hints guide ({GUIDE}). "
        "Without RULE, list the rules.",
    )
    parser.add_argument(
        "rule",
        nargs="?",
        metavar="RULE",
        help="a rule id as findings show it, e.g. input-starved (a /subtype is ignored)",
    )
    return parser


def explain_main(argv: Sequence[str]) -> int:
    """``gputop-hints explain [RULE]``: exit 0, or 2 for a RULE that is not a rule."""
    from gputop_hints.hints.catalogue import CATALOGUE

    args = build_explain_parser().parse_args(argv)
    if args.rule is None:
        print_rule_list()
        return EXIT_OK
    # "input-starved/num-workers-0" is how findings label a subtype: the rule is the part before.
    wanted = args.rule.strip().lower().split("/", 1)[0]
    info = next((r for r in CATALOGUE if r.rule == wanted), None)
    if info is None:
        return _unknown_rule(args.rule, [r.rule for r in CATALOGUE])
    guide = load_hints_guide()
    section = None if guide is None else guide_section(guide, info.anchor)
    if section is None:
        # A broken install: the one-sentence summary still answers the question.
        sys.stdout.write(
            f"## {info.rule}\n\n**{info.title}**\n\n{info.sentence}\n\n"
            f"(The full guide, {GUIDE}, is not part of this installation.)\n"
        )
    elif _terminal(sys.stdout):
        # Drawn for a person at a terminal; piped, the Markdown as it is.
        from gputop_hints.tui.markdown_out import print_markdown

        # The guide is this project's own text: its styling goes to the terminal as it is
        # (the CLI's VisibleStream would show Rich's escapes as text).
        terminal = getattr(sys.stdout, "inner", sys.stdout)
        print_markdown(section, terminal, shutil.get_terminal_size((100, 24)).columns)
        terminal.flush()
    else:
        sys.stdout.write(section)
    sys.stdout.flush()
    return EXIT_OK


def _terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False


def print_rule_list() -> None:
    """Every rule: its id, title and what it means in one sentence."""
    from gputop_hints.hints.catalogue import CATALOGUE

    width = max(len(r.rule) for r in CATALOGUE)
    indent = " " * (width + 4)
    print("Hints (gputop-hints explain RULE prints one in full):")
    for info in CATALOGUE:
        print(f"  {info.rule:<{width}}  {info.title} (per {info.subject})")
        print(
            textwrap.fill(
                info.sentence, LIST_WIDTH, initial_indent=indent, subsequent_indent=indent
            )
        )


def _unknown_rule(given: str, rules: list[str]) -> int:
    shown = given if len(given) <= 40 else given[:40] + "..."
    nearest = difflib.get_close_matches(given.strip().lower(), rules, n=3, cutoff=0.5)
    hint = (
        f"did you mean {' or '.join(nearest)}?"
        if nearest
        else "'gputop-hints explain' lists the rules"
    )
    print(f"gputop-hints explain: {shown!r} is not a rule; {hint}", file=sys.stderr)
    return EXIT_USAGE
