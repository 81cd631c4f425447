"""The CONTAINER column (issue 46 item 10): which container, pod or batch job each GPU
process runs in, shown only while some process is in one. NVML is faked; the
processes are real children of this test, their container set as the live source
would have read it from their cgroups (this machine's own cgroup names none)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Iterator

import pytest

from gputop_hints.model import Snapshot
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.tui.widgets.process_table import ProcessTable
from tests.support.fake_nvml import FakeNvml, make_gpus
from tests.tui.test_tui import lines_of, make_app

POD = "pod ml-team/trainer-7f9c-0"


@pytest.fixture
def children() -> Iterator[list[int]]:
    procs = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(3)
    ]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=5)


def _snapshot(pids: list[int], containers: list[str | None]) -> Snapshot:
    with FakeNvml(make_gpus(1, [pids])):
        live = LiveSource(detect_job=False)
        try:
            snap = live.sample()
        finally:
            live.close()
    by_pid = dict(zip(pids, containers, strict=True))
    processes = tuple(dataclasses.replace(p, container=by_pid[p.pid]) for p in snap.processes)
    return dataclasses.replace(snap, processes=processes)


def _row_of(lines: list[str], pid: int) -> str:
    [row] = [line for line in lines[1:] if line.split()[:1] == [str(pid)]]
    return row


async def test_the_column_shows_only_while_a_process_is_in_a_container(
    children: list[int],
) -> None:
    app, _ = make_app()
    async with app.run_test(size=(200, 40)) as pilot:
        app.ingest(_snapshot(children, [None, None, None]))
        await pilot.pause()
        table = app.query_one(ProcessTable)
        assert "CONTAINER" not in lines_of(table)[0]

        app.ingest(_snapshot(children, ["docker 8a6e3c1f5b2d", "slurm job 1234", None]))
        await pilot.pause()
        lines = lines_of(table)
        header = lines[0]
        assert "CONTAINER" in header
        at = header.index("CONTAINER")
        docker, slurm, bare = (_row_of(lines, pid) for pid in children)
        assert docker[at:].startswith("docker 8a6e3c1f5b2d")
        assert slurm[at:].startswith("slurm job 1234")
        assert bare[at : at + 19].strip() == ""


async def test_a_long_pod_name_is_cut_and_control_characters_shown(
    children: list[int],
) -> None:
    app, _ = make_app()
    async with app.run_test(size=(200, 40)) as pilot:
        long_pod = "pod research-vision/very-long-trainer-name-0"
        app.ingest(_snapshot(children, [POD, long_pod, "lxc \x1b]0;owned\x07"]))
        await pilot.pause()
        lines = lines_of(app.query_one(ProcessTable))
        at = lines[0].index("CONTAINER")
        pod, long_row, lxc = (_row_of(lines, pid) for pid in children)
        assert pod[at : at + 19] == POD[:18] + "…"
        assert long_row[at : at + 19] == long_pod[:18] + "…"
        assert "^[]0;owned^G"[:15] in lxc[at : at + 19]
        assert "\x1b" not in "".join(lines)


async def test_a_click_on_container_sorts_by_it_and_s_moves_on(children: list[int]) -> None:
    app, _ = make_app()
    async with app.run_test(size=(200, 40)) as pilot:
        app.ingest(_snapshot(children, ["slurm job 1234", None, "docker 8a6e3c1f5b2d"]))
        await pilot.pause()
        table = app.query_one(ProcessTable)
        x = lines_of(table)[0].index("CONTAINER")
        await pilot.click(ProcessTable, offset=(x, 0))
        assert table.sort_key == "container"
        # Alphabetical, and a process in none last.
        assert [p.pid for p in table.rows] == [children[2], children[0], children[1]]
        await pilot.press("s")
        assert table.sort_key == "hint"


async def test_on_a_narrow_terminal_the_column_goes_first(children: list[int]) -> None:
    app, _ = make_app()
    async with app.run_test(size=(160, 40)) as pilot:
        app.ingest(_snapshot(children, [POD, None, None]))
        await pilot.pause()
        header = lines_of(app.query_one(ProcessTable))[0]
        assert "CONTAINER" in header and "USER" in header
        await pilot.resize_terminal(130, 40)
        await pilot.pause()
        header = lines_of(app.query_one(ProcessTable))[0]
        assert "CONTAINER" not in header and "USER" in header
