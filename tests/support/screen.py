"""What a person would read on the app's screen, as plain text lines."""

from __future__ import annotations

from typing import Any

from textual.app import App


def screen_text(app: App[Any]) -> str:
    """The current screen as text, one line per terminal row.

    Read from the compositor that paints the terminal, so widgets hidden behind
    a dialog or scrolled away do not appear: this is what the user sees.
    """
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())
