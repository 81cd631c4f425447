"""A field case: a scenario, its expected verdict, and where its mechanism is documented."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from field.hardware import GpuModel
from field.simulate import GpuSpec, HostSpec, ProcessSpec, Scenario, simulate
from field.timeline import IDLE, TimelineBuilder, VramPoint
from field.verdicts import Verdict
from gputop_hints.model import Snapshot


@dataclass(frozen=True, slots=True)
class Case:
    """One generated recording with the verdict a correct monitor would give."""

    name: str
    """``family/situation/variant``, unique."""
    family: str
    scenario: Scenario
    verdict: Verdict
    sources: tuple[str, ...]
    """Keys of the references in docs/field_corpus.md that the mechanism follows."""

    def snapshots(self) -> list[Snapshot]:
        return simulate(self.scenario)

    @property
    def live(self) -> bool:
        return not self.scenario.log


def process(
    pid: int,
    gpu: int,
    seed: str,
    until_s: float,
    build: Callable[[TimelineBuilder, random.Random], None],
    vram: int | Sequence[VramPoint],
    command: str,
    **fields: Any,
) -> ProcessSpec:
    """A process whose timeline ``build`` writes (seeded by ``seed``) up to ``until_s``.

    ``vram`` is a flat number of bytes or points to interpolate; ``fields`` go to
    :class:`ProcessSpec` (workers, user, name, core ...).
    """
    rng = random.Random(f"field-proc-{seed}-{pid}")
    b = TimelineBuilder()
    build(b, rng)
    if b.now < until_s:
        b.add(until_s - b.now, b.segments[-1][2] if b.segments else IDLE)
    points = [VramPoint(0.0, vram)] if isinstance(vram, int) else list(vram)
    return ProcessSpec(pid=pid, gpu=gpu, timeline=b.build(points), command=command, **fields)


def scenario(
    gpus: Sequence[GpuModel | GpuSpec],
    processes: Sequence[ProcessSpec],
    duration_s: float,
    interval_s: float,
    seed: int,
    detail: str,
    host: HostSpec | None = None,
) -> Scenario:
    """A live scenario; plain models become GPUs 0..n-1 with default limits and cooling."""
    specs = tuple(
        g if isinstance(g, GpuSpec) else GpuSpec(index=i, model=g) for i, g in enumerate(gpus)
    )
    return Scenario(
        gpus=specs,
        processes=tuple(processes),
        duration_s=duration_s,
        interval_s=interval_s,
        seed=seed,
        host=host or HostSpec(),
        detail=detail,
    )


def as_log(case: Case, interval_s: float, verdict: Verdict, power: bool = False) -> Case:
    """The same run as an ``nvidia-smi --query-gpu ... -l N`` log would have recorded it."""
    name = f"{case.name}/log-{interval_s:g}s"
    sc = replace(case.scenario, interval_s=interval_s, log=True, log_power=power, detail=name)
    return Case(name, case.family, sc, verdict, case.sources)
