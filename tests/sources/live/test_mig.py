"""MIG (issue 16): a GPU in MIG mode reports its instances -- profile, memory, GPM SM
activity where the GPU has GPM -- and places each process on its instance; NVML gives
no device or per-process utilization there, which stays unknown, never 0."""

from __future__ import annotations

import os
import time

import pytest

from gputop_hints.model import snapshot_from_dict, snapshot_to_dict
from gputop_hints.sources.live.source import LiveSource
from tests.sources.live.helpers import mig_gpu
from tests.support.fake_nvml import GIB, FakeGpu, FakeNvml


@pytest.mark.parametrize("parent_lists", [True, False], ids=["privileged", "unprivileged"])
def test_instances_are_read_and_processes_placed_on_them(parent_lists: bool) -> None:
    with FakeNvml([mig_gpu(parent_lists=parent_lists), FakeGpu(1)]):
        source = LiveSource()
        try:
            snap = source.sample()
        finally:
            source.close()
    gpu, plain = snap.gpus
    assert gpu.mig_mode and not plain.mig_mode and plain.mig_instances == ()
    assert [(m.key, m.profile) for m in gpu.mig_instances] == [
        ((1, 0), "3g.40gb"),
        ((5, 0), "1g.10gb"),
        ((6, 0), "1g.10gb"),
    ]
    first = gpu.mig_instances[0]
    assert (first.vram_used_bytes, first.vram_total_bytes) == (12 * GIB, 40 * GIB)
    assert first.uuid is not None and first.uuid.startswith("MIG-")
    # No utilization under MIG: unknown, never 0 -- the device's, each instance's,
    # and each process's.
    assert gpu.sm_percent is None and gpu.memory_access_percent is None
    assert all(m.sm_percent is None for m in gpu.mig_instances)
    placed = {p.pid: p for p in snap.processes if p.gpu_index == 0}
    assert placed[os.getpid()].mig_instance == (1, 0)
    assert placed[os.getppid()].mig_instance == (6, 0)
    assert all(p.sm_percent is None for p in placed.values())
    assert gpu.mig_instance(placed[os.getpid()].mig_instance) is first


def test_instances_follow_a_reconfiguration_and_gpm_gives_each_its_sm_activity() -> None:
    gpu = mig_gpu(gpm=True)
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        try:
            source.sample()
            time.sleep(0.2)
            second = source.sample().gpus[0]
            assert gpu.mig is not None
            gpu.mig.pop(1)  # nvidia-smi mig -dci / -dgi on the idle 1g
            third = source.sample().gpus[0]
        finally:
            source.close()
    active = {m.key: m.sm_active_percent for m in second.mig_instances}
    assert active[(1, 0)] == pytest.approx(70.0)
    assert active[(6, 0)] == pytest.approx(10.0)
    assert active[(5, 0)] is None  # this instance's counters gave nothing
    assert [m.key for m in third.mig_instances] == [(1, 0), (6, 0)]
    # The profile and UUID are asked once per instance, not every tick.
    assert nvml.calls["nvmlDeviceGetName"] <= 1 + 3 + 1
    # GPM: one sample per GPU instance a tick (three, three, then two instances).
    assert nvml.calls["nvmlGpmMigSampleGet"] == 3 + 3 + 2


def test_a_gpu_without_mig_is_asked_about_it_once() -> None:
    with FakeNvml([FakeGpu(0)]) as nvml:
        source = LiveSource()
        try:
            snaps = [source.sample() for _ in range(3)]
        finally:
            source.close()
    assert not snaps[-1].gpus[0].mig_mode
    assert nvml.calls["nvmlDeviceGetMigMode"] == 1
    assert nvml.calls["nvmlDeviceGetMigDeviceHandleByIndex"] == 0


def test_instances_survive_the_json_form() -> None:
    with FakeNvml([mig_gpu()]):
        source = LiveSource()
        try:
            snap = source.sample()
        finally:
            source.close()
    back = snapshot_from_dict(snapshot_to_dict(snap))
    assert back.gpus[0].mig_instances == snap.gpus[0].mig_instances
    assert {p.pid: p.mig_instance for p in back.processes} == {
        p.pid: p.mig_instance for p in snap.processes
    }
