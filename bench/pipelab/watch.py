"""The real TUI on the lab's simulated GPU, in a terminal of its own (docs/lab.md).

The fake NVML works only in-process, so -- as bench/fake_node.py does for the side-by-side
bench -- this launcher installs it, lists the given trainers' pids on one simulated GPU,
moves their boards into it from a daemon thread every :data:`FEED_S` (the lab's own
:class:`~pipelab.monitor._Feeder`), and then runs ``gputop_hints.cli.main`` in the main
thread with the arguments after ``--``: the full-screen monitor a user starts::

    python bench/pipelab/watch.py --board PATH --pid PID [--board PATH --pid PID ...] -- ARGS

The trainers are started elsewhere (``pipelab.monitor.start_trainer``); this process
only reads their boards.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
for _path in (BENCH, BENCH.parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from pipelab.board import BINS, EPOCH, SAMPLE_S, Board  # noqa: E402
from pipelab.monitor import _Feeder, lab_gpu  # noqa: E402
from tests.support.fake_nvml import FakeNvml  # noqa: E402

FEED_S = 0.25
"""How often the feeder moves the boards into the fake GPU."""


def _feed(feeder: _Feeder) -> None:
    """Feed (a daemon thread) until the boards' bins run out (``BINS``, two minutes)."""
    end = float(feeder.boards[0].slots[EPOCH]) + (BINS - 1) * SAMPLE_S
    while (now := time.time()) < end:
        feeder.update(now)
        time.sleep(FEED_S)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    ours, rest = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", type=Path, action="append", required=True)
    parser.add_argument("--pid", type=int, action="append", required=True)
    args = parser.parse_args(ours)
    if len(args.board) != len(args.pid):
        parser.error("give one --pid per --board")
    boards = [Board.attach(path) for path in args.board]
    gpu, consumers = lab_gpu(args.pid)
    FakeNvml([gpu]).install()  # for the life of the process
    feeder = _Feeder(boards, gpu, consumers)
    feeder.update(time.time())
    threading.Thread(target=_feed, args=(feeder,), daemon=True, name="lab-feeder").start()
    from gputop_hints.cli import main as gputop_main

    return gputop_main(rest)


if __name__ == "__main__":
    sys.exit(main())
