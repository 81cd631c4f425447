"""What a rule is: its check function and everything else that is said about it.

Each rule module ends with one :class:`RuleSpec`. The rule list the engine runs,
the catalogue the monitor's help shows, the metrics a report needs to evaluate
it, and the docs anchor all come from these specs, so a rule is named and
described in exactly one place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from gputop_hints.hints.findings import Finding, Subject
from gputop_hints.hints.thresholds_base import Hysteresis
from gputop_hints.hints.window import Window

if TYPE_CHECKING:  # thresholds imports every rule for its section: only for annotations here
    from gputop_hints.hints.thresholds import Thresholds

Rule = Callable[[Window, "Thresholds"], list[Finding]]
"""A rule's check: the findings whose condition holds now, pure and deterministic."""

Contradiction = Callable[[Window, "Thresholds", Subject], bool]
"""Whether the window now shows a visible finding of the rule on a subject to be false."""


class RuleThresholds(Protocol):
    """What every rule's thresholds dataclass has: a ``hysteresis`` block."""

    @property
    def hysteresis(self) -> Hysteresis: ...


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """One rule: how it is checked, configured, named, documented and scored."""

    id: str
    """The rule id findings carry, e.g. "input-starved"; also its docs/hints.md section."""
    check: Rule
    thresholds_class: type[RuleThresholds]
    """Its thresholds dataclass, defined in the rule's own module (e.g. ``InputStarved``
    in ``input_starved.py``): the keys, ranges and units of its section."""
    title: str
    """Short human name, e.g. "Input starved"."""
    sentence: str
    """What a finding means, in one sentence: the catalogue line of the help and the docs."""
    subject: Literal["process", "gpu"]
    """What its findings are attached to."""
    needs: tuple[str, ...]
    """The ``METRIC_*`` names (gputop_hints.model) it reads: a log lacking one of them
    cannot evaluate the rule, and a report says so."""
    contradicted: Contradiction | None = None
    """Evidence that a visible finding is now false, not merely no longer shown (a
    "healthy" GPU that spins without work): the engine clears it at once instead of
    after ``clear_after_s``, which is there against flicker, not to outlive the truth."""
    cause_needs: tuple[str, ...] = ()
    """Metrics only its subtype (the cause) reads: without them the rule still runs on
    ``needs`` and names no cause, and a report says the cause was not evaluated."""
    needs_profiling: bool = False
    """True when it runs only on GPM/DCGM profiling percentages (there is no
    ``METRIC_*`` for them): views then list it as checked only where the GPU gives them."""
    profiling_sharpens: bool = False
    """True when GPM/DCGM profiling (SM activity) decides its verdict where the GPU gives
    it; elsewhere it judges from utilization, power and the host side, and the engine
    adds a note to each finding that it is less certain (:data:`PROFILING_FALLBACK`)."""
    explains_low_utilization: bool = False
    """True when its finding on a GPU (or a process on it) already says why that GPU is
    underused, so the engine drops the vaguer low-utilization finding there."""
    judges_level: bool = False
    """True when it judges a GPU's level or duty cycle over a window: a window reaching
    from the end of a run into the idle after it reads a run that is over, so a report
    gives that time to the GPU's teardown, not to its GPU-level finding (hints.phases)."""

    @property
    def thresholds(self) -> str:
        """Its section in defaults.yaml (and field of :class:`Thresholds`), e.g.
        "input_starved": the id with underscores, as its module is named."""
        return self.id.replace("-", "_")

    @property
    def anchor(self) -> str:
        """Section of docs/hints.md explaining the rule (a test checks it exists)."""
        return self.id

    def hysteresis(self, t: Thresholds) -> tuple[float, float]:
        """(raise_after_s, clear_after_s): the ``hysteresis`` block of its thresholds section."""
        section = getattr(t, self.thresholds)
        assert isinstance(section, self.thresholds_class)
        h = section.hysteresis
        return h.raise_after_s, h.clear_after_s
