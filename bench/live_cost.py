"""What one live tick costs on this machine's real driver, and GPM's share of it.

For the real-hardware check (bench/gpu_check.sh): the live source samples every GPU
``--ticks`` times ``--interval`` apart, after two warm-up ticks; each tick's wall time
and this process's CPU time (all threads: the NVML workers too) are taken, and the
time spent in GPM (``GpmReader.read``: one ``nvmlGpmSampleGet`` and one
``nvmlGpmMetricsGet`` per GPU) is summed apart. It prints the medians, the GPM calls'
share, and each GPU's last GPM reading or why it has none::

    python bench/live_cost.py [--ticks 30] [--interval 1] [--fake]

``--fake`` runs it on the tests' fake NVML (one H100-like GPU with GPM), to check the
script on a machine without a GPU; its figures say nothing about a driver.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputop_hints.model import PROFILING_FIELDS
from gputop_hints.sources.live import nvml_gpm
from gputop_hints.sources.live.source import LiveSource


@contextlib.contextmanager
def gpm_timed(spent: list[float]) -> Iterator[None]:
    """Add the wall time of every GpmReader.read to ``spent[0]`` while inside."""
    original = nvml_gpm.GpmReader.read

    def timed(self: nvml_gpm.GpmReader, handle: Any) -> nvml_gpm.Profiling:
        start = time.perf_counter()
        try:
            return original(self, handle)
        finally:
            spent[0] += time.perf_counter() - start

    nvml_gpm.GpmReader.read = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        nvml_gpm.GpmReader.read = original  # type: ignore[method-assign]


def measure(ticks: int, interval: float) -> int:
    spent = [0.0]
    walls: list[float] = []
    cpus: list[float] = []
    gpms: list[float] = []
    with gpm_timed(spent):
        source = LiveSource(interval, detect_job=False)
        try:
            snap = None
            for i in range(ticks + 2):
                spent[0] = 0.0
                wall, cpu = time.perf_counter(), time.process_time()
                snap = source.sample()
                if i >= 2:
                    walls.append(1000.0 * (time.perf_counter() - wall))
                    cpus.append(1000.0 * (time.process_time() - cpu))
                    gpms.append(1000.0 * spent[0])
                time.sleep(interval)
        finally:
            source.close()
    assert snap is not None
    print(f"GPUs {len(snap.gpus)}, processes {len(snap.processes)}, ticks {ticks}")
    print(
        f"per tick (median): wall {statistics.median(walls):.2f} ms, "
        f"CPU {statistics.median(cpus):.2f} ms, in GPM {statistics.median(gpms):.3f} ms "
        f"({100.0 * statistics.median(gpms) / max(statistics.median(walls), 1e-9):.1f} % of "
        f"the wall time)"
    )
    for gpu in snap.gpus:
        values = ", ".join(
            f"{name.removesuffix('_percent')} {getattr(gpu, name)}" for name in PROFILING_FIELDS
        )
        print(f"GPU {gpu.index} {gpu.name}: SM {gpu.sm_percent} %, {values}")
        if gpu.profiling_unavailable:
            print(f"  no GPM: {gpu.profiling_unavailable}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--fake", action="store_true", help="the tests' fake NVML, not a GPU")
    args = parser.parse_args(argv)
    if not args.fake:
        return measure(args.ticks, args.interval)
    from tests.support.fake_nvml import FakeGpu, FakeNvml

    gpm = {m: 50.0 for m in nvml_gpm.METRICS}
    with FakeNvml([FakeGpu(0, gpm=gpm)]):
        return measure(args.ticks, args.interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
