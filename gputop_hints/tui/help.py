"""The ``?`` screen: what each metric means, from the packaged metrics guide."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Markdown

_MISSING = """\
# What each metric means

The metrics guide (`docs/metrics.md`) is not installed with this copy of
gputop-hints. It is in the project's repository under `docs/`.
"""


def load_metrics_doc() -> str:
    """The metrics guide as Markdown.

    Installed wheels carry it as ``gputop_hints/_data/metrics.md``; a source
    checkout or editable install reads the repository's ``docs/metrics.md``.
    """
    packaged = resources.files("gputop_hints") / "_data" / "metrics.md"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    repo_copy = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
    if repo_copy.is_file():
        return repo_copy.read_text(encoding="utf-8")
    return _MISSING


class HelpScreen(Screen[None]):
    """The metrics guide, scrollable; Esc (or ? again) goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("question_mark", "app.pop_screen", "Back", key_display="?", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-scroll"):
            yield Markdown(load_metrics_doc(), id="help-doc")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()
