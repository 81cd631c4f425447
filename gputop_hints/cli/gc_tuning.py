"""The garbage collector for a monitor that runs for hours: fewer, cheaper collections.

Each tick allocates many short-lived container objects (Textual's messages, strips
and segments; the hints' windows and findings). With CPython's default first
threshold (700 allocations) that is several young collections a tick, and every
tenth of those scans the middle generation, every hundredth the whole heap: the
imported modules, Textual's DOM and the history -- tens of thousands of objects that
live as long as the program. ``bench/tui_cost.py`` measured ~0.57 s of collection
over its 190 ticks at 8 GPUs x 64 processes, ~3 ms a tick of ~12.

:func:`tune_for_long_run` moves what exists at start-up to the permanent generation
(``gc.freeze``: never scanned again, never freed -- it lives for the whole run
anyway) and raises the first threshold, so young collections run a few times a
minute instead of a few times a tick. Cyclic garbage is still collected, only in
larger batches (a few MB at most). Only the long-running commands call it; tests
that build many apps never do, so frozen objects cannot pile up there.

:func:`collections_paused` is for start-up: importing the program's modules creates
thousands of objects that live as long as it does (classes, functions, the methods
``dataclasses`` generates), and each 700 of them start a young collection that
scans them in vain: 10 of the 14 collections of a one-off summary on a fake node,
~2 ms of its ~70 ms of CPU (``gc.callbacks``), more where more is imported.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG_THRESHOLD = 10_000
"""Allocations (less deallocations) of tracked objects between young collections:
~14x CPython's default of 700. The older generations keep their factors (10, 10)."""


def tune_for_long_run() -> None:
    """Collect once, freeze the survivors and raise the young threshold (see module doc)."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


@contextlib.contextmanager
def collections_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (``gc.disable``), as before afterwards.

    For imports and other bounded start-up work only (see module doc): what they
    leave is long-lived, so a collection then finds nothing to free. A caller that
    has already turned collection off keeps it off.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
