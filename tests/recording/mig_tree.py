"""Snapshots with what a recording once dropped: MIG instances (issue 16) and the
process tree (launchers). Shared by the recording and replay tests and by the script
that wrote ``tests/fixtures/recording/v1-before-mig-and-tree.jsonl``."""

from __future__ import annotations

import dataclasses

from gputop_hints.model import GpuProcess, MigInstance, Snapshot
from gputop_hints.sources.demo import DemoSource

GIB = 1024**3


def mig_instances(tick: int) -> tuple[MigInstance, ...]:
    """An H100 cut into a 3g.40gb and two 1g.10gb instances, the 3g busier each tick."""
    return (
        MigInstance(
            gpu_instance_id=1,
            compute_instance_id=0,
            profile="3g.40gb",
            vram_used_bytes=(12 + tick) * GIB,
            vram_total_bytes=40 * GIB,
            sm_active_percent=70.0 + tick,
            uuid="MIG-00000000-0001-4000-8000-000000000000",
        ),
        MigInstance(5, 0, profile="1g.10gb", vram_used_bytes=0, vram_total_bytes=10 * GIB),
        MigInstance(
            gpu_instance_id=6,
            compute_instance_id=0,
            profile=None,  # unknown: the panel names it by its ids
            vram_used_bytes=3 * GIB,
            vram_total_bytes=10 * GIB,
            sm_active_percent=10.5,
            uuid="MIG-00000000-0006-4000-8000-000000000000",
        ),
    )


def _on_mig(proc: GpuProcess, ordinal: int) -> GpuProcess:
    if proc.gpu_index != 0:
        return proc
    return dataclasses.replace(
        proc,
        sm_percent=None,
        memory_access_percent=None,
        mig_instance=(1, 0) if ordinal % 2 == 0 else (6, 0),
    )


def mig_and_tree_snapshots(n: int) -> list[Snapshot]:
    """The demo's straggler (four torchrun ranks on four GPUs) with GPU 0 in MIG mode,
    its processes placed on instances; the launcher's CPU changes tick by tick."""
    source = DemoSource("straggler", seed=0)
    out = []
    for tick in range(n):
        snap = source.sample()
        gpus = tuple(
            dataclasses.replace(
                g,
                sm_percent=None,
                memory_access_percent=None,
                mig_mode=True,
                mig_instances=mig_instances(tick),
            )
            if g.index == 0
            else g
            for g in snap.gpus
        )
        procs = tuple(_on_mig(p, i) for i, p in enumerate(snap.processes))
        launchers = tuple(
            dataclasses.replace(launcher, cpu_percent=0.5 + tick) for launcher in snap.launchers
        )
        out.append(
            dataclasses.replace(
                snap,
                gpus=gpus,
                processes=procs,
                launchers=launchers,
                sample_duration_s=None,
            )
        )
    return out
