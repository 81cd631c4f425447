"""gputop-hints against unmodified nvitop, on the same fake node, in the same terminal.

Both run at their defaults (gputop-hints ticks every 1 s, nvitop every 2 s)
in a tmux pane of ``--size`` (160x50), on the project's fake NVML with real
sleeping processes as the GPU processes (bench/fake_node.py launches each
program in-process under the fake). Runs alternate program by program,
``--pairs`` of ``--seconds`` each (the first of a pair switches every pair),
for each case of ``--cases`` (GPUs x processes in all). Per run:

* first rows: launch until a fake GPU process's pid is on screen (``capture-pane``);
* CPU % of one core and ms of CPU per tick, from ``/proc/<pid>/stat``
  utime + stime over the measured window (from 2 s after the first rows);
* peak RSS (VmHWM) and RSS (VmRSS) at the end of each window, from ``/proc/<pid>/status``;
* terminal bytes/s over the window, from tmux ``pipe-pane`` into a file.

Before the runs it prints each program's RSS floor: a fresh interpreter that has only
imported the libraries the program is built on (Textual for gputop-hints, curses for
nvitop; nvitop's api, psutil and the fake NVML for both) and holds no data.

Before the runs the tree's own modules (gputop_hints, tests/support, bench) are
byte-compiled, as installing a package does (nvitop's are, in site-packages):
where ``PYTHONDONTWRITEBYTECODE`` is set, every launch would otherwise compile
gputop-hints from source, ~90 ms of its start-up that no installed copy pays.

The same way gputop-hints' compiled dataclass methods are written to the user's cache
once (:func:`warm_class_cache`), as the first start of an installed copy does.

Then the once row: ``--once-pairs`` runs of each one-shot command, alternating,
on the same fake node (``--once-case``, 1x1), with no terminal (output to
/dev/null): ``gputop-hints --once --duration 0.25 --interval 0.25`` and
``nvitop --once``, plus the launcher alone (``fake_node.py ... none``: Python,
the fake NVML and its installation, the floor under both). CPU is user + system
from each child's rusage (``os.wait4``), so the whole life of the process counts;
it is printed as it is and less the launcher's median.

Each run is measured over two windows (issue 49: a lead that holds only in the first
seconds is no lead): the first, from 2 s after its first rows for ``--seconds``, and the
steady one, from ``--steady-after`` seconds after its launch (300: past the hints'
longest window, where costs that grow with uptime have grown) for ``--steady-seconds``.
With ``--together`` the runs of a case (``--pairs`` of each program) run side by side,
launched one by one as the one before has its rows up, every window starting once all
are up -- one case then takes about ``--steady-after`` plus a minute instead of that
times twice the pairs; each program is measured by its own CPU time, which another
program using a few percent of a core on a quiet machine does not move. After the rows
of each case come the issue's goals, met or NOT MET: CPU at most 0.7x nvitop's at 1x1 and
0.5x at 8x64 in both windows, and our steady RSS at most 6 MB (1x1) or 10 MB (8x64)
above the widget tree's floor.

It prints the median (min-max) of each and the ratio of the medians::

    PYTHONPATH=. .venv/bin/python bench/vs_nvitop.py [--pairs 3] [--seconds 30]
        [--cases 1x1,8x64,8x256] [--size 160x50] [--steady-after 300]
        [--steady-seconds 60] [--together] [--once-pairs 10] [--once-case 1x1]
        [--once-only]

``--once-only`` runs only the once row (under a minute at 10 pairs);
``--once-pairs 0`` leaves it out.

``--trace-cpu`` runs only a CPU trace instead (issue 49: what the first minute pays that
a steady window does not): ``--trace-program`` (ours) alone on the first case of
``--cases``, ``--pairs`` runs one after another, its CPU time read every
second from its first rows (each thread's ``/proc/<pid>/task/*/schedstat``, ns: the
10 ms ticks of ``/proc/<pid>/stat`` are 1 ms a second over 10 s); printed as ms of CPU a second per
10 s (the median over the runs, and the largest 1-s reading in any), for the first
``--trace-seconds`` (90) after the rows and for the ``--steady-seconds`` from
``--steady-after`` after the launch (0: none)::

    PYTHONPATH=. .venv/bin/python bench/vs_nvitop.py --trace-cpu --cases 1x1 --pairs 1
        [--trace-seconds 90] [--steady-after 300] [--steady-seconds 60]
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import itertools
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_node import spawn_sleepers, stop  # the fake node beside this file
from overhead import _cpu_seconds, _peak_rss_bytes  # its /proc readers

from tests.support.tmux_harness import Tmux

ROOT = Path(__file__).resolve().parent.parent
TICK_S = {"ours": 1.0, "nvitop": 2.0}
"""Each program's default update interval."""
SETTLE_S = 2.0
METRICS = (
    ("cpu", "CPU % of a core"),
    ("ms_tick", "ms CPU per tick"),
    ("peak_rss", "peak RSS MB"),
    ("rss", "RSS MB at its end"),
    ("bytes_s", "terminal bytes/s"),
    ("first_rows", "launch -> rows s"),
)


@dataclass
class _Run:
    """One program running in its own tmux pane, and what has been read of it."""

    program: str
    tmux: Tmux
    out: Path
    pid: int
    launched: float
    first_rows: float = float("nan")
    windows: list[tuple[float, float]] = field(default_factory=list)
    """(start, end) on the monotonic clock of each window to measure, once rows are up."""
    readings: list[tuple[float, float, int, int, int]] = field(default_factory=list)
    """At each window edge: (time, CPU s, terminal bytes, peak RSS, RSS)."""


def _launch(program: str, gpus: int, pids_file: Path, size: tuple[int, int]) -> _Run:
    """Start ``program`` on the fake node in a fresh tmux pane, its output piped to a file."""
    tmux = Tmux()
    fd, out_name = tempfile.mkstemp(prefix=f"vs-{program}-", suffix=".out")
    os.close(fd)
    command = [sys.executable, str(ROOT / "bench" / "fake_node.py"), "--gpus", str(gpus)]
    command += ["--pids-file", str(pids_file), program]
    launched = time.monotonic()
    tmux.start(command, width=size[0], height=size[1], env={"PYTHONPATH": str(ROOT)})
    tmux.run("pipe-pane", "-t", "t", f"cat >> {out_name}")
    return _Run(program, tmux, Path(out_name), tmux.pid(), launched)


def _read(run: _Run) -> None:
    peak, rss = _peak_rss_bytes(run.pid)
    run.readings.append(
        (time.monotonic(), _cpu_seconds(run.pid), run.out.stat().st_size, peak, rss)
    )


def _finish(run: _Run) -> None:
    run.tmux.kill()
    run.out.unlink(missing_ok=True)


def run_group(
    programs: Sequence[str],
    gpus: int,
    pids_file: Path,
    pids: list[int],
    size: tuple[int, int],
    seconds: float,
    steady_after: float,
    steady_seconds: float,
) -> list[list[dict[str, float]]]:
    """Run ``programs`` side by side, each launched once the one before has its rows up
    (so that no two start at once), and measure each over its own windows: the first
    from :data:`SETTLE_S` after its first rows, for ``seconds``; with ``steady_after``,
    the steady one from that many seconds after its launch, for ``steady_seconds``.
    Per program, per window, the metrics of :data:`METRICS`."""
    wanted = re.compile(r"\b(" + "|".join(str(p) for p in pids) + r")\b")
    runs: list[_Run] = []
    try:
        while True:
            now = time.monotonic()
            starting = [r for r in runs if math.isnan(r.first_rows)]
            if not starting and len(runs) < len(programs):
                runs.append(_launch(programs[len(runs)], gpus, pids_file, size))
                continue
            for run in starting:
                if wanted.search(run.tmux.screen()):
                    run.first_rows = time.monotonic() - run.launched
                elif now - run.launched > 120:
                    raise SystemExit(f"{run.program}: no GPU process on screen in 120 s")
            if len(runs) == len(programs) and not starting and not runs[0].windows:
                # All up: no launch falls in anybody's window from here on.
                for run in runs:
                    begin = max(run.launched + run.first_rows, now) + SETTLE_S
                    run.windows.append((begin, begin + seconds))
                    if steady_after > 0:
                        begin = max(run.launched + steady_after, begin + seconds)
                        run.windows.append((begin, begin + steady_seconds))
            edges = [
                (edge, run)
                for run in runs
                for edge in [t for window in run.windows for t in window][len(run.readings) :][:1]
            ]
            if len(runs) == len(programs) and not starting and not edges:
                break
            due = [run for edge, run in edges if edge <= now]
            for run in due:
                _read(run)
            if not due:
                wait = min([edge for edge, _ in edges] + [now + 0.05]) - now
                time.sleep(min(max(wait, 0.0), 0.05 if starting else 1.0))
    finally:
        for run in runs:
            _finish(run)
    return [_window_metrics(run) for run in runs]


def _run_seconds(pid: int, seen: dict[str, float]) -> float:
    """CPU seconds of a process so far at the scheduler's nanosecond resolution: the
    time on CPU of each of its threads (``/proc/<pid>/task/*/schedstat``; the 10 ms
    ticks of ``/proc/<pid>/stat`` are 1 ms a second over 10 s). ``seen`` keeps each
    thread's last reading, so a thread that has ended still counts (less at most its
    last second)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        name = f"/proc/{pid}/task/{task}/schedstat"
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # ended since
            seen[task] = int(Path(name).read_text(encoding="ascii").split()[0]) / 1e9
    return sum(seen.values())


def trace_run(
    program: str,
    gpus: int,
    pids_file: Path,
    pids: list[int],
    size: tuple[int, int],
    seconds: float,
    late_from: float,
    late_seconds: float,
) -> list[tuple[float, float]]:
    """One run of ``program`` alone: (seconds since its first rows, CPU s) read every
    second for ``seconds`` from its first rows and, with ``late_from``, for
    ``late_seconds`` from that many seconds after its launch."""
    wanted = re.compile(r"\b(" + "|".join(str(p) for p in pids) + r")\b")
    run = _launch(program, gpus, pids_file, size)
    try:
        while not wanted.search(run.tmux.screen()):
            if time.monotonic() - run.launched > 120:
                raise SystemExit(f"{program}: no GPU process on screen in 120 s")
            time.sleep(0.05)
        rows = time.monotonic()
        run.first_rows = rows - run.launched
        edges = [rows + k for k in range(int(seconds) + 1)]
        if late_from > 0:
            late = max(run.launched + late_from, edges[-1] + 1)
            edges += [late + k for k in range(int(late_seconds) + 1)]
        readings = []
        threads: dict[str, float] = {}
        for edge in edges:
            time.sleep(max(edge - time.monotonic(), 0.0))
            readings.append((time.monotonic() - rows, _run_seconds(run.pid, threads)))
        print(
            f"  {program}: rows {run.first_rows:.2f} s after launch, "
            f"CPU {1000.0 * readings[0][1]:.0f} ms by then",
            flush=True,
        )
        return readings
    finally:
        _finish(run)


def _stretches(readings: list[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """The readings cut where more than 2 s passed between two (the late window)."""
    out: list[list[tuple[float, float]]] = [readings[:1]]
    for before, after in itertools.pairwise(readings):
        if after[0] - before[0] > 2.0:
            out.append([])
        out[-1].append(after)
    return out


def print_trace(runs: list[list[tuple[float, float]]]) -> None:
    """Per 10 s of each traced stretch: the median over the runs of CPU ms a second,
    (min-max over the runs) and the largest 1-s reading of any run."""
    print(f"{'s after rows':>14} {'CPU ms/s median':>16} {'(min-max)':>14} {'max 1 s':>8}")
    per_run = [_stretches(r) for r in runs]
    # Second by second first: where the start-up (Textual's import, the first layout)
    # ends, against vs_nvitop's first window (from SETTLE_S after the rows).
    for k in range(min(10, min(len(p[0]) for p in per_run) - 1)):
        rates = [
            1000.0 * (p[0][k + 1][1] - p[0][k][1]) / (p[0][k + 1][0] - p[0][k][0]) for p in per_run
        ]
        print(
            f"{k:>6.0f}-{k + 1:<7.0f} {statistics.median(rates):>16.2f} "
            f"{f'({min(rates):.2f}-{max(rates):.2f})':>14}"
        )
    for s in range(min(len(p) for p in per_run)):
        length = min(len(p[s]) for p in per_run)
        for k in range(0, length - 1, 10):
            rates, peaks = [], []
            for p in per_run:
                part = p[s][k : k + 11]
                (t0, c0), (t1, c1) = part[0], part[-1]
                rates.append(1000.0 * (c1 - c0) / (t1 - t0))
                peaks.append(
                    max(1000.0 * (y[1] - x[1]) / (y[0] - x[0]) for x, y in itertools.pairwise(part))
                )
            start, end = per_run[0][s][k][0], per_run[0][s][min(k + 10, length - 1)][0]
            print(
                f"{start:>6.0f}-{end:<7.0f} {statistics.median(rates):>16.2f} "
                f"{f'({min(rates):.2f}-{max(rates):.2f})':>14} {max(peaks):>8.0f}"
            )


def _fake_case(case: str) -> tuple[int, list[subprocess.Popen[bytes]], Path]:
    """A case's GPU count, its sleeping GPU processes and the file listing their pids
    (for ``fake_node.py --pids-file``)."""
    gpus, count = (int(v) for v in case.lower().split("x"))
    sleepers = spawn_sleepers(count)
    fd, name = tempfile.mkstemp(prefix="vs-pids-")
    os.close(fd)
    pids_file = Path(name)
    pids_file.write_text("\n".join(str(p.pid) for p in sleepers) + "\n")
    return gpus, sleepers, pids_file


def trace_main(args: argparse.Namespace, size: tuple[int, int]) -> int:
    case = args.cases.split(",")[0]
    gpus, sleepers, pids_file = _fake_case(case)
    print(
        f"CPU trace: {args.trace_program} alone on {case}, {args.size} tmux pane, "
        f"{args.pairs} run(s); CPU from /proc/<pid>/task/*/schedstat every 1 s",
        flush=True,
    )
    try:
        runs = [
            trace_run(
                args.trace_program,
                gpus,
                pids_file,
                [p.pid for p in sleepers],
                size,
                args.trace_seconds,
                args.steady_after,
                args.steady_seconds,
            )
            for _ in range(args.pairs)
        ]
    finally:
        stop(sleepers)
        pids_file.unlink(missing_ok=True)
    print_trace(runs)
    return 0


def _window_metrics(run: _Run) -> list[dict[str, float]]:
    out = []
    for k in range(0, len(run.readings), 2):
        (t0, cpu0, bytes0, _, _), (t1, cpu1, bytes1, peak, rss) = run.readings[k : k + 2]
        took, cpu = t1 - t0, cpu1 - cpu0
        out.append(
            {
                "cpu": 100.0 * cpu / took,
                "ms_tick": 1000.0 * cpu / (took / TICK_S[run.program]),
                "peak_rss": peak / 1e6,
                "rss": rss / 1e6,
                "bytes_s": (bytes1 - bytes0) / took,
                "first_rows": run.first_rows,
                "from_s": t0 - run.launched,
            }
        )
    return out


LIBRARIES = {
    "ours": "import textual.app, nvitop.api, psutil, yaml",
    "nvitop": "import curses, nvitop.api, psutil",
}
"""What each program cannot run without: gputop-hints is built on Textual (required),
nvitop on curses; both on nvitop's api and psutil (and the fake NVML here)."""


def library_rss_mb(program: str) -> float:
    """RSS (MB) of a fresh interpreter that has imported only ``program``'s libraries and
    the fake NVML, and holds no data: the floor under that program's steady RSS."""
    code = (
        f"{LIBRARIES[program]}\nimport tests.support.fake_nvml\n"
        "print(open('/proc/self/status').read().split('VmRSS:')[1].split()[0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return int(out.stdout.strip()) * 1024 / 1e6


def widget_floor_mb(gpus: int, pids_file: Path, size: tuple[int, int]) -> float:
    """RSS (MB) of gputop-hints' app with its whole widget tree drawn and no data (never
    sampled: ``fake_node.py floor``) in a tmux pane of ``size``: the floor under its
    steady RSS that Textual and the widgets set, before any sample is held."""
    tmux = Tmux()
    command = [sys.executable, str(ROOT / "bench" / "fake_node.py"), "--gpus", str(gpus)]
    command += ["--pids-file", str(pids_file), "floor"]
    try:
        tmux.start(command, width=size[0], height=size[1], env={"PYTHONPATH": str(ROOT)})
        pid = tmux.pid()
        launched = time.monotonic()
        while "waiting for the first sample" not in tmux.screen():
            if time.monotonic() - launched > 120:
                raise RuntimeError("the floor app drew nothing in 120 s")
            time.sleep(0.05)
        time.sleep(SETTLE_S)
        _, rss = _peak_rss_bytes(pid)
    finally:
        tmux.kill()
    return rss / 1e6


ONCE_ARGS = {
    "ours": ["--once", "--duration", "0.25", "--interval", "0.25"],
    "nvitop": ["--once"],
    "none": [],
}
"""Each one-shot command's arguments: ours samples for a quarter second (one tick),
nvitop samples once; ``none`` is the launcher alone."""


def once_run(program: str, gpus: int, pids_file: Path) -> tuple[float, float]:
    """One one-shot run of ``program`` on the fake node: (CPU s, wall s), the CPU
    (user + system) from the child's own rusage."""
    command = [sys.executable, str(ROOT / "bench" / "fake_node.py"), "--gpus", str(gpus)]
    command += ["--pids-file", str(pids_file), program, *ONCE_ARGS[program]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if proc.returncode != 0:
        raise SystemExit(f"{program} once run failed ({proc.returncode}): {command}")
    return usage.ru_utime + usage.ru_stime, took


def once_rows(pairs: int, case: str) -> None:
    """The once row: ``pairs`` one-shot runs of each program and of the launcher
    alone, alternating (the order rotates run by run), printed as ms of CPU."""
    gpus, sleepers, pids_file = _fake_case(case)
    cpu: dict[str, list[float]] = {"ours": [], "nvitop": [], "none": []}
    wall: dict[str, list[float]] = {"ours": [], "nvitop": [], "none": []}
    programs = ("ours", "nvitop", "none")
    try:
        for pair in range(pairs):
            for i in range(3):
                program = programs[(pair + i) % 3]
                used, took = once_run(program, gpus, pids_file)
                cpu[program].append(1000.0 * used)
                wall[program].append(took)
    finally:
        stop(sleepers)
        pids_file.unlink(missing_ok=True)
    floor = statistics.median(cpu["none"])
    print(
        f"once: {pairs} run(s) each on {case}; ours = gputop-hints {' '.join(ONCE_ARGS['ours'])}, "
        f"nvitop = nvitop --once; launcher alone (python + fake NVML): "
        f"{_spread(cpu['none']).strip()} ms CPU, {statistics.median(wall['none']):.2f} s wall"
    )
    rows = (
        ("once CPU ms", cpu["ours"], cpu["nvitop"]),
        (
            "once - launcher ms",
            [v - floor for v in cpu["ours"]],
            [v - floor for v in cpu["nvitop"]],
        ),
        ("once wall s", wall["ours"], wall["nvitop"]),
    )
    for label, ours, theirs in rows:
        base = statistics.median(theirs)
        ratio = statistics.median(ours) / base if base else float("nan")
        print(f"{case:>6}  {label:<24} {_spread(ours):>26} {_spread(theirs):>26}  {ratio:8.2f}")


CPU_GOAL = {"1x1": 0.7, "8x64": 0.5}
"""Issue 49: ours/nvitop CPU at most this, in the first minute and in the steady window."""
RSS_MARGIN_MB = {"1x1": 6.0, "8x64": 10.0}
"""Issue 49: our steady RSS at most this far above the widget tree's floor."""


def _print_case(
    case: str, results: dict[str, list[list[dict[str, float]]]], floor_mb: float | None
) -> None:
    """The metric rows of each window of one case, then the issue's goals met or not."""
    windows = min(len(w) for runs in results.values() for w in runs)
    verdicts = []
    for k in range(windows):
        starts = [w[k]["from_s"] for runs in results.values() for w in runs]
        name = "first" if k == 0 else "steady"
        print(
            f"{case:>6}  -- {name} window: from {min(starts):.0f}-{max(starts):.0f} s "
            "after launch --"
        )
        for key, label in METRICS:
            if k > 0 and key == "first_rows":
                continue
            ours = [w[k][key] for w in results["ours"]]
            theirs = [w[k][key] for w in results["nvitop"]]
            base = statistics.median(theirs)
            ratio = statistics.median(ours) / base if base else float("nan")
            shown = label if k == 0 else f"steady {label}"
            print(f"{case:>6}  {shown:<24} {_spread(ours):>26} {_spread(theirs):>26}  {ratio:8.2f}")
            if key == "cpu" and case in CPU_GOAL:
                met = ratio <= CPU_GOAL[case]
                verdicts.append(
                    f"CPU {name} {ratio:.2f}x <= {CPU_GOAL[case]}x: {'met' if met else 'NOT MET'}"
                )
        if floor_mb is not None and case in RSS_MARGIN_MB:
            above = statistics.median(w[k]["rss"] for w in results["ours"]) - floor_mb
            met = above <= RSS_MARGIN_MB[case]
            verdicts.append(
                f"RSS {name} {above:+.1f} MB over the floor <= {RSS_MARGIN_MB[case]:g}: "
                f"{'met' if met else 'NOT MET'}"
            )
    if verdicts:
        print(f"{case:>6}  goals (issue 49): " + "; ".join(verdicts))


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):8.2f} ({min(values):.2f}-{max(values):.2f})"


def warm_class_cache() -> None:
    """Write gputop-hints' compiled dataclass methods to the user's cache as its first
    start on a machine does (gputop_hints/_classcache.py), even where
    ``PYTHONDONTWRITEBYTECODE`` keeps the runs below from writing it: what every later
    start of an installed copy reads."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    code = (
        "import gputop_hints.tui.app, gputop_hints.outputs.summary, gputop_hints.sources.live\n"
        "from gputop_hints.hints.thresholds import Thresholds\nThresholds.defaults()"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0, help="measured per run (30)")
    parser.add_argument("--cases", default="1x1,8x64,8x256", help="GPUsxprocesses, comma-separated")
    parser.add_argument("--size", default="160x50", help="terminal COLSxROWS (160x50)")
    parser.add_argument(
        "--steady-after",
        type=float,
        default=300.0,
        help="also measure a steady window this many s after each launch (300; 0: none)",
    )
    parser.add_argument(
        "--steady-seconds", type=float, default=60.0, help="the steady window's length (60)"
    )
    parser.add_argument(
        "--together",
        action="store_true",
        help="run a case's pairs side by side (launched one by one) instead of one after another",
    )
    parser.add_argument(
        "--once-pairs", type=int, default=10, help="one-shot runs of each for the once row (10)"
    )
    parser.add_argument("--once-case", default="1x1", help="GPUsxprocesses for the once row")
    parser.add_argument("--once-only", action="store_true", help="run only the once row")
    parser.add_argument(
        "--trace-cpu", action="store_true", help="run only a CPU trace a second (see above)"
    )
    parser.add_argument("--trace-program", default="ours", choices=("ours", "nvitop"))
    parser.add_argument(
        "--trace-seconds", type=float, default=90.0, help="traced after the first rows (90)"
    )
    args = parser.parse_args()
    cols, rows = (int(v) for v in args.size.lower().split("x"))
    for tree in ("gputop_hints", "tests/support", "bench"):
        compileall.compile_dir(ROOT / tree, quiet=1)
    warm_class_cache()
    if args.trace_cpu:
        return trace_main(args, (cols, rows))
    if args.once_only:
        print(f"gputop-hints {version('gputop-hints')} vs nvitop {version('nvitop')}, fake NVML")
        print(
            f"{'case':>6}  {'metric':<24} {'ours median (min-max)':>26} {'nvitop':>26}  ours/nvitop"
        )
        once_rows(args.once_pairs, args.once_case)
        return 0
    print(
        f"gputop-hints {version('gputop-hints')} vs nvitop {version('nvitop')}, fake NVML, "
        f"{args.size} tmux pane, {args.pairs} pair(s) of {args.seconds:g} s per case; "
        f"ticks: ours {TICK_S['ours']:g} s, nvitop {TICK_S['nvitop']:g} s (defaults)"
    )
    floor = {program: library_rss_mb(program) for program in LIBRARIES}
    print(
        f"libraries alone, no data (RSS floor): ours {floor['ours']:.1f} MB "
        f"({LIBRARIES['ours'].removeprefix('import ')}), nvitop {floor['nvitop']:.1f} MB "
        f"({LIBRARIES['nvitop'].removeprefix('import ')}): "
        f"{floor['ours'] / floor['nvitop']:.2f}x before either holds a sample"
    )
    fd, floor_name = tempfile.mkstemp(prefix="vs-floor-")  # no GPU process: no pid
    os.close(fd)
    floor_pids = Path(floor_name)
    floors: dict[int, float] = {}
    try:
        for gpus in sorted({int(c.lower().split("x")[0]) for c in args.cases.split(",")}):
            floors[gpus] = widget_floor_mb(gpus, floor_pids, (cols, rows))
    finally:
        floor_pids.unlink(missing_ok=True)
    print(
        "gputop-hints' widget tree drawn, no data (its memory floor, issue 49): "
        + ", ".join(f"{mb:.1f} MB at {g} GPU(s)" for g, mb in floors.items())
        + f" in {args.size}; the RSS rows below hold that plus the data"
    )
    print(f"{'case':>6}  {'metric':<24} {'ours median (min-max)':>26} {'nvitop':>26}  ours/nvitop")
    for case in args.cases.split(","):
        gpus, sleepers, pids_file = _fake_case(case)
        pids = [p.pid for p in sleepers]
        results: dict[str, list[list[dict[str, float]]]] = {"ours": [], "nvitop": []}
        orders = [
            ("ours", "nvitop") if pair % 2 == 0 else ("nvitop", "ours")
            for pair in range(args.pairs)
        ]
        groups = (
            [[p for order in orders for p in order]]
            if args.together
            else [[p] for order in orders for p in order]
        )
        try:
            for group in groups:
                measured = run_group(
                    group,
                    gpus,
                    pids_file,
                    pids,
                    (cols, rows),
                    args.seconds,
                    args.steady_after,
                    args.steady_seconds,
                )
                for program, windows in zip(group, measured, strict=True):
                    results[program].append(windows)
        finally:
            stop(sleepers)
            pids_file.unlink(missing_ok=True)
        _print_case(case, results, floors.get(gpus))
    if args.once_pairs > 0:
        once_rows(args.once_pairs, args.once_case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
