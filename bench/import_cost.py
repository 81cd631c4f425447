"""What starting gputop-hints costs before it samples: the CPU time of its imports.

Runs fresh interpreters, alternating, each importing what one command needs and
printing its own CPU time (``time.process_time`` from before the first import to
after the last; the interpreter's own start is the same for every row and left out):

* ``once``: ``--once``'s path -- the CLI, the summary, the hint rules and their
  thresholds (``Thresholds.defaults()``), the live source;
* ``monitor``: the same plus the TUI (Textual).

each with dataclasses' generated methods compiled at that start
(``GPUTOP_HINTS_NO_CLASS_CACHE=1``) and read from the user's compiled-class cache
(gputop_hints/_classcache.py; written first by one run with bytecode writing on, into a
cache home of its own under /tmp). It prints the median (min-max) of each and the share
the cache saves::

    PYTHONPATH=. .venv/bin/python bench/import_cost.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

IMPORTS = {
    "once": (
        "import gputop_hints.cli.monitor, gputop_hints.outputs.summary, "
        "gputop_hints.sources.live\n"
        "from gputop_hints.hints.thresholds import Thresholds\nThresholds.defaults()"
    ),
    "monitor": (
        "import gputop_hints.cli.monitor, gputop_hints.outputs.summary, "
        "gputop_hints.sources.live, gputop_hints.tui.app\n"
        "from gputop_hints.hints.thresholds import Thresholds\nThresholds.defaults()"
    ),
}


def one(what: str, cache_home: str, cached: bool, write: bool = False) -> float:
    """CPU ms of one fresh interpreter's imports for ``what``."""
    code = (
        "import time\nstarted = time.process_time()\n"
        f"{IMPORTS[what]}\nprint((time.process_time() - started) * 1000.0)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE" or not write}
    env.update(PYTHONPATH=str(ROOT), XDG_CACHE_HOME=cache_home)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # the measured runs leave the cache as it is
    if not cached:
        env["GPUTOP_HINTS_NO_CLASS_CACHE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    return float(out.stdout.strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="import-cost-") as home:
        one("monitor", home, cached=True, write=True)  # the first start writes the cache
        print(f"imports, CPU ms, {args.runs} runs each, alternating ({os.cpu_count()} CPUs):")
        print(f"  {'path':<8} {'compiled at start':>24} {'from the cache':>24}  saved")
        for what in IMPORTS:
            runs: dict[bool, list[float]] = {False: [], True: []}
            for i in range(args.runs):
                for cached in (i % 2 == 0, i % 2 != 0):
                    runs[cached].append(one(what, home, cached))
            cold, warm = statistics.median(runs[False]), statistics.median(runs[True])
            print(
                f"  {what:<8} {_spread(runs[False]):>24} {_spread(runs[True]):>24}  "
                f"{(1 - warm / cold) * 100:4.0f} %"
            )
    return 0


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


if __name__ == "__main__":
    sys.exit(main())
