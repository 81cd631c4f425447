"""What a person would read on the app's screen, as plain text lines."""

from __future__ import annotations

from typing import Any

from textual.app import App


def screen_text(app: App[Any]) -> str:
    """The current screen as text, one line per terminal row.

    Read from the compositor that paints the terminal, so widgets hidden behind
    a dialog or scrolled away do not appear: this is what the user sees.

    This is the one place the tests read a private Textual attribute
    (``Screen._compositor``): Textual has no public API that gives the screen as
    text. ``App.export_screenshot`` renders the same compositor output, but only
    as SVG, with every run of text in its own positioned element and spaces
    escaped, so getting the lines back would mean parsing Rich's SVG layout --
    more fragile than this call. If Textual moves it, only this helper changes.
    """
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())
