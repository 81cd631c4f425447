"""The demo source: a seeded, deterministic simulator of training jobs on GPUs.

It produces the same :class:`~gputop_hints.model.Snapshot` objects as the live
source, so every view and rule can be shown and tested without a GPU, and it
labels each snapshot with the ground truth it simulates, so the hints can be
evaluated against it. See :mod:`.scenarios` for the scenarios and the label
format (``<condition>[/<subtype>]@<subject>``), :mod:`.loop` for the training-loop
model every number follows from, and :mod:`.timeline` for how the model is
integrated exactly over any tick interval.

Layout: ``timeline`` (piecewise-constant lanes, exact averages) <- ``loop``
(a training loop -> a timeline) <- ``scenarios`` (jobs on a node, labels) <-
``source`` (:class:`DemoSource`: reads the timelines as NVML and psutil would).
"""

from __future__ import annotations

from gputop_hints.sources.demo.scenarios import (
    DEFAULT_SCENARIO,
    ScenarioInfo,
    UnknownScenario,
)
from gputop_hints.sources.demo.source import DemoSource, list_scenarios

__all__ = [
    "DEFAULT_SCENARIO",
    "DemoSource",
    "ScenarioInfo",
    "UnknownScenario",
    "list_scenarios",
]
