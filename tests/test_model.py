"""The snapshot model: derived values a user sees, and the JSON round trip."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gputop_hints.model import (
    GpuProcess,
    GpuSample,
    HostSample,
    Snapshot,
    UtilizationSample,
    WorkerProcess,
    pcie_link_bytes_per_s,
    snapshot_from_dict,
    snapshot_to_dict,
)


def _host() -> HostSample:
    return HostSample(
        hostname="node1",
        cpu_percent_per_core=(100.0, 50.0, None, 0.0),
        allowed_cores=(0, 1, 2),
        iowait_percent=3.5,
        memory_used_bytes=8 << 30,
        memory_total_bytes=64 << 30,
        load_average=(1.0, 0.5, 0.25),
    )


def _snapshot() -> Snapshot:
    gpu = GpuSample(
        index=0,
        name="NVIDIA H100",
        uuid="GPU-1",
        sm_percent=91.0,
        memory_access_percent=66.0,
        vram_used_bytes=40 << 30,
        vram_total_bytes=80 << 30,
        pcie_rx_bytes_per_s=1.5e9,
        pcie_tx_bytes_per_s=None,
        pcie_generation=4,
        pcie_width=16,
        throttle_reasons=("sw_power_cap",),
        sm_samples=(UtilizationSample(10.0, 0.0), UtilizationSample(10.2, 95.0)),
    )
    proc = GpuProcess(
        pid=42,
        gpu_index=0,
        vram_bytes=39 << 30,
        sm_percent=None,
        cpu_percent=99.0,
        workers=(
            WorkerProcess(43, cpu_percent=80.0, state="R"),
            WorkerProcess(44, cpu_percent=5.0, state="S"),
            WorkerProcess(45, cpu_percent=None, state="D"),
        ),
        user="alice",
        command="python train.py",
    )
    return Snapshot(timestamp=100.0, interval_s=1.0, host=_host(), gpus=(gpu,), processes=(proc,))


def test_pcie_capacity_follows_generation_and_width() -> None:
    # gen4 x16 is ~31.5 GB/s per direction; gen3 x8 is a quarter of that.
    assert pcie_link_bytes_per_s(4, 16) == pytest.approx(31.5e9, rel=0.01)
    assert pcie_link_bytes_per_s(3, 8) == pytest.approx(7.88e9, rel=0.01)
    assert pcie_link_bytes_per_s(None, 16) is None
    assert pcie_link_bytes_per_s(4, None) is None
    assert pcie_link_bytes_per_s(99, 16) is None


def test_utilization_sum_is_not_clamped() -> None:
    gpu = _snapshot().gpus[0]
    assert gpu.utilization_sum_percent == 157.0
    assert GpuSample(index=1, sm_percent=50.0).utilization_sum_percent is None


def test_vram_fraction_unknown_without_total() -> None:
    assert _snapshot().gpus[0].vram_fraction == 0.5
    assert GpuSample(index=0, vram_used_bytes=5).vram_fraction is None


def test_workers_cpu_and_busy_count() -> None:
    proc = _snapshot().processes[0]
    assert proc.workers_cpu_percent == 85.0
    assert proc.busy_workers(20.0) == 1
    assert GpuProcess(pid=1, gpu_index=0).workers_cpu_percent == 0.0
    only_unknown = GpuProcess(pid=1, gpu_index=0, workers=(WorkerProcess(2),))
    assert only_unknown.workers_cpu_percent is None


def test_allowed_cores_busy_ignores_unknown_and_disallowed() -> None:
    assert _host().allowed_cores_busy_percent() == 75.0


def test_json_round_trip_keeps_every_field_and_none() -> None:
    snap = _snapshot()
    text = json.dumps(snapshot_to_dict(snap), allow_nan=False)
    back = snapshot_from_dict(json.loads(text))
    assert back == snap
    data = json.loads(text)
    assert data["processes"][0]["sm_percent"] is None
    assert data["gpus"][0]["pcie_tx_bytes_per_s"] is None


def test_records_are_immutable_to_the_type_checker(tmp_path: Path) -> None:
    """Records are frozen for mypy (``model.record``), plain slotted classes at run time:
    assigning a field is a type error, while building and replacing one is not."""
    mypy_api = pytest.importorskip("mypy.api", reason="mypy (the [test] extra) checks this")
    program = tmp_path / "uses_records.py"
    program.write_text(
        "import dataclasses\n"
        "from gputop_hints.model import GpuSample, Snapshot\n"
        "gpu = GpuSample(index=0, sm_percent=5.0)\n"
        "gpu = dataclasses.replace(gpu, sm_percent=6.0)\n"
        "gpu.sm_percent = 7.0\n"
        "def clear(snapshot: Snapshot) -> None:\n"
        "    snapshot.gpus = ()\n"
    )
    out, _err, status = mypy_api.run(
        ["--no-incremental", "--follow-imports=silent", "--no-error-summary", str(program)]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1
    assert [line.split(":")[1] for line in errors] == ["5", "7"], out
    assert all("read-only" in line for line in errors), out
    # Compared and hashed by value, as a frozen dataclass is.
    snap = _snapshot()
    assert snap.gpus[0] == dataclasses.replace(snap.gpus[0])
    assert hash(snap.gpus[0]) == hash(dataclasses.replace(snap.gpus[0]))


def test_job_round_trips_with_its_processes() -> None:
    from gputop_hints.model import JobInfo

    job = JobInfo(
        job_id="42",
        cpus=(0, 1, 2, 3),
        gpu_indices=(1,),
        processes=(WorkerProcess(100, cpu_percent=99.0, state="R", name="python"),),
        cpu_percent=99.0,
        detected_from="SLURM_JOB_ID",
    )
    snap = Snapshot(timestamp=1.0, interval_s=1.0, host=_host(), job=job)
    back = snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(snap))))
    assert back.job == job


def test_construction_keeps_defaults_positions_and_refuses_unknown_fields() -> None:
    # Records are plain slotted dataclasses at run time (model.record): their generated
    # __init__ keeps the declared signature and defaults.
    gpu = GpuSample(3)
    assert gpu.index == 3
    assert gpu.sm_percent is None
    assert gpu.sm_samples == ()
    assert gpu.lost is False
    assert UtilizationSample(1.0, 50.0) == UtilizationSample(timestamp=1.0, percent=50.0)
    assert WorkerProcess(7, 12.5).cpu_percent == 12.5
    snap = Snapshot(1.0, 2.0, _host())
    assert (snap.source, snap.labels, snap.job, snap.gpus) == ("live", (), None, ())
    with pytest.raises(TypeError):
        GpuSample()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        GpuSample(0, bogus=1)  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        gpu.bogus = 4  # type: ignore[attr-defined]  # slots: no attribute outside the fields
    assert hash(GpuSample(3, name="a")) == hash(GpuSample(index=3, name="a"))
