"""Replay: a recording played back as a Source, with seeking and speed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gputop_hints.hints.engine import HintEngine
from gputop_hints.history import History
from gputop_hints.model import Snapshot
from gputop_hints.recording import RecordingWriter
from gputop_hints.recording.reader import open_recording
from gputop_hints.sources import Source
from gputop_hints.sources import replay as replay_module
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.replay import ReplayEmpty, ReplaySource


def recorded(path: Path, n: int, scenario: str = "mixed") -> list[Snapshot]:
    source = DemoSource(scenario, gpus=2, processes=6)
    snaps = [source.sample() for _ in range(n)]
    with RecordingWriter(path) as writer:
        for s in snaps:
            writer.write(s)
    return snaps


def as_recorded(snap: Snapshot, original: Snapshot) -> Snapshot:
    return dataclasses.replace(snap, source=original.source, source_detail=original.source_detail)


def ended(source: ReplaySource) -> bool:
    return source.at_end


@pytest.fixture(params=["run.jsonl", "run.jsonl.gz"])
def recording(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, list[Snapshot]]:
    path = tmp_path / request.param
    return path, recorded(path, 700)


def test_replay_is_a_source_that_returns_the_recorded_ticks(
    recording: tuple[Path, list[Snapshot]],
) -> None:
    path, snaps = recording
    source = ReplaySource(path)
    assert isinstance(source, Source)
    assert source.kind == "replay" and source.simulated
    got = [source.sample() for _ in range(len(snaps))]
    assert [as_recorded(g, s) for g, s in zip(got, snaps, strict=True)] == snaps
    assert got[0].source == "replay"
    assert path.name in got[0].source_detail and "demo" in got[0].source_detail
    assert source.at_end
    # At the end the last tick repeats.
    assert source.sample().timestamp == snaps[-1].timestamp
    assert source.end_time == snaps[-1].timestamp
    source.close()


def test_hints_on_replay_match_hints_live(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    snaps = recorded(path, 200, "starved-loader")
    source = ReplaySource(path)

    def run(ticks: list[Snapshot]) -> list[tuple[str, ...]]:
        engine = HintEngine()
        history = History()
        out = []
        for s in ticks:
            history.append(s)
            out.append(tuple(f.rule_label + str(f.subject) for f in engine.update(history)))
        return out

    assert run([source.sample() for _ in snaps]) == run(snaps)


def test_seek_step_start_end(recording: tuple[Path, list[Snapshot]]) -> None:
    path, snaps = recording
    source = ReplaySource(path)
    assert source.start_time == snaps[0].timestamp
    for _ in range(500):
        source.sample()
    assert source.position == snaps[499].timestamp
    source.seek(snaps[100].timestamp)  # backwards
    assert source.step().timestamp == snaps[100].timestamp
    source.seek(snaps[650].timestamp - 0.5)  # forwards, between ticks
    assert source.sample().timestamp == snaps[650].timestamp
    source.seek(snaps[300].timestamp)
    assert as_recorded(source.sample(), snaps[300]) == snaps[300]
    source.seek_end()
    assert source.sample().timestamp == snaps[-1].timestamp
    assert source.at_end and source.end_time == snaps[-1].timestamp
    source.seek_start()
    assert not ended(source)
    assert source.sample().timestamp == snaps[0].timestamp
    source.seek(snaps[-1].timestamp + 1000)  # past the end: the last tick
    assert source.sample().timestamp == snaps[-1].timestamp
    source.close()


def test_plain_files_know_their_end_at_once_and_index_sparsely(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    snaps = recorded(path, 700)
    source = ReplaySource(path)
    assert source.end_time == snaps[-1].timestamp
    source.seek_end()
    assert 2 <= len(source._index) <= 700 // replay_module.INDEX_EVERY + 2
    source.seek(snaps[600].timestamp)
    assert source.sample().timestamp == snaps[600].timestamp


def test_speed_is_clamped_and_sets_the_pace(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    recorded(path, 3)
    source = ReplaySource(path, speed=8)
    assert source.tick_interval_s == pytest.approx(1 / 8)
    source.speed = 1000
    assert source.speed == 64
    source.speed = 0.1
    assert source.speed == 1


def test_a_stream_factory_replays_too(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    snaps = recorded(path, 20)
    source = ReplaySource(lambda: open_recording(path))
    source.seek(snaps[10].timestamp)
    assert source.sample().timestamp == snaps[10].timestamp
    source.seek(snaps[2].timestamp)
    assert source.sample().timestamp == snaps[2].timestamp


def test_an_empty_recording_cannot_be_replayed(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(ReplayEmpty):
        ReplaySource(path)
