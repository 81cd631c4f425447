"""A recording keeps each process's container, pod or job (issue 46 item 10): written
once in the process's static record, read back exactly, so ``replay`` and ``report``
name them as the live monitor did."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gputop_hints.model import Snapshot
from gputop_hints.recording import RecordingWriter
from gputop_hints.recording.reader import open_recording
from gputop_hints.sources.demo import DemoSource

CONTAINERS = ("pod ml-team/trainer-7f9c-0", "slurm job 1234", "docker 8a6e3c1f5b2d", None)


def _snapshots(ticks: int) -> list[Snapshot]:
    source = DemoSource("mixed", gpus=2, processes=4, seed=0)
    out = []
    for _ in range(ticks):
        snap = source.sample()
        procs = tuple(
            dataclasses.replace(p, container=CONTAINERS[i % len(CONTAINERS)])
            for i, p in enumerate(sorted(snap.processes, key=lambda p: p.pid))
        )
        out.append(dataclasses.replace(snap, processes=procs))
    source.close()
    return out


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_containers_read_back_exactly(tmp_path: Path, name: str) -> None:
    snapshots = _snapshots(4)
    path = tmp_path / name
    with RecordingWriter(path) as writer:
        for snap in snapshots:
            writer.write(snap)
    stream = open_recording(path)
    got = list(stream)
    assert stream.counters.bad_lines == 0
    assert got == snapshots
    assert {p.container for p in got[-1].processes} == set(CONTAINERS)
