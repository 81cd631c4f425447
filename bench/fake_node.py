"""A fake GPU node for benchmarks: real sleeping processes listed by the fake NVML.

The fake NVML (tests/support/fake_nvml.py) works only in-process, so this is
both a library and a launcher. As a launcher it installs the fake for
``--gpus`` GPUs listing the pids in ``--pids-file`` (round-robin over the
GPUs) and then calls, in the same process, gputop-hints' own
``gputop_hints.cli.main`` or unmodified nvitop's ``nvitop.cli.main`` with the
rest of the command line (or, for ``none``, nothing: the launcher's own start-up,
the floor under both; for ``floor``, gputop-hints' app with its whole widget tree and
no data: never sampled)::

    PYTHONPATH=. .venv/bin/python bench/fake_node.py --gpus 8 --pids-file /tmp/p ours
    PYTHONPATH=. .venv/bin/python bench/fake_node.py --gpus 8 --pids-file /tmp/p nvitop

As a library it starts and stops the sleeping processes
(:func:`spawn_sleepers`, :func:`stop`) and builds the fake GPUs (:func:`gpus_for`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from tests.support.fake_nvml import FakeGpu, FakeNvml, make_gpus

PROGRAMS = ("ours", "nvitop", "none", "floor")


def spawn_sleepers(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` real processes that sleep (``sleep 3600``) until :func:`stop`."""
    return [
        subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL, close_fds=True)
        for _ in range(count)
    ]


def stop(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    """Kill and reap processes from :func:`spawn_sleepers`."""
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


def gpus_for(gpus: int, pids: Sequence[int]) -> list[FakeGpu]:
    """``gpus`` fake GPUs listing ``pids`` round-robin (each pid on one GPU)."""
    return make_gpus(gpus, [list(pids[i::gpus]) for i in range(gpus)])


def home_count() -> int:
    """How many processes the host has now (entries of ``/proc``)."""
    return sum(1 for entry in Path("/proc").iterdir() if entry.name.isdigit())


def _keep_calls(fake: FakeNvml, path: Path) -> None:
    """Write ``fake.calls`` with the time to ``path`` twice a second, for ever (a daemon
    thread): read at two moments, the calls a program made in between."""
    scratch = path.with_suffix(".tmp")
    while True:
        try:
            calls = dict(fake.calls)
        except RuntimeError:  # a first call of a function grew the dict meanwhile
            continue
        scratch.write_text(json.dumps({"t": time.monotonic(), "calls": calls}))
        os.replace(scratch, path)
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--pids-file", type=Path, required=True, help="one pid a line")
    parser.add_argument(
        "--calls-out",
        type=Path,
        help="keep the NVML calls made so far, per function, in this JSON file (every 0.5 s)",
    )
    parser.add_argument("program", choices=PROGRAMS)
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="the program's own arguments")
    args = parser.parse_args(argv)
    pids = [int(line) for line in args.pids_file.read_text().split()]
    fake = FakeNvml(gpus_for(args.gpus, pids))
    fake.install()  # for the life of the process
    if args.calls_out is not None:
        threading.Thread(target=_keep_calls, args=(fake, args.calls_out), daemon=True).start()
    if args.program == "none":
        return 0
    if args.program == "floor":
        # The monitor's own widget tree holding no data (issue 49's memory floor): the
        # app on this node's source, never sampled -- Textual, the widgets, the themes.
        # Textual imported as the monitor imports it: asyncio without its TLS support
        # (~4.5 MB of OpenSSL the monitor never loads), so the floor is not above ours.
        from gputop_hints.cli.monitor import _asyncio_without_tls
        from gputop_hints.sources.live.source import LiveSource

        with _asyncio_without_tls():
            from gputop_hints.tui.app import GputopApp

        GputopApp(LiveSource(1.0, detect_job=False), autostart=False).run()
        return 0
    if args.program == "nvitop":
        from nvitop.cli import main as nvitop_main

        sys.argv = ["nvitop", *args.rest]
        status: int = nvitop_main()
        return status
    from gputop_hints.cli import main as ours_main

    return ours_main(args.rest)


if __name__ == "__main__":
    sys.exit(main())
