"""One sentence per rule: what it means. Shown by ``?`` in the monitor and in docs/hints.md.

Built from the rules' specs (``hints/rules/``): the catalogue is what a person
reads about a rule, without the check function that decides it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop_hints.hints.rules import ALL_RULES


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """A rule as the help and the finding views describe it."""

    rule: str
    title: str
    sentence: str
    subject: str
    """"process" or "gpu": what the finding is attached to."""
    anchor: str
    """Its section of docs/hints.md."""
    needs_profiling: bool = False
    """It runs only where the GPU gives GPM/DCGM profiling percentages."""


CATALOGUE: tuple[RuleInfo, ...] = tuple(
    RuleInfo(
        spec.id, spec.title, spec.sentence, spec.subject, spec.anchor, spec.needs_profiling
    )
    for spec in ALL_RULES
)
