"""What the monitor costs over a slow SSH link: bytes written to the terminal per second.

Runs the demo (8 GPUs, 64 processes, 1 Hz) in pseudo-terminals of 160x50 and
80x24 and prints bytes per second in the steady state, plus the one-off cost
of the first screen. Uses the same pty harness as bench/overhead.py.

    python bench/terminal_bytes.py [--duration 30]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import run  # the shared pty harness beside this file

TARGET_KB_S = 8.0
"""The project's target at 160x50 (issue: 'keep it small, under 8 KB/s')."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30.0, help="measured seconds (30)")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--processes", type=int, default=64)
    args = parser.parse_args()
    print(
        f"gputop-hints --demo mixed --gpus {args.gpus} --processes {args.processes} at 1 Hz, "
        f"{args.duration:g} s per size"
    )
    for size in ("160x50", "80x24"):
        ns = argparse.Namespace(
            duration=args.duration,
            warmup=5.0,
            size=size,
            gpus=args.gpus,
            processes=args.processes,
            scenario="mixed",
            interval=1.0,
            keys=0,
        )
        result = run(ns)
        kb_s = result["terminal_bytes_per_s"] / 1000
        mark = ""
        if size == "160x50":
            mark = "  (target < 8 KB/s: " + ("met" if kb_s < TARGET_KB_S else "NOT met") + ")"
        first_kb = result["startup_bytes"] / 1000
        cpu = result["cpu_percent_of_one_core"]
        print(
            f"  {size:>7}: {kb_s:6.2f} KB/s steady{mark}; first screen {first_kb:.1f} KB; "
            f"CPU {cpu:.2f} %"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
