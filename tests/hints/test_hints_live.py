"""Buffered NVML samples through the real live source, into the hint engine.

The GPU is faked at nvitop's NVML boundary (tests/fake_nvml.py); the process
holding VRAM on it is real: a Python child spinning on one core, whose CPU the
live source measures from /proc like any other. Its loop is a 1 s sawtooth
(busy 0.5 s, idle 0.5 s) that NVML's once-a-second ``utilization.gpu`` averages
to a flat 45 %, while ``nvmlDeviceGetSamples`` -- one reading every 1/6 s --
shows the gaps. Real time passes (a few seconds per test): the sample buffer is
filled up to "now" before every tick, on an absolute 1/6 s grid.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Finding
from gputop_hints.history import History
from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import GIB, FakeGpu, FakeNvml, FakeProc

INTERVAL_S = 0.4
"""Tick period. The engine only trusts buffered samples at least twice as fine as a
tick (window.py: period <= interval / 2), so 1/6 s samples need ticks >= 1/3 s."""
SAMPLE_US = 1_000_000 / 6
"""NVML's buffered-sample period on data-centre GPUs."""
MAX_TICKS = 25
"""10 s at most; input-starved needs ~2 s of samples plus its 3 s raise_after_s."""
STEADY_TICKS = 12

BUSY_LOOP = "while True:\n    pass\n"


@pytest.fixture
def busy_pid() -> Iterator[int]:
    """A real process pegging one core: the training job's main process."""
    child = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait(timeout=10)


@dataclass
class SawtoothGpu:
    """A fake GPU whose driver buffer records a 1 s sawtooth in real time."""

    gpu: FakeGpu
    next_k: int = 0

    @classmethod
    def holding(cls, pid: int, *, samples: bool) -> SawtoothGpu:
        gpu = FakeGpu(
            0,
            sm=45,  # the flat 1 Hz reading
            mem=10,
            vram_used=7 * GIB,
            vram_total=80 * GIB,
            processes=[FakeProc(pid, used_bytes=6 * GIB, sm_util=None)],
            unsupported=set() if samples else {"samples"},
        )
        now_k = int(time.time() * 1e6 / SAMPLE_US)
        return cls(gpu, next_k=now_k - 12)

    def record_until_now(self) -> None:
        """Append the readings the driver took since the last call: 0 % then 100 %."""
        now_us = time.time() * 1e6
        while self.next_k * SAMPLE_US <= now_us:
            k = self.next_k
            value = 0 if k % 6 < 3 else 100
            self.gpu.sm_sample_buffer.append((round(k * SAMPLE_US), value))
            self.next_k += 1


def run_ticks(
    fake: SawtoothGpu, ticks: int, stop_when: str | None = None
) -> tuple[list[tuple[Finding, ...]], History]:
    """Tick the live source every INTERVAL_S, feeding the engine; all shown findings."""
    history = History(window_s=120.0, interval_s=INTERVAL_S)
    engine = HintEngine()
    shown: list[tuple[Finding, ...]] = []
    with FakeNvml([fake.gpu]):
        source = LiveSource(interval_s=INTERVAL_S)
        try:
            start = time.monotonic()
            for i in range(ticks):
                fake.record_until_now()
                history.append(source.sample())
                shown.append(engine.update(history))
                if stop_when is not None and any(f.rule == stop_when for f in shown[-1]):
                    break
                time.sleep(max(0.0, start + (i + 1) * INTERVAL_S - time.monotonic()))
        finally:
            source.close()
    return shown, history


def main_cpu(finding: Finding) -> float:
    [value] = [e.value for e in finding.evidence if e.metric == "main process CPU (mean)"]
    assert value is not None
    return value


def test_sub_second_samples_reveal_the_sawtooth(busy_pid: int) -> None:
    fake = SawtoothGpu.holding(busy_pid, samples=True)
    shown, history = run_ticks(fake, MAX_TICKS, stop_when="input-starved")

    snap = history.latest
    assert snap is not None and snap.gpus[0].sm_percent == 45.0
    assert snap.gpus[0].sm_samples, "the live source delivered no buffered samples"
    assert [p.pid for p in snap.processes] == [busy_pid]

    starved = [f for f in shown[-1] if f.rule == "input-starved"]
    assert starved, f"not raised in {len(shown)} ticks: {[f.label for f in shown[-1]]}"
    [f] = starved
    assert f.subject.pid == busy_pid and f.subject.gpu_index == 0
    gaps = [e for e in f.evidence if e.metric.startswith("time in idle gaps")]
    assert [e.metric for e in gaps] == ["time in idle gaps (sub-second samples)"]
    assert gaps[0].value is not None and 35 <= gaps[0].value <= 65  # half the time
    assert any(e.metric.startswith("per-process SM % not reported") for e in f.evidence)
    # The subtype follows the measured CPU of the real child: pegged (>= 85 % of a core)
    # on an idle machine, so num_workers=0; a busier machine may steal some of it.
    cpu = main_cpu(f)
    assert cpu > 30, "the busy child was not measured"
    if cpu >= 85:
        assert f.subtype == "num-workers-0"
    # No other rule mistakes the sawtooth for a steady small batch.
    assert all(g.rule != "small-batch" for s in shown for g in s)


def test_without_sub_second_samples_the_sawtooth_is_invisible(busy_pid: int) -> None:
    # Documented fallback (docs/metrics.md): only the once-per-tick reading, a flat 45 %.
    # No gaps, so never input-starved; with 6 of 80 GiB and a pegged main thread, the
    # job reads as small-batch -- the one thing that may show.
    fake = SawtoothGpu.holding(busy_pid, samples=False)
    shown, history = run_ticks(fake, STEADY_TICKS)

    assert all(s.gpus[0].sm_samples == () for s in history.snapshots)
    seen = {f.rule for s in shown for f in s}
    assert seen <= {"small-batch"}, seen
    assert not any("sub-second" in e.metric for s in shown for f in s for e in f.evidence)
    small = [f for f in shown[-1] if f.rule == "small-batch"]
    cpus = history.process(busy_pid, 0)
    assert cpus is not None
    measured = cpus.cpu_percent.known()
    if measured and min(measured) >= 85:  # pegged on every tick: small-batch must show
        assert small, [f.label for f in shown[-1]]
    for f in small:
        gaps = [e for e in f.evidence if e.metric.startswith("time in idle gaps")]
        # the evidence says how coarse the trace behind "no gaps" was
        assert [e.metric for e in gaps] == ["time in idle gaps (1 per tick)"]
        assert gaps[0].value == 0
