"""The rules: pure functions of a window of history and the thresholds, one module each.

Each rule looks at the window and returns the findings whose condition holds
*now*; the engine (``engine.py``) decides when a finding has held long enough
to show and when it has stopped long enough to clear. No I/O, no clocks, no
Textual: the same window always gives the same findings.

Every finding lists the metrics it used as :class:`~gputop_hints.hints.findings.Evidence`,
with the threshold each one crossed, so that a person can check the conclusion
against the numbers on screen. Per-process findings use the process's own NVML
numbers where the driver gives them, and the whole GPU's otherwise -- and say which.

Each rule module ends with a :class:`RuleSpec`; everything else that names the
rules -- the list the engine runs, the metrics a report needs, which rules
explain low utilization, the docs anchors, the help's catalogue -- is built
here from those specs. Adding a rule: see docs/hints.md, "Adding a rule".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_hints.hints.rules import (
    collective_hang,
    compute_bound,
    cores_contended,
    cpu_offload,
    ghost_memory,
    host_device_sync,
    idle_holding_vram,
    input_starved,
    low_utilization,
    memory_bound,
    overlap_explained,
    pcie_thrash,
    serving_idle,
    simulation_bound,
    small_batch,
    straggler,
    tensor_cores_idle,
    throttled,
    uneven_nodes,
    unused_gpu,
    utilization_overstated,
    vram_near_limit,
    vram_preallocated,
    warm_up,
)
from gputop_hints.hints.rules.spec import Rule, RuleSpec

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

__all__ = [
    "ALL_RULES",
    "ANCHORS",
    "LEVEL_RULES",
    "LOW_UTILIZATION",
    "LOW_UTILIZATION_EXPLAINED_BY",
    "RULES_BY_ID",
    "RULE_NEEDS",
    "Rule",
    "RuleSpec",
    "hysteresis_for",
]

ALL_RULES: tuple[RuleSpec, ...] = (
    overlap_explained.SPEC,
    input_starved.SPEC,
    small_batch.SPEC,
    pcie_thrash.SPEC,
    memory_bound.SPEC,
    idle_holding_vram.SPEC,
    vram_near_limit.SPEC,
    compute_bound.SPEC,
    throttled.SPEC,
    straggler.SPEC,
    low_utilization.SPEC,
    cores_contended.SPEC,
    collective_hang.SPEC,
    serving_idle.SPEC,
    vram_preallocated.SPEC,
    warm_up.SPEC,
    utilization_overstated.SPEC,
    cpu_offload.SPEC,
    simulation_bound.SPEC,
    tensor_cores_idle.SPEC,
    uneven_nodes.SPEC,
    unused_gpu.SPEC,
    host_device_sync.SPEC,
    ghost_memory.SPEC,
)
"""Every rule, in the order the docs, the help and the engine list them."""

RULES_BY_ID: dict[str, RuleSpec] = {spec.id: spec for spec in ALL_RULES}

RULE_NEEDS: dict[str, tuple[str, ...]] = {spec.id: spec.needs for spec in ALL_RULES} | {
    f"{spec.id} (cause)": spec.cause_needs for spec in ALL_RULES if spec.cause_needs
}
"""The metrics each rule reads; a rule whose metric a file lacks is "not evaluated".
"<id> (cause)": what its subtype reads besides, where the rule runs without it."""

LOW_UTILIZATION = low_utilization.SPEC.id
"""The vague rule the engine drops where a rule in LOW_UTILIZATION_EXPLAINED_BY holds."""

LOW_UTILIZATION_EXPLAINED_BY: frozenset[str] = frozenset(
    spec.id for spec in ALL_RULES if spec.explains_low_utilization
)
"""Rules whose finding on a GPU (or a process on it) already says why it is underused."""

ANCHORS: dict[str, str] = {spec.id: spec.anchor for spec in ALL_RULES}
"""Rule id -> its section in docs/hints.md."""


def hysteresis_for(rule: str, t: Thresholds) -> tuple[float, float]:
    """(raise_after_s, clear_after_s) of the rule with id ``rule``."""
    return RULES_BY_ID[rule].hysteresis(t)


LEVEL_RULES: frozenset[str] = frozenset(spec.id for spec in ALL_RULES if spec.judges_level)
"""Rules that judge a GPU's level or duty cycle over a window (``RuleSpec.judges_level``)."""
