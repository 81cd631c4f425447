"""How the main screen shares the terminal: rich or compact GPU and CPU panels.

A pure function of the terminal size and what there is to show, so the choice
can be tested without an app; the app applies it to the widgets' styles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gputop_hints.tui.widgets.cpu_panel import lines_needed
from gputop_hints.tui.widgets.gpu_panel import RICH_HEIGHT

RICH_PANEL_MIN_WIDTH = 76
"""Narrowest column a rich GPU panel gets before panels go side by side."""
COMPACT_LINE_WIDTH = 80
"""Width of one compact (one-line) GPU panel before compact panels go side by side."""
TABLE_MIN_HEIGHT = 8
"""Header plus seven rows: the table must stay useful when GPUs are many."""
CHROME_HEIGHT = 2
"""The header line above and the footer line below the panels."""


@dataclass(frozen=True, slots=True)
class MonitorLayout:
    """The shapes and heights the main screen's panels get."""

    gpu_compact: bool
    """One line per GPU instead of the rich panel with sparklines."""
    gpu_columns: int
    """GPU panels side by side."""
    gpu_height: int
    """Lines the GPU area gets (it scrolls when its panels need more)."""
    cpu_compact: bool
    """One block per core instead of a numbered bar per core."""
    cpu_height: int


def choose_layout(
    width: int,
    height: int,
    gpus: int,
    cores: int,
    banner_height: int,
    panel_height: int = RICH_HEIGHT,
) -> MonitorLayout:
    """The richest shapes that leave the process table its minimum height.

    ``panel_height``: lines of one rich GPU panel (more than ``RICH_HEIGHT`` with a
    line per MIG instance).

    Tried in order: rich GPU and CPU panels, rich GPU and compact CPU, compact
    GPU and rich CPU, both compact. When even the last does not fit, the GPU
    lines get what is left and scroll.
    """
    available = height - CHROME_HEIGHT - banner_height
    table_min = min(TABLE_MIN_HEIGHT, max(2, available // 3))

    rich_cols = max(1, min(gpus, width // RICH_PANEL_MIN_WIDTH)) if gpus else 1
    rich_rows = math.ceil(gpus / rich_cols)
    rich_height = rich_rows * panel_height + max(0, rich_rows - 1)
    compact_cols = max(1, min(gpus, width // COMPACT_LINE_WIDTH)) if gpus else 1
    compact_height = math.ceil(gpus / compact_cols)
    cpu_rich = lines_needed(cores, width, compact=False)
    cpu_compact = lines_needed(cores, width, compact=True)
    choices = [
        MonitorLayout(False, rich_cols, rich_height, False, cpu_rich),
        MonitorLayout(False, rich_cols, rich_height, True, cpu_compact),
        MonitorLayout(True, compact_cols, compact_height, False, cpu_rich),
        MonitorLayout(True, compact_cols, compact_height, True, cpu_compact),
    ]
    for choice in choices:
        if choice.gpu_height + choice.cpu_height + table_min <= available:
            return choice
    squeezed = choices[-1]
    # Too small for everything: GPU lines scroll in what is left, and the CPU
    # panel keeps two lines for the table.
    gpu_height = max(1, min(squeezed.gpu_height, available - squeezed.cpu_height - 2))
    cpu_height = max(1, min(squeezed.cpu_height, available - 2))
    return MonitorLayout(True, squeezed.gpu_columns, gpu_height, True, cpu_height)
