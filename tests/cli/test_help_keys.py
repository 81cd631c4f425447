"""``gputop-hints --help`` tells the keys the monitor really has (issue 44: it said
``t theme`` while ``t`` was the tree and ``c`` the theme). Both come from one table
(gputop_hints.tui.keys); here the help a user reads is checked against the bindings
the running app has."""

from __future__ import annotations

import re

from gputop_hints.tui.app import GputopApp
from tests.support.cli import run_cli


def _help() -> str:
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    return " ".join(result.stdout.split())  # argparse and the wrap break lines anywhere


def test_help_names_each_bound_key_with_what_it_does() -> None:
    text = _help()
    keys = text.split("keys in the monitor:", 1)[1]
    bound = {b.key: b.action for b in GputopApp.BINDINGS}  # type: ignore[union-attr]
    assert bound["t"] == "toggle_tree" and re.search(r"\bt tree\b", keys)
    assert bound["c"] == "cycle_theme" and re.search(r"\bc theme\b", keys)
    assert bound["s"] == "cycle_sort" and re.search(r"\bs sort\b", keys)
    assert bound["q"] == "quit" and re.search(r"\bq quit\b", keys)
    assert "t theme" not in keys
    # Replay's keys are listed apart, as replay only.
    assert "keys in replay, besides:" in keys and "g/G start/end" in keys


def test_usage_and_examples_list_every_subcommand() -> None:
    text = _help()
    for sub in ("record", "replay", "report", "export", "config", "explain"):
        assert sub in text.split("options:", 1)[0], sub
    assert "gputop-hints export" in text


def test_the_help_screen_lists_every_live_key_help_lists() -> None:
    """The ``?`` screen's key table is written for reading; every key ``--help`` names
    (live, not replay's own) is in it, so a new key cannot be left out of it (``w`` and
    ``h`` were)."""
    from gputop_hints.tui.keys import KEYS
    from gputop_hints.tui.screens.help import help_text

    text = help_text()
    for key in KEYS:
        if key.help is None or key.replay:
            continue
        shown = key.display or key.keys
        assert any(f"`{part}`" in text for part in shown.split("/")), (shown, key.help)
