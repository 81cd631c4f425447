"""MIG in the monitor (issue 16): each instance a row under its GPU, processes named by
their instance in the table, and utilization n/a -- never 0 -- where NVML gives none."""

from __future__ import annotations

import os

from gputop_hints.model import Snapshot
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.tui.widgets.gpu_panel import RICH_HEIGHT, GpuPanel
from gputop_hints.tui.widgets.process_table import ProcessTable
from tests.sources.live.helpers import mig_gpu
from tests.support.fake_nvml import FakeGpu, FakeNvml
from tests.support.screen import screen_text
from tests.tui.test_tui import lines_of, make_app


def mig_snapshot() -> Snapshot:
    with FakeNvml([mig_gpu(), FakeGpu(1)]):
        live = LiveSource(detect_job=False)
        try:
            return live.sample()
        finally:
            live.close()


async def test_instances_are_rows_under_their_gpu_and_processes_name_theirs() -> None:
    snap = mig_snapshot()
    app, _ = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        app.ingest(snap)
        await pilot.pause()
        panel = app.query_one("#gpu-0", GpuPanel)
        assert panel.size.height == RICH_HEIGHT + 3  # a line per instance
        text = lines_of(panel)
        assert [line.split()[0] for line in text[1:6]] == ["SM", "MEM", "VRAM", "RX", "TX"]
        assert "n/a under MIG" in text[1] and "n/a under MIG" in text[2]
        rows = text[6:]
        assert [row.split()[1] for row in rows] == ["3g.40gb", "1g.10gb", "1g.10gb"]
        assert rows[0].split()[0] == "├" and rows[-1].split()[0] == "└"
        assert "12.0GiB/40.0GiB" in rows[0] and "GI1" in rows[0]
        assert all("util n/a" in row for row in rows)  # NVML gives none under MIG
        # The GPU without MIG keeps its shape.
        plain = lines_of(app.query_one("#gpu-1", GpuPanel))
        assert plain[5].split()[0] == "TX" and not "".join(plain[6:]).strip()

        table = lines_of(app.query_one(ProcessTable))
        assert "GPU/MIG" in table[0]
        [mine] = [line for line in table[1:] if line.split()[:1] == [str(os.getpid())]]
        # GPU, VRAM and SM%: the VRAM NVML withholds here, and per-process SM % unknown.
        assert mine.split()[2:5] == ["0/3g.40gb", "n/a", "n/a"]

        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.query_one("#gpus").has_class("-compact")
        compact = app.query_one("#gpu-0", GpuPanel)
        assert compact.size.height == 1
        assert "MIG 3" in lines_of(compact)[0]


async def test_the_detail_of_a_process_on_an_instance_scales_vram_to_the_instance() -> None:
    snap = mig_snapshot()
    app, _ = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        app.ingest(snap)
        await pilot.pause()
        await pilot.press("enter")  # the first row: a process on GPU 0's instances
        await pilot.pause()
        text = screen_text(app)
        assert "none per process under MIG" in text
        assert "(MIG 3g.40gb)" in text or "(MIG 1g.10gb)" in text
