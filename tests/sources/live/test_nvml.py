"""NVML through the live source: GPU metrics in model units, what is unknown,
lost GPUs, clock event reasons, buffered samples and per-process utilization.

Only NVML is faked (tests/support/fake_nvml.py); processes named as GPU
processes are real where a test needs the host to see them.
"""

from __future__ import annotations

import os
import time

import pytest

from gputop_hints.sources.live.nvml_read import decode_clock_event_reasons
from gputop_hints.sources.live.source import LiveSource
from tests.sources.live.helpers import unused_pid
from tests.support.fake_nvml import GIB, FakeGpu, FakeNvml, FakeProc, make_gpus

# -- GPU metrics ---------------------------------------------------------------------


def test_gpu_metrics_arrive_in_model_units() -> None:
    gpu = FakeGpu(
        0,
        name="NVIDIA A100-SXM4-80GB",
        sm=97,
        mem=61,
        vram_used=70 * GIB,
        vram_total=80 * GIB,
        pcie_rx_kib=2_000_000,
        pcie_tx_kib=1_000,
        link_gen=4,
        link_width=16,
        temperature=71,
        power_mw=312_500,
        power_limit_mw=400_000,
        sm_clock_mhz=1410,
        max_sm_clock_mhz=1410,
    )
    with FakeNvml([gpu], driver_version="535.104.05", cuda_driver_version=12020):
        snapshot = LiveSource().sample()
    (g,) = snapshot.gpus
    assert g.name == "NVIDIA A100-SXM4-80GB"
    assert g.uuid == gpu.uuid
    assert (g.sm_percent, g.memory_access_percent) == (97.0, 61.0)
    assert g.utilization_sum_percent == 158.0
    assert (g.vram_used_bytes, g.vram_total_bytes) == (70 * GIB, 80 * GIB)
    assert g.pcie_rx_bytes_per_s == 2_000_000 * 1024
    assert g.pcie_tx_bytes_per_s == 1_000 * 1024
    assert (g.pcie_generation, g.pcie_width) == (4, 16)
    assert g.pcie_link_bytes_per_s == pytest.approx(16 * 16e9 * 128 / 130 / 8)
    assert g.temperature_c == 71.0
    assert g.power_watts == 312.5
    assert g.power_limit_watts == 400.0
    assert (g.sm_clock_mhz, g.max_sm_clock_mhz) == (1410, 1410)
    assert g.throttle_reasons == ()
    assert snapshot.driver_version == "535.104.05"
    assert snapshot.cuda_driver_version == "12.2"
    assert snapshot.source == "live"
    assert snapshot.sample_duration_s is not None and snapshot.sample_duration_s > 0


def test_gpu_values_follow_the_device_from_tick_to_tick() -> None:
    gpu = FakeGpu(0, sm=5, pcie_rx_kib=10)
    with FakeNvml([gpu]):
        source = LiveSource()
        before = source.sample().gpus[0]
        gpu.sm, gpu.pcie_rx_kib, gpu.link_gen = 88, 500, 1
        after = source.sample().gpus[0]
    assert (before.sm_percent, after.sm_percent) == (5.0, 88.0)
    assert (before.pcie_rx_bytes_per_s, after.pcie_rx_bytes_per_s) == (10 * 1024, 500 * 1024)
    assert (before.pcie_generation, after.pcie_generation) == (5, 1)


def test_unsupported_metrics_are_none_not_zero() -> None:
    gpu = FakeGpu(0, sm=40, unsupported={"pcie", "pcie_link", "temperature", "power"})
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        for _ in range(3):
            g = source.sample().gpus[0]
    assert g.pcie_rx_bytes_per_s is None
    assert g.pcie_tx_bytes_per_s is None
    assert g.pcie_generation is None and g.pcie_width is None
    assert g.pcie_link_bytes_per_s is None
    assert g.temperature_c is None
    assert g.power_watts is None
    assert g.sm_percent == 40.0  # the rest of the GPU is still there
    assert g.power_limit_watts == 700.0
    # A GPU that said "not supported" is not asked again every tick.
    assert nvml.calls["nvmlDeviceGetTemperature"] == 1
    assert nvml.calls["nvmlDeviceGetPcieThroughput"] == 1


def test_no_permission_on_a_metric_is_none() -> None:
    gpu = FakeGpu(0, no_permission={"power_limit", "clocks"})
    with FakeNvml([gpu]):
        g = LiveSource().sample().gpus[0]
    assert g.power_limit_watts is None
    assert g.sm_clock_mhz is None and g.max_sm_clock_mhz is None
    assert g.power_watts == 90.0


def test_a_lost_gpu_leaves_the_other_gpu_and_its_processes_complete() -> None:
    pid = os.getpid()
    gpus = make_gpus(2, [[pid], [pid]], sm=70)
    with FakeNvml(gpus):
        source = LiveSource()
        source.sample()
        gpus[1].lost = True
        snapshot = source.sample()
    ok, lost = snapshot.gpus
    assert ok.sm_percent == 70.0 and ok.vram_total_bytes == 80 * GIB
    assert lost.index == 1
    assert lost.name == gpus[1].name  # still known from before it was lost
    assert lost.sm_percent is None
    assert lost.vram_used_bytes is None
    assert lost.temperature_c is None
    assert [(p.pid, p.gpu_index) for p in snapshot.processes] == [(pid, 0)]


def test_a_gpu_lost_before_start_is_listed_with_nothing_known() -> None:
    gpus = make_gpus(2)
    gpus[0].lost = True
    with FakeNvml(gpus):
        snapshot = LiveSource().sample()
    lost, ok = snapshot.gpus
    assert (lost.index, lost.name, lost.sm_percent, lost.vram_total_bytes) == (0, None, None, None)
    assert ok.name == gpus[1].name and ok.vram_total_bytes is not None


# -- clock event reasons ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("mask", "names"),
    [
        (0, ()),
        (0x1, ("gpu_idle",)),
        (0x4 | 0x40, ("sw_power_cap", "hw_thermal")),
        (0x8 | 0x20 | 0x80, ("hw_slowdown", "sw_thermal", "hw_power_brake")),
        (
            0x2 | 0x10 | 0x100,
            ("applications_clocks_setting", "sync_boost", "display_clocks_setting"),
        ),
        (0x4 | 0x10000, ("sw_power_cap", "unknown_0x10000")),
    ],
)
def test_clock_event_reasons_decode_to_names(mask: int, names: tuple[str, ...]) -> None:
    assert decode_clock_event_reasons(mask) == names


def test_throttle_reasons_reach_the_snapshot_and_unknown_is_none() -> None:
    throttled = FakeGpu(0, clock_event_reasons=0x4 | 0x40)
    free = FakeGpu(1, clock_event_reasons=0)
    unknown = FakeGpu(2, unsupported={"clock_reasons"})
    with FakeNvml([throttled, free, unknown]):
        gpus = LiveSource().sample().gpus
    assert gpus[0].throttle_reasons == ("sw_power_cap", "hw_thermal")
    assert gpus[1].throttle_reasons == ()
    assert gpus[2].throttle_reasons is None


def test_drivers_before_r535_fall_back_to_throttle_reasons() -> None:
    gpu = FakeGpu(0, clock_event_reasons=0x20)
    with FakeNvml([gpu], missing_functions={"nvmlDeviceGetCurrentClocksEventReasons"}) as nvml:
        source = LiveSource()
        first = source.sample().gpus[0]
        second = source.sample().gpus[0]
    assert first.throttle_reasons == second.throttle_reasons == ("sw_thermal",)
    assert nvml.calls["nvmlDeviceGetCurrentClocksEventReasons"] == 1
    assert nvml.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 2


# -- buffered utilization samples ------------------------------------------------------


def test_buffered_sm_samples_are_delivered_once_each() -> None:
    gpu = FakeGpu(0)
    now_us = time.time_ns() // 1000
    gpu.sm_sample_buffer.append((now_us - 60_000_000, 99))  # a minute old: before our time
    gpu.add_sm_samples([10, 90, 10])
    with FakeNvml([gpu]):
        source = LiveSource()
        first = source.sample().gpus[0].sm_samples
        again = source.sample().gpus[0].sm_samples
        gpu.add_sm_samples([55, 66])
        later = source.sample().gpus[0].sm_samples
    assert [s.percent for s in first] == [10.0, 90.0, 10.0]
    assert again == ()
    assert [s.percent for s in later] == [55.0, 66.0]
    # Seconds since the epoch, oldest first, strictly after what came before.
    assert abs(first[-1].timestamp - time.time()) < 30
    assert first[0].timestamp < first[1].timestamp < first[2].timestamp < later[0].timestamp


def test_no_new_samples_is_not_mistaken_for_unsupported() -> None:
    gpu = FakeGpu(0)
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        source.sample()
        source.sample()
        gpu.add_sm_samples([42])
        samples = source.sample().gpus[0].sm_samples
    assert [s.percent for s in samples] == [42.0]
    assert nvml.calls["nvmlDeviceGetSamples"] == 3


def test_unsupported_samples_are_empty_and_not_asked_for_again() -> None:
    gpu = FakeGpu(0, sm=30, unsupported={"samples"})
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        ticks = [source.sample().gpus[0] for _ in range(4)]
    assert all(g.sm_samples == () for g in ticks)
    assert ticks[-1].sm_percent == 30.0
    assert nvml.calls["nvmlDeviceGetSamples"] == 1


# -- GPU processes ----------------------------------------------------------------------


def test_per_process_sm_without_a_sample_is_unknown_not_idle() -> None:
    me = os.getpid()
    parent = os.getppid()
    idle = unused_pid()
    gpu = FakeGpu(
        0,
        processes=[
            FakeProc(me, used_bytes=3 * GIB, sm_util=42, mem_util=7),
            FakeProc(parent, used_bytes=2 * GIB, sm_util=None),
            FakeProc(idle, used_bytes=1 * GIB, sm_util=0, mem_util=0),
        ],
    )
    with FakeNvml([gpu]):
        source = LiveSource()
        rows = {p.pid: p for p in source.sample().processes}
        gpu.processes[0].sm_util = None  # the driver stops sampling it
        later = {p.pid: p for p in source.sample().processes}
    assert (rows[me].sm_percent, rows[me].memory_access_percent) == (42.0, 7.0)
    assert rows[me].vram_bytes == 3 * GIB
    # No NVML sample (nvitop would say 0): unknown, not idle.
    assert rows[parent].sm_percent is None
    assert rows[parent].memory_access_percent is None
    assert rows[parent].vram_bytes == 2 * GIB
    # A real sample of 0 is a real 0.
    assert (rows[idle].sm_percent, rows[idle].memory_access_percent) == (0.0, 0.0)
    # Last tick's value is not carried over when no new sample came.
    assert later[me].sm_percent is None
    assert later[idle].sm_percent == 0.0


def test_processes_with_unknown_vram_and_no_utilization_support() -> None:
    me = os.getpid()
    gpu = FakeGpu(
        0,
        processes=[FakeProc(me, used_bytes=None, sm_util=80)],
        unsupported={"process_utilization"},
    )
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        rows = [source.sample().processes for _ in range(3)][-1]
    assert [(p.pid, p.vram_bytes, p.sm_percent) for p in rows] == [(me, None, None)]
    assert nvml.calls["nvmlDeviceGetProcessUtilization"] == 1


def test_a_power_limit_lowered_below_the_boards_default_is_recognised() -> None:
    """An admin's lower cap (nvidia-smi -pl) differs from the board's default: the
    throttled rule warns on the former and only notes the latter."""
    lowered = FakeGpu(0, power_limit_mw=400_000, default_power_limit_mw=700_000)
    stock = FakeGpu(1, power_limit_mw=700_000)
    with FakeNvml([lowered, stock]) as nvml:
        source = LiveSource()
        snapshot = source.sample()
        calls_before = nvml.calls["nvmlDeviceGetPowerManagementDefaultLimit"]
        source.sample()
        calls_after = nvml.calls["nvmlDeviceGetPowerManagementDefaultLimit"]
        source.close()
    first, second = snapshot.gpus
    assert first.default_power_limit_watts == 700.0
    assert first.power_limit_watts == 400.0
    assert first.power_limit_lowered is True
    assert second.default_power_limit_watts == 700.0
    assert second.power_limit_lowered is False
    # A static fact: asked once, not every tick.
    assert calls_after == calls_before
