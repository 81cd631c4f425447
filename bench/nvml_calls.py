"""How many NVML calls each monitor makes a second, on the same fake node.

On a real GPU every NVML call is a trip into the driver (an ioctl, often several),
and that CPU time is charged to the monitor; on the fake NVML of the other
benchmarks calls are nearly free, so their CPU figures cannot show it. This
counts the calls at the fake's boundary (tests/support/fake_nvml.py's
``calls``), which does not depend on the machine's load: gputop-hints and
unmodified nvitop at their defaults (1 s and 2 s updates), each in a tmux pane,
for ``--seconds`` after a settling time, per case of ``--cases``::

    PYTHONPATH=. .venv/bin/python bench/nvml_calls.py [--seconds 10] [--cases 1x1,8x64]

It prints the calls a second of each, their ratio, the calls per tick, and the
functions each calls most.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_node import spawn_sleepers, stop  # the fake node beside this file
from vs_nvitop import SETTLE_S, TICK_S  # the same defaults as the side-by-side bench

from tests.support.tmux_harness import Tmux

ROOT = Path(__file__).resolve().parent.parent


def _read(path: Path) -> tuple[float, Counter[str]]:
    data = json.loads(path.read_text())
    return float(data["t"]), Counter(data["calls"])


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > end:
            raise SystemExit(f"no calls were written to {path} in {timeout:.0f} s")
        time.sleep(0.1)


def one_run(program: str, gpus: int, pids_file: Path, seconds: float) -> tuple[float, Counter[str]]:
    """Calls a second, and the calls per function made in the measured window."""
    tmux = Tmux()
    with tempfile.TemporaryDirectory(prefix="nvml-calls-") as tmp:
        calls_file = Path(tmp) / "calls.json"
        command = [sys.executable, str(ROOT / "bench" / "fake_node.py"), "--gpus", str(gpus)]
        command += ["--pids-file", str(pids_file), "--calls-out", str(calls_file), program]
        try:
            tmux.start(command, width=160, height=50, env={"PYTHONPATH": str(ROOT)})
            _wait_for(calls_file)
            time.sleep(SETTLE_S + 2.0)
            t0, before = _read(calls_file)
            time.sleep(seconds)
            t1, after = _read(calls_file)
        finally:
            tmux.kill()
    window = after - before
    return sum(window.values()) / (t1 - t0), window


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--cases", default="1x1,8x64", help="GPUsxprocesses, comma-separated")
    parser.add_argument("--top", type=int, default=8, help="functions listed per program")
    args = parser.parse_args()
    for case in args.cases.split(","):
        gpus, processes = (int(n) for n in case.split("x"))
        sleepers = spawn_sleepers(processes)
        try:
            with tempfile.NamedTemporaryFile("w", suffix=".pids", delete=False) as f:
                f.write("\n".join(str(p.pid) for p in sleepers))
            pids_file = Path(f.name)
            results = {p: one_run(p, gpus, pids_file, args.seconds) for p in ("ours", "nvitop")}
        finally:
            stop(sleepers)
            pids_file.unlink(missing_ok=True)
        ours, theirs = results["ours"][0], results["nvitop"][0]
        print(f"== {gpus} GPU(s) x {processes} process(es), {args.seconds:.0f} s each")
        for program, (rate, window) in results.items():
            per_tick = rate * TICK_S[program]
            print(f"  {program:<7} {rate:9.1f} NVML calls/s  {per_tick:8.1f} a tick")
            for name, count in window.most_common(args.top):
                print(f"      {name:<52} {count / args.seconds:8.1f}/s")
        print(f"  ours / nvitop: {ours / theirs:.2f} (calls a second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
