"""What a busy host costs the live source: ms of CPU per tick with ~100 vs 2,000
host processes.

The live source reads ``/proc/<pid>/stat`` of every host process on a full
pass (some µs each). Here it samples a fake node (``--gpus`` GPUs listing
``--processes`` real sleeping processes, bench/fake_node.py) while the host
holds each count of ``--hosts`` processes (topped up with sleeping
processes; a count below what the host already has reads as that). CPU per
tick is the process's CPU time (all threads: the NVML workers too) across
``--ticks`` ticks ``--interval`` apart, after two warm-up ticks.

Two modes per host count: ``every-tick`` (a full pass every tick, as before
issue 13) and ``rescan`` (a full pass every ``--rescan-ticks`` ticks, as
:data:`~gputop_hints.sources.live.procfs.FULL_RESCAN_S` = 5 s gives at 1 Hz).
The % of a core is at 1 Hz::

    PYTHONPATH=. .venv/bin/python bench/proc_scan_cost.py [--hosts 100,2000] [--ticks 25]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_node import gpus_for, home_count, spawn_sleepers, stop  # beside this file

from gputop_hints.sources.live import procfs
from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import FakeNvml


def ms_per_tick(gpus: int, pids: list[int], ticks: int, interval: float) -> list[float]:
    """CPU ms of each of ``ticks`` live-source ticks on the fake node."""
    out: list[float] = []
    with FakeNvml(gpus_for(gpus, pids)):
        source = LiveSource(interval, detect_job=False)
        try:
            for _ in range(2):
                source.sample()
                time.sleep(interval)
            for _ in range(ticks):
                before = time.process_time()
                source.sample()
                out.append(1000.0 * (time.process_time() - before))
                time.sleep(interval)
        finally:
            source.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--processes", type=int, default=64, help="GPU processes in all (64)")
    parser.add_argument("--hosts", default="100,2000", help="host process counts (100,2000)")
    parser.add_argument("--ticks", type=int, default=25)
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between ticks")
    parser.add_argument("--rescan-ticks", type=int, default=5, help="full pass every N (5)")
    args = parser.parse_args()
    scanner = "ProcScanner" if hasattr(procfs, "ProcScanner") else "no ProcScanner: full pass"
    modes = {"every-tick": 0.0, "rescan": args.rescan_ticks * args.interval}
    if not hasattr(procfs, "ProcScanner"):
        modes = {"every-tick": 0.0}
    print(
        f"live source on {args.gpus} GPUs x {args.processes} processes, {args.ticks} ticks "
        f"{args.interval:g} s apart ({scanner}); CPU % of a core at 1 Hz"
    )
    gpu_sleepers = spawn_sleepers(args.processes)
    pids = [p.pid for p in gpu_sleepers]
    fillers: list[subprocess.Popen[bytes]] = []
    results: dict[tuple[str, int], float] = {}
    try:
        for target in (int(v) for v in args.hosts.split(",")):
            fillers += spawn_sleepers(max(0, target - home_count()))
            hosts = home_count()
            for mode, rescan_s in modes.items():
                procfs.FULL_RESCAN_S = rescan_s  # read when the source's scanner is made
                ms = ms_per_tick(args.gpus, pids, args.ticks, args.interval)
                mean = statistics.fmean(ms)
                results[(mode, target)] = mean
                print(
                    f"  {hosts:5d} host processes, {mode:<10}: {mean:6.2f} ms/tick mean "
                    f"(median {statistics.median(ms):.2f}, max {max(ms):.2f}) = "
                    f"{mean / 10:.2f} % of a core"
                )
    finally:
        stop(fillers)
        stop(gpu_sleepers)
    counts = [int(v) for v in args.hosts.split(",")]
    if len(counts) == 2:
        for mode in modes:
            extra = results[(mode, counts[1])] - results[(mode, counts[0])]
            print(f"  {mode:<10}: {counts[1]} vs {counts[0]} costs {extra / 10:+.2f} % of a core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
