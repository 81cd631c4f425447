"""The grid of GPU panels: one :class:`GpuPanel` per GPU, in index order."""

from __future__ import annotations

from collections.abc import Sequence

from textual.containers import Container

from gputop_hints.tui.widgets.gpu_panel import GpuPanel
from gputop_hints.tui.widgets.steady_render import SteadyRender


class GpuArea(SteadyRender, Container):
    """Holds the GPU panels; mounts and removes them only when the set of GPUs changes."""

    def __init__(self) -> None:
        super().__init__(id="gpus")
        self.panels: dict[int, GpuPanel] = {}
        """Each GPU's panel by GPU index, in the order they are shown."""

    def show_gpus(self, indices: Sequence[int]) -> None:
        """Have exactly one panel per GPU in ``indices``, in that order."""
        wanted = list(indices)
        if list(self.panels) == wanted:
            return
        for index in list(self.panels):
            if index not in wanted:
                self.panels.pop(index).remove()
        new = [GpuPanel(index) for index in wanted if index not in self.panels]
        if new:
            self.mount(*new)
        added = {panel.index: panel for panel in new}
        self.panels = {index: self.panels.get(index) or added[index] for index in wanted}
        if new and len(new) != len(wanted):
            self.sort_children(key=lambda w: w.index if isinstance(w, GpuPanel) else 0)
