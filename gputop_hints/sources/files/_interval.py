"""The sampling interval of an imported log, and the note that says where it came from."""

from __future__ import annotations

DEFAULT_INTERVAL_S = 1.0


def choose_interval(
    found: float | None,
    forced: float | None,
    notes: list[str],
    timed: bool,
    how: str = "median spacing of timestamps",
) -> float:
    """``--interval`` when given, else the measured spacing, else 1 s -- said in ``notes``.

    ``timed`` tells "the file has timestamps but too few to measure" from "the
    file has none", which need different advice."""
    if forced is not None:
        if forced <= 0:
            raise ValueError(f"interval must be positive, not {forced}")
        notes.append(f"interval {forced:g} s (given)")
        return forced
    if found is not None and found > 0:
        notes.append(f"interval {found:g} s ({how})")
        return found
    if timed:
        notes.append(f"interval unknown (too few timestamps): assumed {DEFAULT_INTERVAL_S:g} s")
    else:
        notes.append(
            f"no timestamps: assumed one sample every {DEFAULT_INTERVAL_S:g} s "
            "(give --interval); times are relative, starting at 0"
        )
    return DEFAULT_INTERVAL_S
