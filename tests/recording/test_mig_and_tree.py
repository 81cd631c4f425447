"""What a recording once dropped, kept now: MIG instances and the processes' places on
them (issue 16), and the process tree (launchers) -- so ``replay`` shows what the live
monitor showed. Older recordings, without them, still read, with the fields unknown."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gputop_hints.model import Snapshot
from gputop_hints.recording import RecordingWriter
from gputop_hints.recording.reader import open_recording
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.sources.replay import ReplaySource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.widgets.gpu_panel import GpuPanel
from gputop_hints.tui.widgets.process_table import ProcessTable
from tests.recording.mig_tree import mig_and_tree_snapshots
from tests.sources.live.helpers import mig_gpu
from tests.support.fake_nvml import FakeGpu, FakeNvml
from tests.support.paths import REPO

OLD_FIXTURE = REPO / "tests" / "fixtures" / "recording" / "v1-before-mig-and-tree.jsonl"
"""Written by the recorder before MIG and launchers were kept: three ticks of
:func:`mig_and_tree_snapshots`, which that recorder wrote without either."""


def write(path: Path, snapshots: list[Snapshot]) -> None:
    with RecordingWriter(path) as writer:
        for snap in snapshots:
            writer.write(snap)


def reconfigured(snapshots: list[Snapshot]) -> list[Snapshot]:
    """From the third tick on, GPU 0's idle 1g instance is destroyed (``nvidia-smi mig
    -dci``) and the torchrun's command line is another one (a new launcher, same pid)."""
    out = list(snapshots[:2])
    for snap in snapshots[2:]:
        gpus = tuple(
            dataclasses.replace(g, mig_instances=(g.mig_instances[0], g.mig_instances[2]))
            if g.mig_instances
            else g
            for g in snap.gpus
        )
        launchers = tuple(
            dataclasses.replace(launcher, command="torchrun --nproc-per-node=4 other.py")
            for launcher in snap.launchers
        )
        out.append(dataclasses.replace(snap, gpus=gpus, launchers=launchers))
    return out


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_mig_instances_and_launchers_read_back_exactly(tmp_path: Path, name: str) -> None:
    snapshots = reconfigured(mig_and_tree_snapshots(5))
    assert snapshots[0].gpus[0].mig_mode and len(snapshots[0].gpus[0].mig_instances) == 3
    assert snapshots[0].launchers and snapshots[0].processes[0].mig_instance == (1, 0)
    path = tmp_path / name
    write(path, snapshots)
    stream = open_recording(path)
    got = list(stream)
    assert stream.counters.bad_lines == 0
    assert got == snapshots
    assert [m.key for m in got[-1].gpus[0].mig_instances] == [(1, 0), (6, 0)]
    assert got[-1].launchers[0].command == "torchrun --nproc-per-node=4 other.py"
    assert [launcher.cpu_percent for snap in got for launcher in snap.launchers] == [
        0.5,
        1.5,
        2.5,
        3.5,
        4.5,
    ]


def test_a_live_mig_gpu_over_fake_nvml_reads_back_exactly(tmp_path: Path) -> None:
    with FakeNvml([mig_gpu(gpm=True), FakeGpu(1)]):
        source = LiveSource(detect_job=False)
        try:
            snapshots = [source.sample() for _ in range(3)]
        finally:
            source.close()
    assert snapshots[-1].gpus[0].mig_mode and not snapshots[-1].gpus[1].mig_mode
    assert any(p.mig_instance == (1, 0) for p in snapshots[-1].processes)
    path = tmp_path / "live.jsonl"
    write(path, snapshots)
    assert list(open_recording(path)) == snapshots


def test_a_recording_from_before_mig_and_launchers_reads_them_as_unknown() -> None:
    stream = open_recording(OLD_FIXTURE)
    got = list(stream)
    assert stream.counters.bad_lines == 0
    assert stream.info.detail == "gputop-hints recording v1"
    expected = []
    for snap in mig_and_tree_snapshots(3):
        gpus = tuple(dataclasses.replace(g, mig_mode=False, mig_instances=()) for g in snap.gpus)
        procs = tuple(
            dataclasses.replace(p, launcher_pid=None, mig_instance=None) for p in snap.processes
        )
        expected.append(dataclasses.replace(snap, gpus=gpus, processes=procs, launchers=()))
    assert got == expected


def test_a_damaged_launcher_or_mig_entry_is_left_out_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    write(path, mig_and_tree_snapshots(2))
    lines = path.read_text().splitlines()
    # The launcher record lost (a cut or edited file); in the last tick, the first MIG
    # instance's id is not a number.
    lines = [line for line in lines if not line.startswith('{"type":"launcher"')]
    mig = lines[-1].index("[1,0,")
    assert lines[-1][mig - 1 : mig] == "," and "null" in lines[-1][mig - 20 : mig]
    lines[-1] = lines[-1][:mig] + '["one",0,' + lines[-1][mig + 5 :]
    path.write_text("\n".join(lines) + "\n")
    got = list(open_recording(path))
    assert len(got) == 2
    assert got[0].launchers == ()  # its ranks stand at the top of the tree
    assert got[0].processes[0].launcher_pid == 3900
    assert [m.key for m in got[1].gpus[0].mig_instances] == [(5, 0), (6, 0)]


# --- what replay shows -------------------------------------------------------------------

SIZE = (160, 50)


async def _screen_of(replay: ReplaySource | None, snaps: list[Snapshot]) -> dict[str, object]:
    """GPU 0's panel, the process table and the tree view (``t``) after ``snaps``, fed
    from ``replay`` (through the real reader) when given, else directly."""
    app = GputopApp(DemoSource("straggler", seed=0), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        for snap in snaps:
            app.ingest(snap if replay is None else replay.sample())
        await pilot.pause()
        panel = app.query_one("#gpu-0", GpuPanel).text_lines()
        table = app.query_one(ProcessTable)
        flat = table.text_lines()
        await pilot.press("t")
        await pilot.pause()
        tree = [(row.kind, row.depth, row.pid) for row in table.tree_rows]
        tree_text = table.text_lines()
    return {"panel": panel, "table": flat, "tree": tree, "tree_text": tree_text}


async def test_replay_shows_the_mig_rows_and_the_tree_the_live_monitor_showed(
    tmp_path: Path,
) -> None:
    snaps = mig_and_tree_snapshots(3)
    path = tmp_path / "run.jsonl.gz"
    write(path, snaps)
    live = await _screen_of(None, snaps)
    replay = ReplaySource(path)
    try:
        replayed = await _screen_of(replay, snaps)
    finally:
        replay.close()
    assert replayed == live
    panel = live["panel"]
    assert isinstance(panel, list)
    assert [row.split()[1] for row in panel[6:9]] == ["3g.40gb", "1g.10gb", "GI"]
    table = live["table"]
    assert isinstance(table, list) and "GPU/MIG" in table[0]
    assert any(line.split()[:3] == ["4000", "erin", "0/3g.40gb"] for line in table)
    assert live["tree"] == [("launcher", 0, 3900)] + [
        ("process", 1, pid) for pid in (4000, 4200, 4400, 4600)
    ]
    tree_text = live["tree_text"]
    assert isinstance(tree_text, list)
    assert any("torchrun --nproc-per-node=4" in line for line in tree_text)
