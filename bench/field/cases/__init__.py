"""Every family of field cases, in the order of issue 10's failure classes."""

from __future__ import annotations

from field.case import Case
from field.cases import (
    attribution,
    coarse,
    frameworks,
    limits,
    overstated,
    pcie,
    phases,
    power,
    serving,
    shared,
    single,
    slow,
)


def all_cases() -> list[Case]:
    """Every case of every family; names are unique."""
    out: list[Case] = []
    for family in (
        shared,
        serving,
        phases,
        slow,
        limits,
        overstated,
        pcie,
        single,
        coarse,
        attribution,
        power,
        frameworks,
    ):
        out.extend(family.cases())
    names = [c.name for c in out]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"duplicate case names: {sorted(dupes)}")
    return out
