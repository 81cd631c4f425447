"""What the hint engine costs a tick: the demo's big node (8 GPUs, 64 processes).

Feeds ``--ticks`` snapshots of a demo scenario at 1 Hz simulated time through a
:class:`~gputop_hints.hints.diagnoser.Diagnoser` as the monitor does (append, then
evaluate), after ``--warm`` ticks that fill the window, and prints the median, p95
and max of the engine's own cost per tick (``HintEngine.last_cost_s``, wall time on
this machine). Goal (issue 23): median <= 3 ms at 8 x 64.

    .venv/bin/python bench/engine_cost.py [--gpus 8] [--processes 64] [--ticks 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

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
    args = parser.parse_args(argv)
    source = DemoSource(args.scenario, gpus=args.gpus, processes=args.processes)
    diagnoser = Diagnoser(Thresholds.defaults(), interval_s=1.0)
    costs: list[float] = []
    for i in range(args.warm + args.ticks):
        diagnoser.append(source.sample())
        diagnoser.evaluate()
        if i >= args.warm:
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
