"""The building blocks of every thresholds section: field metadata, hysteresis, general.

A thresholds section is a frozen dataclass whose fields each carry their range,
unit and one-line doc (:func:`threshold`); the *values* come from
``defaults.yaml``. Each rule's own section lives in its rule module
(``rules/pcie_thrash.py`` holds ``PcieThrash``) and ends with a
:class:`Hysteresis` block; :class:`General` holds what many rules and the engine
read. ``thresholds`` gathers them all into :class:`~gputop_hints.hints.thresholds.Thresholds`.

This module imports nothing of the rules, so every rule module can import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["General", "Hysteresis", "threshold"]


def threshold(low: float, high: float, unit: str, doc: str) -> dict[str, Any]:
    """A threshold field's metadata: its range, unit and doc (the value comes from YAML)."""
    return {"min": low, "max": high, "unit": unit, "doc": doc}


@dataclass(frozen=True)
class Hysteresis:
    """When a finding is shown and cleared: every rule's section has this block."""

    raise_after_s: float = field(
        metadata=threshold(0, 600, "s", "how long a condition must hold before it is shown")
    )
    clear_after_s: float = field(
        metadata=threshold(0, 3600, "s", "how long it must stop holding before it is cleared")
    )


@dataclass(frozen=True)
class General:
    """The ``general:`` section: the window, and what many rules and the engine read."""

    window_s: float = field(
        metadata=threshold(2, 600, "s", "how much recent history the rules look at")
    )
    slow_window_s: float = field(
        metadata=threshold(2, 3600, "s", "the longer view for slow cycles (10-30 s fetch, compute)")
    )
    min_vram_gib: float = field(
        metadata=threshold(0, 1024, "GiB", "a process holding less VRAM is not diagnosed")
    )
    worker_busy_percent: float = field(
        metadata=threshold(0, 100, "%", "a worker above this much of a core is busy")
    )
    main_pegged_percent: float = field(
        metadata=threshold(0, 100, "%", "a main process above this much of a core is pegged")
    )
    cores_busy_percent: float = field(
        metadata=threshold(0, 100, "%", "allowed cores busier than this on average are saturated")
    )
