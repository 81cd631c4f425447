"""A reading that moves below what the screen shows repaints nothing; one that moves
what it shows is on screen at once."""

from __future__ import annotations

from dataclasses import replace

from gputop_hints.sources.demo import DemoSource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.widgets.gpu_panel import GpuPanel


async def test_a_power_change_below_a_watt_repaints_nothing_and_a_new_watt_shows() -> None:
    source = DemoSource("mixed", gpus=1, processes=1, seed=0)
    app = GputopApp(source, autostart=False, theme="dark")
    async with app.run_test(size=(120, 40)) as pilot:
        snapshot = source.sample()
        app.ingest(snapshot)
        await pilot.pause()
        panel = app.query(GpuPanel).first()
        gpu = replace(snapshot.gpus[0], power_watts=600.2, power_limit_watts=700.0)

        def show(watts: float) -> tuple[int, int, int]:
            before = tuple(panel.lines_diffed)
            panel.update_from(
                replace(gpu, power_watts=watts), panel.history, panel.findings,
                panel.ticks, panel.verdict,
            )  # fmt: skip
            kept, same, changed = (a - b for a, b in zip(panel.lines_diffed, before, strict=True))
            return kept, same, changed

        show(600.2)
        await pilot.pause()
        title = panel.render_line(0)
        assert "600/700W" in title.text
        # 600.4 W is drawn as 600 W too: no line changes, nothing is asked of the
        # compositor, and the title drawn is the one kept.
        assert show(600.4)[2] == 0
        assert panel not in app.screen._dirty_widgets
        await pilot.pause()
        assert panel.render_line(0) is title
        # 615 W is a new number on screen.
        assert show(615.0)[2] == 1
        await pilot.pause()
        assert "615/700W" in panel.text_lines()[0]
        assert "600/700W" not in panel.text_lines()[0]
