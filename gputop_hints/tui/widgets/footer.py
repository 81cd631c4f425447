"""The key footer of every screen, without the memory it leaks on each screen switch.

Textual's :class:`~textual.widgets.Footer` rebuilds its keys whenever the
bindings change -- every time a screen is shown or hidden -- and ties each new
key to its ``compact`` setting with a watcher. The watchers of removed keys are
only dropped when ``compact`` itself changes, which in this app it never does,
so each ``?``/Esc kept about twenty dead widgets alive, for hours of running.
"""

from __future__ import annotations

from textual.widgets import Footer

from gputop_hints.tui.widgets.steady_render import SteadyRender

_WATCHERS = "__watchers"
"""Where Textual keeps the watchers of a widget's reactive attributes."""


class KeysFooter(SteadyRender, Footer):
    """Textual's footer, dropping the watchers of the keys each rebuild removes."""

    async def recompose(self) -> None:
        await super().recompose()
        watchers: dict[str, list[tuple[object, object]]] = getattr(self, _WATCHERS, {})
        for watcher_list in watchers.values():
            watcher_list[:] = [
                (node, callback)
                for node, callback in watcher_list
                if getattr(node, "is_attached", True)
            ]
