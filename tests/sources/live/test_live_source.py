"""The live source as a whole, against a fake NVML: CPU-only mode when NVML
cannot be used (and why), a closed source, and the fake NVML itself.

Only NVML is faked (tests/support/fake_nvml.py, installed where nvitop looks
NVML up); the host side is this machine's.
"""

from __future__ import annotations

import ctypes

import psutil
import pynvml
import pytest

from gputop_hints.sources import Source, SourceUnavailable
from gputop_hints.sources.live.source import LiveSource
from tests.sources.live.helpers import two_ticks
from tests.support.fake_nvml import FakeGpu, FakeNvml, make_gpus

# -- no NVML -----------------------------------------------------------------------


def test_without_nvml_the_source_runs_cpu_only_and_says_why(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with FakeNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND):
        source = LiveSource()
        _, second = two_ticks(source, 0.2)
    assert isinstance(source, Source)
    assert second.gpus == ()
    assert second.processes == ()
    reason = second.gpu_unavailable_reason
    assert reason is not None
    assert "libnvidia-ml.so.1 not found" in reason
    assert "--demo" in reason
    # The host side still works: that is the point of CPU-only mode.
    assert len(second.host.cpu_percent_per_core) == psutil.cpu_count()
    assert all(v is not None for v in second.host.cpu_percent_per_core)
    # nvitop's multi-line "FATAL ERROR" banner must not reach the terminal.
    assert "FATAL ERROR" not in capfd.readouterr().err


def test_require_gpu_without_nvml_raises_source_unavailable_with_the_reason() -> None:
    with (
        FakeNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
        pytest.raises(SourceUnavailable, match=r"libnvidia-ml\.so\.1 not found"),
    ):
        LiveSource(require_gpu=True)


@pytest.mark.parametrize(
    ("error", "phrase"),
    [
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "kernel driver is not loaded"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "reload the nvidia modules"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "no permission on /dev/nvidia"),
    ],
)
def test_each_way_nvml_can_fail_gets_its_own_explanation(error: int, phrase: str) -> None:
    with FakeNvml(init_error=error):
        snapshot = LiveSource().sample()
    assert snapshot.gpu_unavailable_reason is not None
    assert phrase in snapshot.gpu_unavailable_reason


def _real_nvml_loadable() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


@pytest.mark.skipif(_real_nvml_loadable(), reason="this machine has an NVIDIA driver")
def test_on_this_driverless_machine_the_real_nvml_path_goes_cpu_only() -> None:
    snapshot = LiveSource().sample()
    assert snapshot.gpus == ()
    assert snapshot.gpu_unavailable_reason is not None
    assert "libnvidia-ml.so.1 not found" in snapshot.gpu_unavailable_reason


def test_nvml_without_any_gpu_says_none_is_visible() -> None:
    with FakeNvml([]):
        snapshot = LiveSource().sample()
        assert snapshot.gpus == ()
        assert snapshot.gpu_unavailable_reason is not None
        assert "sees no GPUs" in snapshot.gpu_unavailable_reason
        with pytest.raises(SourceUnavailable):
            LiveSource(require_gpu=True)


def test_a_closed_source_reports_no_gpus() -> None:
    with FakeNvml(make_gpus(1)):
        source = LiveSource()
        assert len(source.sample().gpus) == 1
        source.close()
        snapshot = source.sample()
    assert snapshot.gpus == ()
    assert snapshot.gpu_unavailable_reason == "The live source was closed."


def test_a_board_without_vram_of_its_own_shows_the_host_memory_it_shares() -> None:
    """VRAM query NotSupported from the start (unified-memory board): host memory shown.

    Nothing is named as failed: on such a board that is the answer, not a fault.
    """
    gpu = FakeGpu(0, unsupported={"memory"})
    with FakeNvml([gpu]):
        source = LiveSource(detect_job=False)
        try:
            sample = source.sample().gpus[0]
        finally:
            source.close()
    assert sample.vram_total_bytes == psutil.virtual_memory().total
    assert sample.vram_used_bytes is not None and sample.implausible == ()


# -- the fake itself --------------------------------------------------------------------


def test_the_fake_puts_nvitop_back_as_it_was() -> None:
    import nvitop.api.libnvml as libnvml

    before = libnvml.nvmlDeviceGetCount
    before_init = pynvml.nvmlInitWithFlags
    with FakeNvml(make_gpus(3)):
        assert libnvml.nvmlDeviceGetCount is not before
        assert len(LiveSource().sample().gpus) == 3
    assert libnvml.nvmlDeviceGetCount is before
    assert pynvml.nvmlInitWithFlags is before_init
    assert vars(libnvml)["__initialized"] is False
