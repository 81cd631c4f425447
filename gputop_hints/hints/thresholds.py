"""The numbers the rules compare against, as a typed, documented object.

Each field carries its unit, its allowed range and a one-line doc in its
metadata; the default *values* live in ``defaults.yaml`` beside this file (the
commented file users copy), and :func:`Thresholds.defaults` loads them. A test
checks that the YAML and these classes name exactly the same keys. Parsing
itself is generic (``typed_yaml``); finding the user's file is ``config``'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gputop_hints.typed_yaml import field_type, parse_dataclass

__all__ = [
    "DEFAULTS_PATH",
    "ORDERED_PAIRS",
    "Thresholds",
    "field_type",
    "parse_overrides",
    "schema_keys",
]

DEFAULTS_PATH = Path(__file__).with_name("defaults.yaml")


def _t(low: float, high: float, unit: str, doc: str) -> dict[str, Any]:
    """A threshold field's metadata: its range, unit and doc (the value comes from YAML)."""
    return {"min": low, "max": high, "unit": unit, "doc": doc}


@dataclass(frozen=True)
class Hysteresis:
    raise_after_s: float = field(
        metadata=_t(0, 600, "s", "how long a condition must hold before it is shown")
    )
    clear_after_s: float = field(
        metadata=_t(0, 3600, "s", "how long it must stop holding before it is cleared")
    )


@dataclass(frozen=True)
class General:
    window_s: float = field(metadata=_t(2, 600, "s", "how much recent history the rules look at"))
    slow_window_s: float = field(
        metadata=_t(2, 3600, "s", "the longer view for slow cycles (10-30 s fetch, compute)")
    )
    min_vram_gib: float = field(
        metadata=_t(0, 1024, "GiB", "a process holding less VRAM is not diagnosed")
    )
    worker_busy_percent: float = field(
        metadata=_t(0, 100, "%", "a worker above this much of a core is busy")
    )
    main_pegged_percent: float = field(
        metadata=_t(0, 100, "%", "a main process above this much of a core is pegged")
    )
    cores_busy_percent: float = field(
        metadata=_t(0, 100, "%", "allowed cores busier than this on average are saturated")
    )


@dataclass(frozen=True)
class OverlapExplained:
    sum_above_percent: float = field(
        metadata=_t(0, 200, "%", "explain when SM % + memory % exceeds this")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class InputStarved:
    sm_mean_below_percent: float = field(
        metadata=_t(0, 100, "%", "mean SM below this can be starvation")
    )
    gap_sm_below_percent: float = field(
        metadata=_t(0, 100, "%", "an SM sample below this is an idle gap")
    )
    min_gap_s: float = field(
        metadata=_t(0, 60, "s", "idle stretches shorter than this are not gaps")
    )
    min_gap_fraction: float = field(metadata=_t(0, 1, "", "share of the window spent in idle gaps"))
    min_gaps: int = field(
        metadata=_t(1, 1000, "", "at least this many separate gaps (a sawtooth, not one pause)")
    )
    busy_sm_above_percent: float = field(
        metadata=_t(0, 100, "%", "a burst must reach this SM % (else it is idle)")
    )
    iowait_above_percent: float = field(
        metadata=_t(0, 100, "%", "iowait above this points at storage")
    )
    d_state_fraction: float = field(
        metadata=_t(0, 1, "", "share of workers in D state that points at storage")
    )
    max_suggested_workers: int = field(
        metadata=_t(1, 256, "", "cap on the num_workers the advice suggests")
    )
    critical_sm_below_percent: float = field(
        metadata=_t(0, 100, "%", "critical when mean SM is below this (jobstats flags <= 15 %)")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class SmallBatch:
    sm_min_percent: float = field(metadata=_t(0, 100, "%", "steady SM at or above this ..."))
    sm_max_percent: float = field(metadata=_t(0, 100, "%", "... and below this is 'moderate'"))
    max_gap_fraction: float = field(
        metadata=_t(0, 1, "", "more idle gaps than this is starvation, not small batch")
    )
    vram_share_below: float = field(
        metadata=_t(0, 1, "", "a process using less than this share of VRAM is small")
    )
    headroom_target: float = field(
        metadata=_t(0.1, 1, "", "share of VRAM the batch-size advice aims to fill")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class PcieThrash:
    link_share_above: float = field(
        metadata=_t(0, 2, "", "a reading of rx+tx above this share of the link is busy")
    )
    floor_gb_per_s: float = field(
        metadata=_t(0, 1000, "GB/s", "busy reading when link capacity is unknown")
    )
    min_busy_fraction: float = field(metadata=_t(0, 1, "", "share of readings that must be busy"))
    sm_below_percent: float = field(metadata=_t(0, 100, "%", "only while SM is below this"))
    hysteresis: Hysteresis


@dataclass(frozen=True)
class MemoryBound:
    memory_above_percent: float = field(
        metadata=_t(0, 100, "%", "memory-access % at or above this")
    )
    within_sm_points: float = field(
        metadata=_t(0, 100, "points", "... and no more than this below SM %")
    )
    sm_below_percent: float = field(
        metadata=_t(0, 100, "%", "only while SM is below this (else both counters just saturate)")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class IdleHoldingVram:
    sm_below_percent: float = field(metadata=_t(0, 100, "%", "device SM below this is idle"))
    min_vram_gib: float = field(metadata=_t(0, 1024, "GiB", "only processes holding at least this"))
    idle_for_s: float = field(metadata=_t(1, 86400, "s", "idle for at least this long"))
    critical_after_s: float = field(
        metadata=_t(1, 604800, "s", "escalate to critical after this long")
    )
    host_busy_cpu_percent: float = field(
        metadata=_t(0, 10000, "%", "a main process at or above this is working, not idle")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class VramNearLimit:
    used_fraction_above: float = field(metadata=_t(0, 1, "", "used / total at or above this"))
    critical_fraction_above: float = field(metadata=_t(0, 1, "", "critical at or above this"))
    hysteresis: Hysteresis


@dataclass(frozen=True)
class ComputeBound:
    sm_above_percent: float = field(metadata=_t(0, 100, "%", "mean SM at or above this"))
    min_sm_percent: float = field(metadata=_t(0, 100, "%", "and no sample below this (steady)"))
    hysteresis: Hysteresis


@dataclass(frozen=True)
class Throttled:
    min_fraction: float = field(metadata=_t(0, 1, "", "share of ticks with a power/thermal reason"))
    busy_sm_above_percent: float = field(
        metadata=_t(0, 100, "%", "only while the GPU is busier than this")
    )
    full_clock_share: float = field(
        metadata=_t(0, 1, "", "clocks at or above this share of their maximum have not dropped")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class Straggler:
    below_peers_points: float = field(
        metadata=_t(0, 100, "points", "SM this many points below the peers' median")
    )
    peers_sm_above_percent: float = field(
        metadata=_t(0, 100, "%", "only when the peers are busier than this")
    )
    all_busy_sm_percent: float = field(
        metadata=_t(0, 100, "%", "every rank at least this busy: compare power instead")
    )
    power_above_peers_points: float = field(
        metadata=_t(0, 100, "points", "power % of limit this far above the peers' median")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class LowUtilization:
    window_s: float = field(metadata=_t(2, 3600, "s", "the mean SM is taken over this long"))
    sm_mean_below_percent: float = field(
        metadata=_t(0, 100, "%", "mean SM below this while the GPU is in use")
    )
    in_use_vram_gib: float = field(
        metadata=_t(0, 1024, "GiB", "without process data, VRAM used above this means in use")
    )
    without_process_data_below_percent: float = field(
        metadata=_t(0, 100, "%", "threshold when no process/host data can explain low SM")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class CoresContended:
    foreign_share_above_percent: float = field(
        metadata=_t(0, 100, "%", "share of the job's cores used by processes outside the job")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class CollectiveHang:
    spin_sm_above_percent: float = field(
        metadata=_t(0, 100, "%", "every tick of the window at least this busy ...")
    )
    power_share_below: float = field(
        metadata=_t(0, 1, "", "... at a mean power below this share of the limit: spinning")
    )
    stopped_sm_below_percent: float = field(
        metadata=_t(0, 100, "%", "a rank whose GPU is below this is not in the collective")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class ServingIdle:
    idle_below_percent: float = field(
        metadata=_t(0, 100, "%", "a tick with the server's own SM below this is idle")
    )
    min_idle_share: float = field(metadata=_t(0, 1, "", "say so when idle at least this share"))
    hysteresis: Hysteresis


@dataclass(frozen=True)
class VramPreallocated:
    min_share: float = field(metadata=_t(0, 1, "", "a process holding at least this share ..."))
    reached_within_s: float = field(
        metadata=_t(0, 3600, "s", "... reached within this long of its start ...")
    )
    steady_for_s: float = field(metadata=_t(0, 3600, "s", "... and flat for at least this long"))
    min_jump_share: float = field(
        metadata=_t(0, 1, "", "taken in one step: a rise of at least this share within 5 s")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class WarmUp:
    max_age_s: float = field(metadata=_t(0, 3600, "s", "a process younger than this ..."))
    sm_since_start_below_percent: float = field(
        metadata=_t(0, 100, "%", "... whose GPU ran less than this since it started")
    )
    active_ticks_below_share: float = field(
        metadata=_t(0, 1, "", "... and ran any kernel in less than this share of its ticks")
    )
    hysteresis: Hysteresis


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

    @staticmethod
    def defaults() -> Thresholds:
        return _load_defaults()


ORDERED_PAIRS = (
    ("small_batch", "sm_min_percent", "sm_max_percent"),
    ("vram_near_limit", "used_fraction_above", "critical_fraction_above"),
    ("idle_holding_vram", "idle_for_s", "critical_after_s"),
)
"""(section, low key, high key): values that only make sense with low <= high."""


def parse_overrides(text: str, path: str, base: Thresholds | None) -> Thresholds:
    """Parse YAML ``text`` and apply it over ``base`` (None: every key is required)."""
    result = parse_dataclass(Thresholds, text, path, base, ORDERED_PAIRS)
    assert isinstance(result, Thresholds)
    return result


@cache
def _load_defaults() -> Thresholds:
    return parse_overrides(DEFAULTS_PATH.read_text(encoding="utf-8"), str(DEFAULTS_PATH), base=None)


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
