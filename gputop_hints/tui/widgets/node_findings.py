"""``--prometheus``: the findings each node's own exporter reports, in the place of the
process table (no processes are read from Prometheus). What it lists and how each
row reads is decided in :mod:`gputop_hints.outputs.node_findings`; this draws it."""

from __future__ import annotations

from rich.style import Style
from textual.strip import Strip

from gputop_hints.outputs.node_findings import COLUMNS, NodeFindingsView
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import Line
from gputop_hints.tui.widgets.base import StripWidget

_MAX_NODE = 24
"""The widest NODE column (a longer name is cut there)."""


class NodeFindingsTable(StripWidget):
    """A note on processes, the list's title, then a row per finding, worst first."""

    DEFAULT_CSS = """
    NodeFindingsTable {
        height: 1fr;
        min-height: 2;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="node-findings")
        self.note = ""
        self.view: NodeFindingsView | None = None

    def update_from(self, note: str, view: NodeFindingsView | None) -> None:
        """``view`` None: nothing was read this tick (``note`` says why)."""
        if note == self.note and view == self.view:
            return
        self.note, self.view = note, view
        self.invalidate()

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        p = palette
        lines = [Line().add_text(f" {self.note}", p.muted).strip(width, base)]
        view = self.view
        if view is None:
            return lines
        lines.append(Line().add_text(f" {view.title}", p.header_accent).strip(width, base))
        if not view.rows:
            lines.append(Line().add_text(f" {view.empty}", p.muted).strip(width, base))
            return lines
        cells = [COLUMNS, *(row.cells() for row in view.rows)]
        widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS) - 1)]
        widths[0] = min(widths[0], _MAX_NODE)

        def line(values: tuple[str, ...], style: Style, severity: Style) -> Line:
            out = Line().add(" ")
            for i, (value, w) in enumerate(zip(values, widths, strict=False)):
                out.add_text(value[:w].ljust(w) + "  ", severity if i == 4 else style)
            return out.add_text(values[-1], style)

        lines.append(line(COLUMNS, p.label, p.label).strip(width, base))
        for row in view.rows[: max(0, height - len(lines))]:
            severity = getattr(p, row.severity, p.text) if row.severity in _LEVELS else p.text
            lines.append(line(row.cells(), p.text, severity).strip(width, base))
        return lines


_LEVELS = frozenset({"critical", "warning", "info"})
