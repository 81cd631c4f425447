"""Probe: run gputop-hints in-process under fake NVML where one GPU's calls stop returning.

The fake NVML (tests/support/fake_nvml.py) only works in-process, so this script
installs it and calls ``gputop_hints.cli.main`` with the rest of the command
line. ``--hang-after`` seconds after start, GPU ``--gpu`` (of ``--gpus``) hangs:
every NVML call on it blocks for good, as with a wedged driver. It is never
released -- what the probe measures is whether the program still quits, and how
fast (``q``, SIGTERM, SIGINT, a lost terminal, ``--once``, ``record``)::

    PYTHONPATH=. .venv/bin/python bench/hang_probe.py --hang-after 2 -- --once --duration 2
    PYTHONPATH=. .venv/bin/python bench/hang_probe.py -- record -o /tmp/r.jsonl   # kill -TERM it
"""

from __future__ import annotations

import argparse
import sys
import threading

from gputop_hints.cli import main as cli_main
from tests.support.fake_nvml import FakeNvml, make_gpus


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--gpu", type=int, default=1, help="the GPU that hangs")
    parser.add_argument("--hang-after", type=float, default=0.0, help="seconds after start")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="-- then gputop-hints arguments")
    args = parser.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    gpus = make_gpus(args.gpus, sm=50)
    nvml = FakeNvml(gpus)
    nvml.install()  # never uninstalled: uninstalling would release the hung GPU
    hang = gpus[args.gpu].hang
    if args.hang_after > 0:
        timer = threading.Timer(args.hang_after, hang)
        timer.daemon = True
        timer.start()
    else:
        hang()
    return cli_main(rest)


if __name__ == "__main__":
    sys.exit(main())
