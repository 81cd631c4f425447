"""A monitor left beside a node that runs short jobs for a week: what it keeps per
process must not grow with the number of processes that have come and gone.

16,000 distinct GPU processes pass through the live source on the fake NVML (8 GPUs,
25 short-lived ones on each, all replaced every tick: 80 ticks), and the source, the history and the
hint engine keep per-process records only for the processes listed now and a bounded
number that just left (:data:`~gputop_hints.history.MAX_GONE_PROCESSES`, for the
detail view and the hints to explain an exit). The pids are not on this host (as GPU
processes in another container are not); two real long-lived processes run beside
them, whose host-side records must be kept. Counts are asserted, never bytes or time.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.history import MAX_GONE_PROCESSES
from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import FakeNvml, FakeProc, make_gpus

GPUS = 8
PER_GPU = 25
DISTINCT = 16_000
FIRST_PID = 3_000_000
"""Above any pid this host hands out in the test's lifetime: processes it cannot see."""


@pytest.fixture
def sleepers() -> Iterator[list[int]]:
    procs = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) for _ in range(2)
    ]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_sixteen_thousand_short_lived_processes_leave_a_bounded_number_of_records(
    sleepers: list[int],
) -> None:
    gpus = make_gpus(GPUS, [[pid] for pid in sleepers])
    fresh = iter(range(FIRST_PID, FIRST_PID + DISTINCT))
    for gpu in gpus:
        gpu.processes += [FakeProc(next(fresh), sm_util=50) for _ in range(PER_GPU)]
    live = len(sleepers) + GPUS * PER_GPU
    seen = live - len(sleepers)
    most = {"history": 0, "engine": 0, "tracked": 0}
    with FakeNvml(gpus):
        source = LiveSource(1.0, detect_job=False)
        diagnoser = Diagnoser(interval_s=1.0)
        try:
            while seen < DISTINCT:
                for gpu in gpus:  # every short-lived process ends, as many new ones start
                    kept = [p for p in gpu.processes if p.pid < FIRST_PID]
                    gpu.processes = kept + [
                        FakeProc(next(fresh), sm_util=50) for _ in range(PER_GPU)
                    ]
                    seen += PER_GPU
                snap = source.sample()
                assert len(snap.processes) == live
                diagnoser.feed(snap)
                engine = diagnoser.engine
                most["history"] = max(most["history"], len(diagnoser.history.processes))
                most["engine"] = max(
                    most["engine"],
                    len(engine._process_active_at),
                    len(engine._vram_steady_since),
                    len(engine._tracks),
                )
                most["tracked"] = max(most["tracked"], source.tracked_pids)
        finally:
            source.close()
    assert seen >= DISTINCT
    # The history keeps the processes listed now and at most MAX_GONE_PROCESSES gone ones.
    assert most["history"] <= live + MAX_GONE_PROCESSES
    # The engine's per-process records are for the processes listed now (or a finding
    # still shown about one); the source's host-side records only for pids it can see.
    assert most["engine"] <= live + MAX_GONE_PROCESSES
    assert most["tracked"] <= len(sleepers)
    # The long-lived processes (one on each of the first GPUs) are all still there.
    for index, pid in enumerate(sleepers):
        assert diagnoser.history.process(pid, index) is not None
