"""--only-visible: only the GPUs this shell's CUDA_VISIBLE_DEVICES names."""

from __future__ import annotations

import os

import pytest

from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import FakeNvml, make_gpus


def _sample(environ: dict[str, str], only_visible: bool = True) -> tuple[list[int], list[int]]:
    me = os.getpid()
    with FakeNvml(make_gpus(4, [[me], [], [me], [me]])):
        source = LiveSource(detect_job=False, environ=environ, only_visible=only_visible)
        snap = source.sample()
        source.close()
    return [g.index for g in snap.gpus], [p.gpu_index for p in snap.processes]


@pytest.mark.parametrize(
    ("value", "gpus", "procs"),
    [
        ("2,0", [0, 2], [0, 2]),
        ("3", [3], [3]),
        ("1,x,3", [1], []),  # CUDA stops at the first invalid entry
        ("", [], []),  # set but empty: CUDA sees no device
    ],
)
def test_only_the_visible_gpus_and_their_processes_are_sampled(
    value: str, gpus: list[int], procs: list[int]
) -> None:
    assert _sample({"CUDA_VISIBLE_DEVICES": value}) == (gpus, procs)


def test_unset_or_not_asked_for_means_every_gpu() -> None:
    assert _sample({}) == ([0, 1, 2, 3], [0, 2, 3])
    assert _sample({"CUDA_VISIBLE_DEVICES": "1"}, only_visible=False) == (
        [0, 1, 2, 3],
        [0, 2, 3],
    )


def test_the_source_says_which_gpus_it_shows() -> None:
    me = os.getpid()
    with FakeNvml(make_gpus(4, [[me], [], [me], [me]])):
        source = LiveSource(
            detect_job=False, environ={"CUDA_VISIBLE_DEVICES": "2,0"}, only_visible=True
        )
        snap = source.sample()
        source.close()
    assert snap.source_detail.endswith(", only GPUs 0,2 (CUDA_VISIBLE_DEVICES)")
