"""The live monitor left running: CPU % and RSS per minute, and where RSS levels off.

Runs the real monitor (``gputop-hints``, its TUI, at its default 1 s tick) in a tmux
pane of ``--size`` (160x50) for ``--minutes`` (20), either on the project's fake NVML
with ``--gpus`` x ``--procs`` real sleeping processes as the GPU processes (8 x 512;
the pane's command is this file's own ``node`` launcher, which installs the fake as
bench/fake_node.py does), or on ``--demo`` (its simulated jobs, ``--gpus`` GPUs and
``--procs`` processes, at most 256). With ``--churn N`` (fake NVML only) N of the GPU
processes are replaced per minute by new ones (new pids; the old ones killed), spread
over the minute, as a cluster node running short jobs would see them: per-process
state that is kept for exited processes shows up as RSS that does not level off.

Every ``--step-s`` (60) it samples the monitor's process (psutil on its pid: user +
system CPU over the step as % of one core, and RSS at the step's end) and prints a
row; at the end the plateau: the first step from which RSS stays within ``--band-mb``
(2 MB) of its value there for the rest of the run, and the least-squares slope of RSS
from that step on (MB/min)::

    PYTHONPATH=. .venv/bin/python bench/soak.py [--minutes 20] [--gpus 8] [--procs 512]
        [--churn 0] [--demo] [--size 160x50] [--step-s 60] [--band-mb 2]

``--minutes`` may be a fraction and ``--step-s`` short (the smoke test runs
``--minutes 0.25 --step-s 5``); the figures of a run that short say nothing about a
plateau.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_node import gpus_for, spawn_sleepers, stop  # the fake node beside this file

from tests.support.fake_nvml import FakeNvml, make_gpus
from tests.support.tmux_harness import Tmux

ROOT = Path(__file__).resolve().parent.parent
CHURN_PERIOD_S = 5.0
"""How often the churn replaces its share of processes (``--churn`` / 12 every 5 s)."""


@dataclass
class Step:
    minute: float
    cpu_percent: float
    rss_mb: float
    processes: int


def plateau(steps: list[Step], band_mb: float) -> tuple[int, float] | None:
    """(index of the first step from which every later RSS, at least two steps, stays
    within ``band_mb`` of it; RSS slope in MB/min from there on), or None when RSS is
    still moving at the end of the run (no such step)."""
    for i in range(len(steps) - 1):
        base = steps[i].rss_mb
        if all(abs(s.rss_mb - base) <= band_mb for s in steps[i:]):
            return i, slope_mb_per_min(steps[i:])
    return None


def slope_mb_per_min(steps: list[Step]) -> float:
    """Least-squares slope of RSS over ``steps``, MB per minute (0 for fewer than two)."""
    xs = [s.minute for s in steps]
    ys = [s.rss_mb for s in steps]
    if len(xs) < 2:
        return 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


class Churn:
    """Replace ``per_minute`` of the sleeping processes a minute, in a thread, writing
    the current pids to ``pids_file`` (atomically) after each change."""

    def __init__(self, sleepers: list[subprocess.Popen[bytes]], pids_file: Path) -> None:
        self.sleepers = sleepers
        self.pids_file = pids_file
        self.replaced = 0
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.write()

    def write(self) -> None:
        scratch = self.pids_file.with_suffix(".tmp")
        scratch.write_text("\n".join(str(p.pid) for p in self.sleepers) + "\n")
        os.replace(scratch, self.pids_file)

    def start(self, per_minute: int) -> None:
        if per_minute <= 0:
            return
        each = max(1, round(per_minute * CHURN_PERIOD_S / 60.0))
        period = 60.0 * each / per_minute
        self._thread = threading.Thread(target=self._run, args=(each, period), daemon=True)
        self._thread.start()

    def _run(self, each: int, period: float) -> None:
        rng = random.Random(0)
        while not self._done.wait(period):
            slots = rng.sample(range(len(self.sleepers)), min(each, len(self.sleepers)))
            old = [self.sleepers[i] for i in slots]
            for i, new in zip(slots, spawn_sleepers(len(slots)), strict=True):
                self.sleepers[i] = new
            self.write()
            stop(old)
            self.replaced += len(old)

    def close(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()


def _follow_pids(fake: FakeNvml, gpus: int, pids_file: Path) -> None:
    """Rebuild the fake GPUs' process lists whenever ``pids_file`` changes, for ever (a
    daemon thread in the ``node`` launcher)."""
    seen = pids_file.stat().st_mtime_ns
    while True:
        time.sleep(0.5)
        mtime = pids_file.stat().st_mtime_ns
        if mtime == seen:
            continue
        seen = mtime
        pids = [int(line) for line in pids_file.read_text().split()]
        rebuilt = make_gpus(gpus, [pids[i::gpus] for i in range(gpus)])
        for gpu, fresh in zip(fake.gpus, rebuilt, strict=True):
            gpu.processes = fresh.processes  # one assignment: a tick sees old or new list


def _trace_growth(out: Path, first_s: float, every_s: float) -> None:
    """Compare tracemalloc snapshots: the one at ``first_s`` against a new one every
    ``every_s`` after it, the 25 lines that grew most written to ``out`` (a daemon
    thread in the ``node`` launcher under ``--tracemalloc``)."""
    time.sleep(first_s)
    base = tracemalloc.take_snapshot()
    started = time.monotonic()
    while True:
        time.sleep(every_s)
        now = tracemalloc.take_snapshot()
        lines = [f"growth since {first_s:g} s, {time.monotonic() - started + first_s:.0f} s in"]
        lines += [str(stat) for stat in now.compare_to(base, "lineno")[:25]]
        out.write_text("\n".join(lines) + "\n")


def node(argv: list[str]) -> int:
    """The pane's command for the fake NVML: install the fake for ``--gpus`` GPUs listing
    the pids of ``--pids-file`` (followed as it changes) and run gputop-hints in-process
    with the rest of the command line."""
    parser = argparse.ArgumentParser(prog="soak.py node")
    parser.add_argument("--gpus", type=int, required=True)
    parser.add_argument("--pids-file", type=Path, required=True)
    parser.add_argument("--tracemalloc", type=Path, help="write what grew to this file")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.tracemalloc is not None:
        tracemalloc.start()
        threading.Thread(
            target=_trace_growth, args=(args.tracemalloc, 120.0, 60.0), daemon=True
        ).start()
    if "--demo" in args.rest:  # the demo simulates its GPUs: no fake NVML, no pids
        from gputop_hints.cli import main as demo_main

        return demo_main([a for a in args.rest if a != "--"])
    pids = [int(line) for line in args.pids_file.read_text().split()]
    fake = FakeNvml(gpus_for(args.gpus, pids))
    fake.install()  # for the life of the process
    threading.Thread(
        target=_follow_pids, args=(fake, args.gpus, args.pids_file), daemon=True
    ).start()
    from gputop_hints.cli import main as ours_main

    return ours_main(args.rest)


def soak(args: argparse.Namespace) -> list[Step]:
    cols, rows = (int(v) for v in args.size.lower().split("x"))
    sleepers: list[subprocess.Popen[bytes]] = []
    fd, name = tempfile.mkstemp(prefix="soak-pids-")
    os.close(fd)
    pids_file = Path(name)
    churn: Churn | None = None
    if args.demo:
        command = [sys.executable, "-m", "gputop_hints", "--demo", "--gpus", str(args.gpus)]
        command += ["--processes", str(args.procs)]
        if args.tracemalloc is not None:  # through the launcher, which traces in-process
            command = [sys.executable, str(Path(__file__).resolve()), "node", "--gpus", "0"]
            command += ["--pids-file", str(pids_file), "--tracemalloc"]
            command += [str(args.tracemalloc.resolve()), "--", "--demo", "--gpus", str(args.gpus)]
            command += ["--processes", str(args.procs)]
    else:
        sleepers = spawn_sleepers(args.procs)  # in all, spread round-robin over the GPUs
        churn = Churn(sleepers, pids_file)
        command = [sys.executable, str(Path(__file__).resolve()), "node", "--gpus", str(args.gpus)]
        command += ["--pids-file", str(pids_file)]
        if args.tracemalloc is not None:
            command += ["--tracemalloc", str(args.tracemalloc.resolve())]
    tmux = Tmux()
    steps: list[Step] = []
    try:
        tmux.start(command, width=cols, height=rows, env={"PYTHONPATH": str(ROOT)})
        proc = psutil.Process(tmux.pid())
        tmux.wait_for("GPU", timeout=120)
        if churn is not None:
            churn.start(args.churn)
        started = time.monotonic()
        cpu0 = sum(proc.cpu_times()[:2])
        total = args.minutes * 60.0
        while (elapsed := time.monotonic() - started) < total - 1e-6:
            time.sleep(min(args.step_s, total - elapsed))
            took = time.monotonic() - started - elapsed
            if not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE:
                raise SystemExit(f"the monitor exited; its screen:\n{tmux.screen()}")
            cpu1 = sum(proc.cpu_times()[:2])
            step = Step(
                minute=(time.monotonic() - started) / 60.0,
                cpu_percent=100.0 * (cpu1 - cpu0) / took,
                rss_mb=proc.memory_info().rss / 1e6,
                processes=churn.replaced if churn is not None else 0,
            )
            cpu0 = cpu1
            steps.append(step)
            print(
                f"{step.minute:7.2f}  {step.cpu_percent:6.1f}  {step.rss_mb:7.1f}"
                + (f"  {step.processes:9d}" if args.churn else ""),
                flush=True,
            )
    finally:
        if churn is not None:
            churn.close()
        tmux.kill()
        stop(sleepers)
        pids_file.unlink(missing_ok=True)
    return steps


def main(argv: list[str]) -> int:
    if argv[:1] == ["node"]:
        return node(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--procs", type=int, default=512, help="GPU processes in all")
    parser.add_argument("--churn", type=int, default=0, help="processes replaced per minute")
    parser.add_argument("--demo", action="store_true", help="the demo, not the fake NVML")
    parser.add_argument("--size", default="160x50", help="terminal COLSxROWS (160x50)")
    parser.add_argument("--step-s", type=float, default=60.0, help="seconds per row (60)")
    parser.add_argument(
        "--tracemalloc",
        type=Path,
        help="fake NVML: trace allocations (slower) and write to this file, each minute "
        "from minute 3, the 25 source lines that grew most since minute 2",
    )
    parser.add_argument("--band-mb", type=float, default=2.0, help="plateau band, MB (2)")
    args = parser.parse_args(argv)
    if args.demo and args.churn:
        parser.error("--churn needs the fake NVML: the demo's processes are its own")
    source = "demo" if args.demo else "fake NVML"
    print(
        f"soak: {source}, {args.gpus} GPUs x {args.procs} processes in all, churn "
        f"{args.churn}/min, {args.size} tmux pane, {args.minutes:g} min, a row every "
        f"{args.step_s:g} s"
    )
    print(f"{'minute':>7}  {'CPU %':>6}  {'RSS MB':>7}" + ("  replaced" if args.churn else ""))
    steps = soak(args)
    found = plateau(steps, args.band_mb)
    if found is None:
        last = steps[len(steps) * 2 // 3 :]
        print(
            f"plateau: none -- RSS still moving at the end ({slope_mb_per_min(last):+.3f} MB/min "
            f"over the last {len(last)} row(s), band {args.band_mb:g} MB)"
        )
        return 0
    start, slope = found
    at = steps[start]
    tail = steps[start:]
    print(
        f"plateau: from minute {at.minute:.2f}, RSS {min(s.rss_mb for s in tail):.1f}-"
        f"{max(s.rss_mb for s in tail):.1f} MB (band {args.band_mb:g} MB), slope "
        f"{slope:+.3f} MB/min; CPU from there {statistics.median(s.cpu_percent for s in tail):.1f} "
        f"% median, before {statistics.median(s.cpu_percent for s in steps[: start or 1]):.1f} %"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
