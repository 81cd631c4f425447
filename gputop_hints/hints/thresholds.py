"""Every threshold the rules use, as one typed, documented object.

Each rule's own section is a dataclass in its rule module (``PcieThrash`` in
``rules/pcie_thrash.py``), named by its ``RuleSpec.thresholds_class``; the
building blocks (field metadata, ``Hysteresis``, ``General``) are in
``thresholds_base``. Each field carries its unit, its allowed range and a
one-line doc in its metadata; the default *values* live in ``defaults.yaml``
beside this file (the commented file users copy), and :func:`Thresholds.defaults`
loads them. A test checks that the YAML and these classes name exactly the same
keys. Parsing itself is generic (``gputop_hints.typed_yaml``); finding the
user's file is ``config``'s job.

Why :class:`Thresholds` is written out rather than generated from ``ALL_RULES``:
rules, the engine, ``config`` and the CLI read ``t.pcie_thrash.link_share_above``,
and mypy can only check that against declared attributes. So the sections are
declared here, one per rule, and :func:`_check_sections` -- run when this module is
imported -- fails unless they are exactly ``general`` followed by each rule of
``ALL_RULES``, in that order (the order of the YAML file and of error messages),
each typed with that rule's ``thresholds_class``. A rule added without its section
here, or a section left behind by a removed rule, stops the program at start.

The imports run one way: this module imports the rules (for their classes and
``ALL_RULES``); a rule module names :class:`Thresholds` only in annotations,
imported under ``TYPE_CHECKING``, so nothing imports this module back at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gputop_hints.hints.rules import ALL_RULES
from gputop_hints.hints.rules.collective_hang import CollectiveHang
from gputop_hints.hints.rules.compute_bound import ComputeBound
from gputop_hints.hints.rules.cores_contended import CoresContended
from gputop_hints.hints.rules.cpu_offload import CpuOffload
from gputop_hints.hints.rules.idle_holding_vram import IdleHoldingVram
from gputop_hints.hints.rules.input_starved import InputStarved
from gputop_hints.hints.rules.low_utilization import LowUtilization
from gputop_hints.hints.rules.memory_bound import MemoryBound
from gputop_hints.hints.rules.overlap_explained import OverlapExplained
from gputop_hints.hints.rules.pcie_thrash import PcieThrash
from gputop_hints.hints.rules.serving_idle import ServingIdle
from gputop_hints.hints.rules.simulation_bound import SimulationBound
from gputop_hints.hints.rules.small_batch import SmallBatch
from gputop_hints.hints.rules.straggler import Straggler
from gputop_hints.hints.rules.tensor_cores_idle import TensorCoresIdle
from gputop_hints.hints.rules.throttled import Throttled
from gputop_hints.hints.rules.uneven_nodes import UnevenNodes
from gputop_hints.hints.rules.utilization_overstated import UtilizationOverstated
from gputop_hints.hints.rules.vram_near_limit import VramNearLimit
from gputop_hints.hints.rules.vram_preallocated import VramPreallocated
from gputop_hints.hints.rules.warm_up import WarmUp
from gputop_hints.hints.thresholds_base import General, Hysteresis
from gputop_hints.typed_yaml import field_type, parse_dataclass

__all__ = [
    "DEFAULTS_PATH",
    "ORDERED_PAIRS",
    "General",
    "Hysteresis",
    "Thresholds",
    "field_type",
    "parse_overrides",
    "schema_keys",
]

DEFAULTS_PATH = Path(__file__).with_name("defaults.yaml")


@dataclass(frozen=True)
class Thresholds:
    """Every threshold the rules use. Load with :meth:`defaults` or ``config.load``."""

    general: General
    overlap_explained: OverlapExplained
    input_starved: InputStarved
    small_batch: SmallBatch
    pcie_thrash: PcieThrash
    memory_bound: MemoryBound
    idle_holding_vram: IdleHoldingVram
    vram_near_limit: VramNearLimit
    compute_bound: ComputeBound
    throttled: Throttled
    straggler: Straggler
    low_utilization: LowUtilization
    cores_contended: CoresContended
    collective_hang: CollectiveHang
    serving_idle: ServingIdle
    vram_preallocated: VramPreallocated
    warm_up: WarmUp
    utilization_overstated: UtilizationOverstated
    cpu_offload: CpuOffload
    simulation_bound: SimulationBound
    tensor_cores_idle: TensorCoresIdle
    uneven_nodes: UnevenNodes

    @staticmethod
    def defaults() -> Thresholds:
        return _load_defaults()


def _check_sections() -> None:
    """Fail loudly unless :class:`Thresholds` declares exactly ``general`` and, in
    ``ALL_RULES`` order, each rule's section typed with its ``thresholds_class``."""
    declared = [(f.name, field_type(Thresholds, f.name)) for f in fields(Thresholds)]
    expected = [("general", General)] + [
        (spec.thresholds, spec.thresholds_class) for spec in ALL_RULES
    ]
    if declared != expected:
        raise TypeError(
            "Thresholds must declare general and then each rule's section in ALL_RULES "
            f"order: expected {[(n, c.__name__) for n, c in expected]}, "
            f"declared {[(n, getattr(c, '__name__', c)) for n, c in declared]}"
        )


_check_sections()


ORDERED_PAIRS = (
    ("small_batch", "sm_min_percent", "sm_max_percent"),
    ("vram_near_limit", "used_fraction_above", "critical_fraction_above"),
    ("idle_holding_vram", "idle_for_s", "critical_after_s"),
)
"""(section, low key, high key): values that only make sense with low <= high."""


def parse_overrides(
    text: str, path: str, base: Thresholds | None, *, packaged: bool = False
) -> Thresholds:
    """Parse YAML ``text`` and apply it over ``base`` (None: every key is required);
    ``packaged``: the shipped defaults (see :func:`~gputop_hints.typed_yaml.parse_dataclass`)."""
    result = parse_dataclass(Thresholds, text, path, base, ORDERED_PAIRS, packaged=packaged)
    assert isinstance(result, Thresholds)
    return result


@cache
def _load_defaults() -> Thresholds:
    text = DEFAULTS_PATH.read_text(encoding="utf-8")
    return parse_overrides(text, str(DEFAULTS_PATH), base=None, packaged=True)


def schema_keys(cls: Any = Thresholds, prefix: str = "") -> list[str]:
    """Every dotted key the configuration accepts, e.g. ``input_starved.min_gap_s``."""
    keys: list[str] = []
    for f in fields(cls):
        name = f"{prefix}{f.name}"
        sub = field_type(cls, f.name)
        if is_dataclass(sub):
            keys.extend(schema_keys(sub, name + "."))
        else:
            keys.append(name)
    return keys
