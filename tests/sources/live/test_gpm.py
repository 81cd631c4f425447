"""GPM (issue 14): SM active, occupancy, tensor and DRAM bandwidth from two samples a
tick apart, on the fake NVML with the real API's sample-then-compute semantics."""

from __future__ import annotations

import json
import time

import pynvml
import pytest

from gputop_hints.model import snapshot_to_dict
from gputop_hints.outputs.summary import Summary
from gputop_hints.sources.live.nvml_gpm import NO_PERMISSION, NOT_SUPPORTED
from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import FakeGpu, FakeNvml

SM_UTIL, OCCUPANCY, TENSOR, DRAM = (
    pynvml.NVML_GPM_METRIC_SM_UTIL,
    pynvml.NVML_GPM_METRIC_SM_OCCUPANCY,
    pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL,
)


def hopper(**gpm: float) -> FakeGpu:
    values = {SM_UTIL: 80.0, OCCUPANCY: 40.0, TENSOR: 25.0, DRAM: 60.0}
    return FakeGpu(0, sm=100, gpm=values | {int(k): v for k, v in gpm.items()})


def test_metrics_come_from_two_samples_a_tick_apart() -> None:
    gpu = hopper()
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        try:
            first = source.sample().gpus[0]
            time.sleep(0.2)
            second = source.sample().gpus[0]
            # Half of the next interval at SM active 20 %, half at 80 %: the metric is
            # what the counters gathered over the whole interval, not the last value.
            gpu.gpm_advance(time.monotonic())
            gpu.gpm = {SM_UTIL: 20.0, OCCUPANCY: 40.0, TENSOR: 25.0, DRAM: 60.0}
            time.sleep(0.2)
            third = source.sample().gpus[0]
        finally:
            source.close()
    assert first.sm_active_percent is None  # one sample: nothing to compute yet
    assert first.profiling_unavailable is None
    assert second.sm_active_percent == pytest.approx(80.0)
    assert (second.sm_occupancy_percent, second.tensor_active_percent) == pytest.approx(
        (40.0, 25.0)
    )
    assert second.dram_active_percent == pytest.approx(60.0)
    assert second.sm_percent == 100  # utilization itself is untouched
    assert 20.0 < (third.sm_active_percent or 0.0) < 80.0
    # One sample a tick and one computation a tick: two NVML calls per GPU per tick.
    assert nvml.calls["nvmlGpmSampleGet"] == 3 and nvml.calls["nvmlGpmMetricsGet"] == 2
    assert nvml.calls["nvmlGpmQueryDeviceSupport"] == 1


@pytest.mark.parametrize(
    ("gpu", "reason"),
    [
        (FakeGpu(0), NOT_SUPPORTED),  # an A100: no GPM
        (FakeGpu(0, gpm={SM_UTIL: 50.0}, no_permission={"gpm"}), NO_PERMISSION),
    ],
    ids=["unsupported", "no-permission"],
)
def test_no_gpm_is_unknown_with_its_reason_in_the_json(gpu: FakeGpu, reason: str) -> None:
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        try:
            snaps = [source.sample() for _ in range(3)]
        finally:
            source.close()
    last = snaps[-1].gpus[0]
    assert (last.sm_active_percent, last.tensor_active_percent) == (None, None)
    assert last.profiling_unavailable == reason
    assert nvml.calls["nvmlGpmSampleGet"] == 0  # asked once, never again
    doc = json.loads(Summary.of(snaps).to_json_text())
    assert doc["gpus"][0]["profiling_unavailable"] == reason
    assert doc["gpus"][0]["sm_active_percent"] is None
    assert snapshot_to_dict(snaps[-1])["gpus"][0]["sm_active_percent"] is None


def test_a_value_gpm_cannot_mean_is_unknown() -> None:
    with FakeNvml([hopper(**{str(SM_UTIL): 250.0})]):
        source = LiveSource()
        try:
            source.sample()
            time.sleep(0.1)
            gpu = source.sample().gpus[0]
        finally:
            source.close()
    assert gpu.sm_active_percent is None and gpu.tensor_active_percent == pytest.approx(25.0)


def test_a_transient_error_when_probing_is_asked_again() -> None:
    """An Unknown error on the first support query is not taken for "no GPM"."""
    gpu = hopper()
    gpu.fail_next("nvmlGpmQueryDeviceSupport", pynvml.NVML_ERROR_UNKNOWN)
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        try:
            snaps = [source.sample() for _ in range(2)]
            time.sleep(0.1)
            snaps.append(source.sample())
        finally:
            source.close()
    assert nvml.calls["nvmlGpmQueryDeviceSupport"] == 2
    assert snaps[-1].gpus[0].profiling_unavailable is None
    assert snaps[-1].gpus[0].sm_active_percent == pytest.approx(80.0)
