"""A job across nodes in the monitor (``--prometheus``): its GPUs by node, ``N`` for one
node at a time, the PROMETHEUS badge and the processes note."""

from __future__ import annotations

import dataclasses

from gputop_hints.model import Snapshot
from gputop_hints.sources.demo import DemoSource
from gputop_hints.tui.app import PROMETHEUS_PROCESSES, GputopApp
from tests.support.screen import screen_text

NODES = ("node-a", "node-b", "node-c")


class ThreeNodes(DemoSource):
    """Six demo GPUs presented as two GPUs on each of three nodes, as the Prometheus
    source presents a job: named by node, no processes or host CPU."""

    kind = "prometheus"

    def sample(self) -> Snapshot:
        snap = super().sample()
        gpus = tuple(
            dataclasses.replace(
                g, node=NODES[g.index // 2], name=f"{NODES[g.index // 2]} GPU {g.index % 2}"
            )
            for g in snap.gpus
        )
        return dataclasses.replace(snap, gpus=gpus, processes=(), source="prometheus")


async def test_n_shows_one_node_at_a_time_then_all() -> None:
    source = ThreeNodes("healthy", gpus=6, processes=6, seed=0)
    app = GputopApp(source, autostart=False)
    async with app.run_test(size=(160, 60)) as pilot:
        for _ in range(3):
            app.ingest(source.sample())
        await pilot.pause()
        text = screen_text(app)
        assert "PROMETHEUS" in text.splitlines()[0]
        assert all(f"{n} GPU 1" in text for n in NODES)
        assert PROMETHEUS_PROCESSES[:40] in text
        shown = []
        for _ in range(len(NODES) + 1):
            await pilot.press("N")
            await pilot.pause()
            app.ingest(source.sample())  # and it stays so on the next tick
            await pilot.pause()
            text = screen_text(app)
            shown.append(tuple(n for n in NODES if f"{n} GPU 0" in text))
        assert shown == [("node-a",), ("node-b",), ("node-c",), NODES]


async def test_n_on_one_machine_says_what_it_is_for() -> None:
    source = DemoSource("healthy", gpus=2, processes=2, seed=0)
    app = GputopApp(source, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        app.ingest(source.sample())
        await pilot.pause()
        await pilot.press("N")
        await pilot.pause()
        assert app.node is None
        assert len(app.gpu_area.panels) == 2


async def test_prometheus_going_down_says_so_not_no_driver() -> None:
    """The server stops answering mid-run: the tick has no GPUs and the source's reason.
    The screen says what happened -- not "no NVIDIA driver", not live host figures."""
    source = ThreeNodes("healthy", gpus=6, processes=6, seed=0)
    app = GputopApp(source, autostart=False)
    reason = (
        "Prometheus at http://prom:9090 stopped answering at 14:02:10 "
        "(unreachable: connection refused); asking again each tick"
    )
    async with app.run_test(size=(160, 50)) as pilot:
        app.ingest(source.sample())
        down = dataclasses.replace(
            source.sample(), gpus=(), gpu_unavailable_reason=reason, driver_version=None
        )
        app.ingest(down)
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "stopped answering at 14:02:10" in text
        assert "Prometheus not answering" in text
        assert "no NVIDIA driver" not in text
        assert "CPU and host figures below are live" not in text


async def test_n_shows_the_nodes_figures_at_once() -> None:
    """At --interval 15 the next tick is up to 15 s away: the GPUs N brings on screen
    show the latest tick's figures at once, not "no sample" until then."""
    source = ThreeNodes("healthy", gpus=6, processes=6, seed=0)
    app = GputopApp(source, autostart=False)
    async with app.run_test(size=(160, 60)) as pilot:
        for _ in range(3):
            app.ingest(source.sample())
        await pilot.pause()
        assert "no sample" not in screen_text(app)
        await pilot.press("N")  # node-a only
        await pilot.press("N")  # node-b only: its panels are new, and no tick comes
        await pilot.pause()
        text = screen_text(app)
        assert "node-b GPU 0" in text and "node-a GPU 0" not in text
        assert "no sample" not in text, text
