"""What reading stacks costs, and what it reads from the lab's trainer (issue 45).

Runs bench/pipelab/trainer.py (a real Python training loop with real worker processes)
in two shapes -- ``num_workers=0`` (loading in the main process) and one worker too
slow for the step (the main thread waits for batches) -- and samples each with
:func:`gputop_hints.stacks.sample` at the default rate (5 dumps a second for 3 s, the
main process and its workers), then prints:

* what :func:`~gputop_hints.stacks.classify` reads (each category's share and top frame,
  each worker's top frame);
* py-spy's CPU time (user + system, from ``RUSAGE_CHILDREN``: every dump is our child)
  per dump, per second of sampling, and the average share of one core when a 3 s window
  is sampled once a minute (issue 45 asks < 1 %);
* how many dumps came back empty (``--nonblocking`` reads the target unpaused).

    PYTHONPATH=.:bench .venv/bin/python bench/stack_cost.py [--window 3] [--every 60]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipelab.board import EPOCH, READY, Board  # beside this file
from pipelab.trainer import Config, make_dataset

from gputop_hints.stacks import classify, sample
from gputop_hints.stacks.sampler import DEFAULT_PERIOD_S

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
SHAPES = {
    "num_workers=0": {"num_workers": 0, "batch_size": 16, "cpu_reps": 8},
    "1 slow worker": {"num_workers": 1, "batch_size": 16, "cpu_reps": 40},
}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_shape(
    name: str, settings: dict[str, int], window_s: float, every_s: float, work: Path
) -> None:
    data = work / "data"
    if not data.exists():
        make_dataset(data, 64)
    board_path = work / f"board-{len(list(work.iterdir()))}"
    board = Board.create(board_path)
    board.slots[EPOCH] = time.time()
    cfg = Config(data_dir=str(data), board=str(board_path), duration_s=window_s + 30, **settings)  # type: ignore[arg-type]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(BENCH), str(REPO)]))
    trainer = subprocess.Popen([sys.executable, "-m", "pipelab.trainer", cfg.to_json()], env=env)
    workers: list[int] = []
    try:
        while board.slots[READY] < 1.0:
            time.sleep(0.05)
        time.sleep(1.0)  # past the first batches
        workers = [
            p.pid
            for p in psutil.Process(trainer.pid).children()
            if p.name().startswith("python") or "pt_data_worker" in p.name()
        ]
        samples = max(1, round(window_s / DEFAULT_PERIOD_S))
        before, start = children_cpu_s(), time.monotonic()
        got = sample(trainer.pid, workers, samples=samples)
        wall = time.monotonic() - start
        cpu = children_cpu_s() - before
    finally:
        for pid in workers:  # daemon workers outlive a killed parent
            with suppress(psutil.Error):
                psutil.Process(pid).kill()
        trainer.kill()
        trainer.wait()
        board.close()
    dumps = samples * (1 + len(workers))
    reading = classify(got)
    print(
        f"\n{name} (pid {trainer.pid}, workers {workers}): {reading.samples} main-thread "
        f"samples in {wall:.1f} s"
    )
    if reading.reason:
        print(f"  reason: {reading.reason}")
    for c in reading.categories:
        top = c.top_frames[0].frame.where() if c.top_frames else "-"
        print(f"  {c.name:18s} {c.share:6.0%}  {top}")
    for w in reading.workers:
        top = w.top_frames[0].frame.where() if w.top_frames else "-"
        print(f"  worker {w.pid}: {w.busy_samples}/{w.samples} busy, top {top}")
    empty = got.main.failed + sum(w.failed for w in got.workers)
    per_dump_ms = cpu / dumps * 1000
    per_s = cpu / wall
    share = cpu / every_s
    print(
        f"  py-spy CPU: {per_dump_ms:.1f} ms per dump ({dumps} dumps), "
        f"{per_s * 100:.1f} % of a core while sampling, "
        f"{share * 100:.2f} % of a core averaged for a {window_s:g} s window every "
        f"{every_s:g} s; empty dumps {empty}/{dumps}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=3.0, help="seconds sampled")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between windows")
    args = parser.parse_args()
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
        f"{1 / DEFAULT_PERIOD_S:g} dumps a second"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings in SHAPES.items():
            run_shape(name, settings, args.window, args.every, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
