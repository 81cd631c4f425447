"""``--prometheus``: the live view says why a node is slow -- the findings each node's
own ``gputop-hints export`` reports, listed where the process table would be empty,
all nodes' or (``N``) one node's.

Against the real Prometheus tests/outputs/test_job_report_prometheus.py starts: three
``export --demo`` nodes of job 4242, node-a and node-b healthy, node-c starved on
``num_workers=0``. Locally it skips without the ``prometheus`` binary; in CI that fails.
"""

from __future__ import annotations

import dataclasses
import time

from gputop_hints.model import Snapshot, snapshot_from_dict, snapshot_to_dict
from gputop_hints.sources.prometheus.live import PrometheusSource
from gputop_hints.tui.app import PROMETHEUS_PROCESSES, GputopApp
from tests.outputs import test_job_report_prometheus as cluster
from tests.support.screen import screen_text

prometheus = cluster.prometheus


def _starved_tick(source: PrometheusSource) -> Snapshot:
    """A tick in which node-c's exporter reports input-starved (its demo needs a few
    ticks of its own to conclude it; the fixture's Prometheus may hold fewer)."""
    end = time.monotonic() + cluster.WAIT_S
    while True:
        snap = source.sample()
        if any(f.node == "node-c" and f.rule == "input-starved" for f in snap.node_findings):
            return snap
        assert time.monotonic() < end, f"node-c never reported input-starved: {snap.node_findings}"
        time.sleep(0.5)


def _rows(text: str) -> list[list[str]]:
    """The finding rows on screen, split: NODE GPU PID FINDING SEVERITY SINCE..."""
    rows = [line.split() for line in text.split("SEVERITY", 1)[-1].splitlines()]
    return [r for r in rows if len(r) > 5 and r[4] in ("critical", "warning", "info")]


def test_each_tick_carries_the_findings_the_nodes_report(prometheus: str) -> None:
    source = PrometheusSource(prometheus, cluster.JOB, interval_s=1.0)
    snap = _starved_tick(source)
    starved = [f for f in snap.node_findings if f.rule == "input-starved"]
    assert {f.node for f in starved} == {"node-c"}, snap.node_findings
    assert {f.gpu for f in starved} <= {"0", "1"}
    assert all(f.severity == "warning" and f.since is not None for f in starved)
    levels = [f.severity for f in snap.node_findings]
    order = {"critical": 0, "warning": 1, "info": 2}
    assert levels == sorted(levels, key=order.__getitem__), "worst first"
    # --json carries them (node_findings), and reads back the same.
    assert snapshot_from_dict(snapshot_to_dict(snap)).node_findings == snap.node_findings


async def test_the_live_view_lists_why_node_c_is_slow_and_n_narrows_it(prometheus: str) -> None:
    source = PrometheusSource(prometheus, cluster.JOB, interval_s=1.0)
    snap = _starved_tick(source)
    app = GputopApp(source, autostart=False)
    async with app.run_test(size=(180, 60)) as pilot:
        app.ingest(snap)
        await pilot.pause()
        text = screen_text(app)
        assert PROMETHEUS_PROCESSES[:40] in text
        assert "FINDINGS THE NODES' EXPORTERS REPORT" in text
        rows = [r for r in _rows(text) if "input-starved" in r[3]]
        assert rows, text
        # NODE GPU PID FINDING SEVERITY: node-c's starved loader, on one of its GPUs.
        assert all(r[0] == "node-c" for r in rows), rows
        assert any(r[1] in ("0", "1") and r[3].startswith("input-starved") for r in rows)
        assert rows[0][4] == "warning"
        await pilot.press("N")  # the nodes in order: dgx-7 first, on dcgm-exporter
        await pilot.pause()
        text = screen_text(app)
        assert "FINDINGS dgx-7's EXPORTER REPORTS (0)" in text
        assert "dgx-7 reports no finding now" in text
        await pilot.press("N")  # node-a only: healthy, its own info findings at most
        await pilot.pause()
        text = screen_text(app)
        assert "node-a GPU 0" in text and "node-c GPU 0" not in text
        assert "FINDINGS node-a's EXPORTER REPORTS" in text
        assert "input-starved" not in text and "node-c" not in text
        assert {r[0] for r in _rows(text)} <= {"node-a"}
        await pilot.press("N", "N")  # node-c only
        await pilot.pause()
        text = screen_text(app)
        assert "FINDINGS node-c's EXPORTER REPORTS" in text
        assert any("input-starved" in line for line in text.splitlines())
        # Prometheus stops answering: the banner says so, no list of findings read.
        down = dataclasses.replace(
            snap, gpus=(), node_findings=(), gpu_unavailable_reason="Prometheus stopped"
        )
        app.ingest(down)
        await pilot.pause()
        text = screen_text(app)
        assert "EXPORTER" not in text and "input-starved" not in text
