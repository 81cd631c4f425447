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

``--instructions`` counts instead, with valgrind's cachegrind (instructions do not
depend on what else runs on the machine, as CPU time does): the one-shot commands of
``bench/vs_nvitop.py``'s once row on its fake node (1 GPU, one real sleeping process),
``gputop-hints --once --duration 0.25 --interval 0.25`` from each ``--tree`` given (this
tree by default; another checkout, e.g. main's, to compare) and ``nvitop --once`` and
the launcher alone (``fake_node.py ... none``) from this one, each ``--runs`` times
(median), with the compiled-class cache written first as an installed copy's first
start does -- each tree into a cache home of its own under /tmp (``XDG_CACHE_HOME``), so
that the count does not depend on what other checkouts and versions left in the
user's cache file (each adds its classes' texts: it is read whole at every start)::

    PYTHONPATH=. .venv/bin/python bench/import_cost.py --instructions [--tree ../main] [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import re
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


ONCE_GOAL = 1.2
"""Issue 49 item 3: ``--once`` at most this many times ``nvitop --once``'s CPU."""

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(
    tree: Path, program: str, args: list[str], pids_file: Path, cache_home: str
) -> int:
    """Instructions one run of ``program`` on the fake node executes (whole process)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree), XDG_CACHE_HOME=cache_home)
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    command += [sys.executable, str(tree / "bench" / "fake_node.py"), "--gpus", "1"]
    command += ["--pids-file", str(pids_file), program, *args]
    out = subprocess.run(
        command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    found = _REFS.search(out.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from cachegrind: {out.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def instruction_rows(trees: list[Path], runs: int) -> None:
    """Print the once row in millions of instructions (see the module's docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fake_node import spawn_sleepers, stop

    once = ["--once", "--duration", "0.25", "--interval", "0.25"]
    sleepers = spawn_sleepers(1)
    fd, name = tempfile.mkstemp(prefix="import-cost-pids-")
    os.close(fd)
    pids_file = Path(name)
    pids_file.write_text(f"{sleepers[0].pid}\n")
    homes = [tempfile.TemporaryDirectory(prefix="import-cost-classes-") for _ in trees]
    try:
        rows: dict[str, list[int]] = {}
        for tree, home in zip(trees, homes, strict=True):
            # compiles the tree and writes its class cache, as an installed copy's first start
            instructions(tree, "ours", once, pids_file, home.name)
        for _ in range(runs):
            for tree, home in zip(trees, homes, strict=True):
                rows.setdefault(f"ours {tree}", []).append(
                    instructions(tree, "ours", once, pids_file, home.name)
                )
            rows.setdefault("nvitop --once", []).append(
                instructions(ROOT, "nvitop", ["--once"], pids_file, homes[0].name)
            )
            rows.setdefault("launcher alone", []).append(
                instructions(ROOT, "none", [], pids_file, homes[0].name)
            )
    finally:
        stop(sleepers)
        pids_file.unlink(missing_ok=True)
        for home in homes:
            home.cleanup()
    nvitop = statistics.median(rows["nvitop --once"])
    floor = statistics.median(rows["launcher alone"])
    print(f"once on the fake node (1x1), millions of instructions (cachegrind), median of {runs}:")
    for label, counts in rows.items():
        m = statistics.median(counts)
        print(
            f"  {label:<40} {m / 1e6:8.1f}  less launcher {(m - floor) / 1e6:7.1f}  "
            f"x nvitop {m / nvitop:5.2f}"
        )
    print(f"  goal: x nvitop <= {ONCE_GOAL} ({ONCE_GOAL * nvitop / 1e6:.1f} M)")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--instructions", action="store_true", help="count the once row's instructions"
    )
    parser.add_argument(
        "--tree",
        type=Path,
        action="append",
        help="a checkout whose --once to count too (--instructions; repeatable)",
    )
    args = parser.parse_args()
    if args.instructions:
        trees = [ROOT, *(t.resolve() for t in args.tree or [])]
        instruction_rows(trees, args.runs)
        return 0
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
