"""The host side of a tick: per-core CPU, iowait, memory, load, allowed cores."""

from __future__ import annotations

import os
import time

import psutil

from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import FakeNvml, make_gpus

# -- host ------------------------------------------------------------------------------


def test_host_cores_are_unknown_on_the_first_tick_then_measured() -> None:
    with FakeNvml(make_gpus(1)):
        source = LiveSource()
        first = source.sample().host
        time.sleep(0.3)
        second = source.sample().host
    cores = psutil.cpu_count()
    assert len(first.cpu_percent_per_core) == cores
    assert first.cpu_percent_per_core == (None,) * cores  # no delta yet: unknown, not 0
    assert all(v is not None and 0 <= v <= 100 for v in second.cpu_percent_per_core)
    assert second.iowait_percent is not None and 0 <= second.iowait_percent <= 100
    assert second.allowed_cores == tuple(sorted(os.sched_getaffinity(0)))
    assert second.memory_total_bytes == psutil.virtual_memory().total
    assert second.memory_used_bytes is not None
    assert 0 < second.memory_used_bytes < second.memory_total_bytes
    assert second.load_average is not None
    assert second.hostname == first.hostname != ""
