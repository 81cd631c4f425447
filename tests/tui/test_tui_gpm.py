"""GPM in the monitor (issue 14): SM active, occupancy, tensor and DRAM rows under a
Hopper GPU's TX row, one "GPM n/a" line with the reason where the GPU could give them
and does not, and nothing on a GPU without GPM or from a source that does not profile."""

from __future__ import annotations

import time

import pynvml

from gputop_hints.model import GpuSample, Snapshot
from gputop_hints.sources.live.nvml_gpm import NO_API, NO_PERMISSION, NOT_SUPPORTED
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.tui.screens.help import HelpScreen, help_text
from gputop_hints.tui.widgets.findings_view import checked_rules
from gputop_hints.tui.widgets.gpu_panel import RICH_HEIGHT, GpuPanel
from tests.support.fake_nvml import FakeGpu, FakeNvml
from tests.support.screen import screen_text
from tests.tui.test_tui import feed, lines_of, make_app

SM_UTIL, OCCUPANCY, TENSOR, DRAM = (
    pynvml.NVML_GPM_METRIC_SM_UTIL,
    pynvml.NVML_GPM_METRIC_SM_OCCUPANCY,
    pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL,
)
LABELS = ["SM", "MEM", "VRAM", "RX", "TX"]
GPM_LABELS = ["SMACT", "OCC", "TENS", "DRAM"]


def live_ticks(gpus: list[FakeGpu], ticks: int = 3) -> list[Snapshot]:
    """A few live ticks on the fake NVML (GPM needs two samples for its first value)."""
    with FakeNvml(gpus):
        live = LiveSource(detect_job=False)
        try:
            out = []
            for _ in range(ticks):
                out.append(live.sample())
                time.sleep(0.05)
            return out
        finally:
            live.close()


def hopper() -> FakeGpu:
    return FakeGpu(
        0, sm=100, gpm={SM_UTIL: 8.0, OCCUPANCY: 3.0, TENSOR: 0.0, DRAM: 2.0}
    )


async def test_hopper_panel_adds_the_four_rows_and_an_a100_shows_nothing() -> None:
    snaps = live_ticks([hopper(), FakeGpu(1)])
    app, _ = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        for snap in snaps:
            app.ingest(snap)
        await pilot.pause()
        panel = app.query_one("#gpu-0", GpuPanel)
        assert panel.size.height == RICH_HEIGHT + 4
        text = lines_of(panel)
        assert [line.split()[0] for line in text[1:10]] == LABELS + GPM_LABELS
        smact = text[6]
        assert "8%" in smact and "of SM cycles w/ warps" in smact
        assert "0%" in text[8] and "tensor pipes busy" in text[8]
        assert "of peak bandwidth" in text[9]
        # 100 % utilization beside 8 % SM active: the sparkline shows the low level
        # on its fixed 0-100 scale (the first tick had no GPM value yet)
        assert "100%" in text[1]
        # The A100 beside it: no GPM, no rows, no n/a line.
        plain = lines_of(app.query_one("#gpu-1", GpuPanel))
        assert plain[5].split()[0] == "TX" and not "".join(plain[6:]).strip()
        assert "GPM" not in "".join(plain)


async def test_restricted_profiling_says_na_with_the_reason_once() -> None:
    gpu = FakeGpu(0, gpm={SM_UTIL: 50.0}, no_permission={"gpm"})
    snaps = live_ticks([gpu])
    assert snaps[-1].gpus[0].profiling_unavailable == NO_PERMISSION
    app, _ = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        for snap in snaps:
            app.ingest(snap)
        await pilot.pause()
        panel = app.query_one("#gpu-0", GpuPanel)
        assert panel.size.height == RICH_HEIGHT + 1
        text = lines_of(panel)
        assert [line.split()[0] for line in text[1:6]] == LABELS
        assert text[6].split()[:2] == ["GPM", "n/a:"]
        assert "restricted to administrators" in text[6]
        assert "".join(text).count("n/a:") == 1
        assert not any(line.split()[:1] == ["SMACT"] for line in text)


async def test_the_demo_carries_no_gpm_and_keeps_its_shape() -> None:
    app, source = make_app(gpus=2)
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 3)
        await pilot.pause()
        panel = app.query_one("#gpu-0", GpuPanel)
        assert panel.size.height == RICH_HEIGHT
        assert "GPM" not in "".join(lines_of(panel))


def test_only_a_gpu_that_could_profile_says_why_it_does_not() -> None:
    def gpu(reason: str | None) -> GpuSample:
        return GpuSample(index=0, name="GPU", profiling_unavailable=reason)

    # the live source's wording for a GPU without GPM starts "not supported"
    assert gpu(NOT_SUPPORTED).profiling_shown_unavailable is None
    assert gpu(NO_PERMISSION).profiling_shown_unavailable == NO_PERMISSION
    assert gpu(NO_API).profiling_shown_unavailable == NO_API
    assert gpu(None).profiling_shown_unavailable is None


async def test_help_explains_each_gpm_metric_and_how_to_enable_profiling() -> None:
    text = help_text()
    for words in (
        "one or more kernels ran",
        "at least one warp resident",
        "maximum warps",
        "tensor-core pipes were busy",
        "device memory interface was busy",
        "NVreg_RestrictProfilingToAdminUsers=0",
    ):
        assert words in text
    app, source = make_app("healthy")
    async with app.run_test(size=(120, 40)) as pilot:
        feed(app, source, 2)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        for _ in range(200):
            if "NVreg_RestrictProfilingToAdminUsers" in screen_text(app):
                break
            await pilot.press("pagedown")
        assert "NVreg_RestrictProfilingToAdminUsers" in screen_text(app)


def test_a_process_without_hints_lists_tensor_cores_idle_as_checked_only_with_gpm() -> None:
    assert "Tensor cores idle" in checked_rules("process", profiling=True)
    assert "Tensor cores idle" not in checked_rules("process")
    assert "Small batch" in checked_rules("process")
