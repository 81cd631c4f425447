"""What the hint engine costs a tick: the demo's big node (8 GPUs, 64 processes).

Feeds ``--ticks`` snapshots of a demo scenario at 1 Hz simulated time through a
:class:`~gputop_hints.hints.diagnoser.Diagnoser` as the monitor does (append, then
evaluate), after ``--warm`` ticks that fill the window, and prints the median, p95
and max of the engine's own cost per tick (``HintEngine.last_cost_s``, wall time on
this machine). Goal (issue 23): median <= 3 ms at 8 x 64.

Wall time moves with the machine's load; two figures that do not (much) come with it:
the median CPU time of a tick (``time.process_time``) and, with ``--calls``, the Python
calls a tick makes (the measured ticks run again under cProfile, on a copy of the state).

    .venv/bin/python bench/engine_cost.py [--gpus 8] [--processes 64] [--ticks 300] [--calls]
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import os
import pstats
import statistics
import sys
import time

from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.sources.demo import DemoSource


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenario", default="mixed")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--ticks", type=int, default=300, help="ticks measured")
    parser.add_argument("--warm", type=int, default=150, help="ticks fed first, not measured")
    parser.add_argument(
        "--calls", action="store_true", help="also count the Python calls a tick makes"
    )
    args = parser.parse_args(argv)
    source = DemoSource(args.scenario, gpus=args.gpus, processes=args.processes)
    diagnoser = Diagnoser(Thresholds.defaults(), interval_s=1.0)
    for _ in range(args.warm):
        diagnoser.append(source.sample())
        diagnoser.evaluate()
    snaps = [source.sample() for _ in range(args.ticks)]
    profiled = copy.deepcopy(diagnoser) if args.calls else None
    costs: list[float] = []
    cpu: list[float] = []
    for snap in snaps:
        diagnoser.append(snap)
        started = time.process_time()
        diagnoser.evaluate()
        cpu.append((time.process_time() - started) * 1000.0)
        costs.append(diagnoser.engine.last_cost_s * 1000.0)
    costs.sort()
    p95 = costs[min(len(costs) - 1, round(0.95 * (len(costs) - 1)))]
    print(
        f"hint engine, {args.scenario} {args.gpus} GPUs x {args.processes} processes, "
        f"{len(costs)} ticks after {args.warm} ({os.cpu_count()} CPUs here):"
    )
    print(
        f"  median {statistics.median(costs):.2f} ms  p95 {p95:.2f} ms  max {costs[-1]:.2f} ms "
        "per tick (goal: median <= 3 ms)"
    )
    print(f"  CPU time: median {statistics.median(cpu):.2f} ms per tick")
    if profiled is not None:
        profile = cProfile.Profile()
        for snap in snaps:
            profiled.append(snap)
            profile.enable()
            profiled.evaluate()
            profile.disable()
        stats = pstats.Stats(profile)
        calls = sum(row[1] for row in stats.stats.values())  # type: ignore[attr-defined]
        print(f"  Python calls: {calls / len(snaps):.0f} per tick")
    return 0


if __name__ == "__main__":
    sys.exit(main())
