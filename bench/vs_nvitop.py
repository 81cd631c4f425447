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
* peak RSS (VmHWM) and steady RSS (VmRSS) at the end, from ``/proc/<pid>/status``;
* terminal bytes/s over the window, from tmux ``pipe-pane`` into a file.

Before the runs it prints each program's RSS floor: a fresh interpreter that has only
imported the libraries the program is built on (Textual for gputop-hints, curses for
nvitop; nvitop's api, psutil and the fake NVML for both) and holds no data.

Before the runs the tree's own modules (gputop_hints, tests/support, bench) are
byte-compiled, as installing a package does (nvitop's are, in site-packages):
where ``PYTHONDONTWRITEBYTECODE`` is set, every launch would otherwise compile
gputop-hints from source, ~90 ms of its start-up that no installed copy pays.

Then the once row: ``--once-pairs`` runs of each one-shot command, alternating,
on the same fake node (``--once-case``, 1x1), with no terminal (output to
/dev/null): ``gputop-hints --once --duration 0.25 --interval 0.25`` and
``nvitop --once``, plus the launcher alone (``fake_node.py ... none``: Python,
the fake NVML and its installation, the floor under both). CPU is user + system
from each child's rusage (``os.wait4``), so the whole life of the process counts;
it is printed as it is and less the launcher's median.

It prints the median (min-max) of each and the ratio of the medians::

    PYTHONPATH=. .venv/bin/python bench/vs_nvitop.py [--pairs 3] [--seconds 30]
        [--cases 1x1,8x64,8x256] [--size 160x50] [--once-pairs 10] [--once-case 1x1]
        [--once-only]

``--once-only`` runs only the once row (under a minute at 10 pairs);
``--once-pairs 0`` leaves it out.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
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
    ("rss", "steady RSS MB"),
    ("bytes_s", "terminal bytes/s"),
    ("first_rows", "launch -> rows s"),
)


def one_run(
    program: str, gpus: int, pids_file: Path, pids: list[int], size: tuple[int, int], seconds: float
) -> dict[str, float]:
    """One program, one run: the metrics of :data:`METRICS`."""
    tmux = Tmux()
    fd, out_name = tempfile.mkstemp(prefix=f"vs-{program}-", suffix=".out")
    os.close(fd)
    out = Path(out_name)
    wanted = re.compile(r"\b(" + "|".join(str(p) for p in pids) + r")\b")
    command = [sys.executable, str(ROOT / "bench" / "fake_node.py"), "--gpus", str(gpus)]
    command += ["--pids-file", str(pids_file), program]
    try:
        launched = time.monotonic()
        tmux.start(command, width=size[0], height=size[1], env={"PYTHONPATH": str(ROOT)})
        tmux.run("pipe-pane", "-t", "t", f"cat >> {out}")
        pid = tmux.pid()
        first_rows = float("nan")
        while time.monotonic() - launched < 120:
            if wanted.search(tmux.screen()):
                first_rows = time.monotonic() - launched
                break
            time.sleep(0.05)
        time.sleep(SETTLE_S)
        cpu0, bytes0, t0 = _cpu_seconds(pid), out.stat().st_size, time.monotonic()
        time.sleep(seconds)
        cpu1, bytes1, t1 = _cpu_seconds(pid), out.stat().st_size, time.monotonic()
        peak, rss = _peak_rss_bytes(pid)
    finally:
        tmux.kill()
        out.unlink(missing_ok=True)
    took = t1 - t0
    cpu = cpu1 - cpu0
    return {
        "cpu": 100.0 * cpu / took,
        "ms_tick": 1000.0 * cpu / (took / TICK_S[program]),
        "peak_rss": peak / 1e6,
        "rss": rss / 1e6,
        "bytes_s": (bytes1 - bytes0) / took,
        "first_rows": first_rows,
    }


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
    gpus, count = (int(v) for v in case.lower().split("x"))
    sleepers = spawn_sleepers(count)
    fd, name = tempfile.mkstemp(prefix="vs-pids-")
    os.close(fd)
    pids_file = Path(name)
    pids_file.write_text("\n".join(str(p.pid) for p in sleepers) + "\n")
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
        print(f"{case:>6}  {label:<18} {_spread(ours):>26} {_spread(theirs):>26}  {ratio:8.2f}")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):8.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0, help="measured per run (30)")
    parser.add_argument("--cases", default="1x1,8x64,8x256", help="GPUsxprocesses, comma-separated")
    parser.add_argument("--size", default="160x50", help="terminal COLSxROWS (160x50)")
    parser.add_argument(
        "--once-pairs", type=int, default=10, help="one-shot runs of each for the once row (10)"
    )
    parser.add_argument("--once-case", default="1x1", help="GPUsxprocesses for the once row")
    parser.add_argument("--once-only", action="store_true", help="run only the once row")
    args = parser.parse_args()
    cols, rows = (int(v) for v in args.size.lower().split("x"))
    for tree in ("gputop_hints", "tests/support", "bench"):
        compileall.compile_dir(ROOT / tree, quiet=1)
    if args.once_only:
        print(f"gputop-hints {version('gputop-hints')} vs nvitop {version('nvitop')}, fake NVML")
        print(
            f"{'case':>6}  {'metric':<18} {'ours median (min-max)':>26} {'nvitop':>26}  ours/nvitop"
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
    try:
        tree_mb = widget_floor_mb(1, floor_pids, (cols, rows))
    finally:
        floor_pids.unlink(missing_ok=True)
    print(
        f"gputop-hints' widget tree drawn, no data (its memory floor, issue 49): {tree_mb:.1f} MB "
        f"at {args.size}; the RSS rows below hold that plus the data"
    )
    print(f"{'case':>6}  {'metric':<18} {'ours median (min-max)':>26} {'nvitop':>26}  ours/nvitop")
    for case in args.cases.split(","):
        gpus, count = (int(v) for v in case.lower().split("x"))
        sleepers = spawn_sleepers(count)
        pids = [p.pid for p in sleepers]
        fd, name = tempfile.mkstemp(prefix="vs-pids-")
        os.close(fd)
        pids_file = Path(name)
        pids_file.write_text("\n".join(map(str, pids)) + "\n")
        results: dict[str, list[dict[str, float]]] = {"ours": [], "nvitop": []}
        try:
            for pair in range(args.pairs):
                order = ("ours", "nvitop") if pair % 2 == 0 else ("nvitop", "ours")
                for program in order:
                    results[program].append(
                        one_run(program, gpus, pids_file, pids, (cols, rows), args.seconds)
                    )
        finally:
            stop(sleepers)
            pids_file.unlink(missing_ok=True)
        for key, label in METRICS:
            ours = [r[key] for r in results["ours"]]
            theirs = [r[key] for r in results["nvitop"]]
            base = statistics.median(theirs)
            ratio = statistics.median(ours) / base if base else float("nan")
            print(f"{case:>6}  {label:<18} {_spread(ours):>26} {_spread(theirs):>26}  {ratio:8.2f}")
    if args.once_pairs > 0:
        once_rows(args.once_pairs, args.once_case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
