"""What belongs to a job: CUDA_VISIBLE_DEVICES and SLURM GPU ids as NVML
indices (MIG through the fake NVML), membership of real child processes, and
the load outsiders put on the job's cores."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import nvitop.api.libnvml as libnvml
import pytest

from gputop_hints.sources.live import procfs
from gputop_hints.sources.live.nvml import mig_parent
from gputop_hints.sources.live.slurm import (
    ForeignLoad,
    GpuId,
    JobMembership,
    cuda_visible_devices_to_nvml,
    environ_job_id,
    slurm_gpus_to_nvml,
)
from tests.sources.live.helpers import (
    children_of,
)
from tests.support.fake_nvml import FakeGpu, FakeNvml, fake_uuid

# -- CUDA_VISIBLE_DEVICES ---------------------------------------------------------------

GPUS = [GpuId(i, fake_uuid(i)) for i in range(4)]


@pytest.mark.parametrize(
    ("value", "indices"),
    [
        (None, None),
        ("", ()),
        ("2,0", (2, 0)),
        ("1,7,2", (1,)),  # stops at the first invalid ordinal, as CUDA does
        ("0,0", ()),  # duplicates: invalid altogether (nvitop)
        (f"{fake_uuid(3)},{fake_uuid(1)}", (3, 1)),
        (fake_uuid(2)[:13], (2,)),  # abbreviated, unique
        ("GPU-0000", ()),  # abbreviated, ambiguous
        (f"MIG-{fake_uuid(2)}/1/0", (2,)),  # MIG-GPU-<uuid>/<gi>/<ci>
        ("NoDevFiles", ()),
        ("-1", ()),
    ],
)
def test_cuda_visible_devices(value: str | None, indices: tuple[int, ...] | None) -> None:
    assert cuda_visible_devices_to_nvml(value, GPUS) == indices


def test_mig_uuid_maps_to_its_parent_through_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [FakeGpu(i) for i in range(3)]
    mig = "MIG-0a1b2c3d-0000-4000-8000-000000000001"
    with FakeNvml(gpus):
        monkeypatch.setattr(
            libnvml,
            "nvmlDeviceGetHandleByUUID",
            lambda uuid: "mig-handle" if uuid == mig else gpus[0],
        )
        monkeypatch.setattr(
            libnvml,
            "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
            lambda handle: gpus[1] if handle == "mig-handle" else None,
        )
        ids = [GpuId(g.index, g.uuid) for g in gpus]
        assert cuda_visible_devices_to_nvml(mig, ids, mig_parent=mig_parent) == (1,)
        assert cuda_visible_devices_to_nvml(mig, ids) == ()  # nobody to ask


def test_slurm_gpu_ids_follow_minor_numbers() -> None:
    gpus = [GpuId(0, minor_number=3), GpuId(1, minor_number=2)]
    assert slurm_gpus_to_nvml([2], gpus) == (1,)
    assert slurm_gpus_to_nvml([1, 0], [GpuId(0), GpuId(1)]) == (1, 0)


# -- membership of real processes ---------------------------------------------------------


def _tree() -> dict[int, tuple[int, int]]:
    table = procfs.scan_proc()
    assert table is not None
    return table.tree()


def test_environ_and_process_tree_decide_membership(
    job_children: tuple[subprocess.Popen[str], subprocess.Popen[str]],
) -> None:
    member, outsider = job_children
    assert environ_job_id(member.pid) == "990011"
    assert environ_job_id(outsider.pid) is None
    deadline = time.monotonic() + 5
    while not children_of(member.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    (grandchild,) = children_of(member.pid)
    assert environ_job_id(grandchild) is None  # env={} : only the tree says it is the job's
    membership = JobMembership("990011")
    members = membership.update(_tree())
    assert member.pid in members
    assert outsider.pid not in members
    assert os.getpid() not in members
    # Nothing read or unreadable tells about the grandchild except the tree -- and
    # with a readable, empty environment it is judged "not the job's" on its own.
    assert grandchild not in members
    # A job with no process on this machine (an id no test cluster hands out) has no members.
    assert JobMembership("987654321").update(_tree()) == frozenset()


# -- other jobs on our cores ----------------------------------------------------------------


def test_foreign_load_charges_outsiders_to_their_last_core() -> None:
    load = ForeignLoad(cores=[0, 1])
    rows0 = [(10, 1, 5.0, 0, 1), (11, 1, 5.0, 1, 1), (12, 1, 0.0, 3, 1), (13, 1, 1.0, 0, 2)]
    assert load.update(rows0, members={10}, now=100.0) is None
    rows1 = [
        (10, 1, 6.0, 0, 1),  # member: not foreign
        (11, 1, 6.0, 1, 1),  # outsider on core 1: one core-second
        (12, 1, 2.0, 3, 1),  # outsider elsewhere
        (13, 1, 2.0, 0, 2),  # kernel thread
        (14, 1, 9.0, 0, 1),  # new: no delta yet
    ]
    # 1 core-second over 2 cores x 1 s = 50 %.
    assert load.update(rows1, members={10}, now=101.0) == pytest.approx(50.0)


def _scan() -> procfs.ProcTable:
    table = procfs.scan_proc()
    assert table is not None
    return table


SPIN = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end:\n    pass\n"


def test_foreign_load_sees_an_outsider_spinning_on_the_jobs_core() -> None:
    core = min(os.sched_getaffinity(0))
    outsider = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        os.sched_setaffinity(outsider.pid, {core})
        time.sleep(0.2)  # let it run there, so its last core is the job's
        # Two views of the same two passes: the spinner outside the job, and inside it.
        outside, inside = ForeignLoad([core]), ForeignLoad([core])
        first = _scan()
        assert outside.update(first.cpu_rows(), members=set(), now=first.taken_at) is None
        inside.update(first.cpu_rows(), members={outsider.pid}, now=first.taken_at)
        time.sleep(0.5)
        second = _scan()
        assert second.stats[outsider.pid].last_cpu == core
        as_outsider = outside.update(second.cpu_rows(), members=set(), now=second.taken_at)
        as_member = inside.update(second.cpu_rows(), members={outsider.pid}, now=second.taken_at)
        # It competes with whatever else runs on that core, but it does run there.
        assert as_outsider is not None and 5.0 < as_outsider <= 100.0
        # The same process inside the job is not foreign load: its share goes. (The
        # estimate is capped at 100 %: processes that hopped onto the core count in
        # full, so others alone can fill it.)
        spun_s = (
            second.stats[outsider.pid].cpu_ticks - first.stats[outsider.pid].cpu_ticks
        ) / procfs.CLOCK_TICKS
        share = spun_s / (second.taken_at - first.taken_at) * 100.0
        assert as_member is not None
        assert as_outsider - share - 1e-6 <= as_member <= as_outsider
        assert as_member < as_outsider or as_outsider == 100.0
    finally:
        outsider.kill()
        outsider.wait(timeout=5)
