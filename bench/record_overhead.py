"""CPU cost of ``gputop-hints record`` at 1 Hz on 8 GPUs.

Runs the recorder in a child process for ``--seconds`` of real time on the demo
("mixed", 8 GPUs, 64 processes) and reports its CPU use as a percentage of one
core, split into the whole process and the writer alone (encoding + writing +
flushing, measured in-process around RecordingWriter.write). The demo simulator
itself costs ~1.6 ms a tick, which stands in for the live source's sampling
(~2.5-5 ms a tick on the fake NVML); the writer's share is what recording adds
to a monitor's cost.

With ``--hints`` the hints also run on every tick, as ``record --notify`` runs them
(and as recording would have to, to choose whom to sample with py-spy, issue 45): their
share is printed apart.

Usage::

    python bench/record_overhead.py [--seconds 60] [--gz] [--hints]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, sys, time
from gputop_hints.recording import RecordingWriter
from gputop_hints.sampling.record import record
from gputop_hints.sources.demo import DemoSource

spent = [0.0]
write = RecordingWriter.write
def timed(self, snapshot):
    c = time.thread_time()
    write(self, snapshot)
    spent[0] += time.thread_time() - c
RecordingWriter.write = timed

source = DemoSource("mixed", gpus=8, processes=64)
sampled = [0.0]
sample = source.sample
def timed_sample():
    c = time.thread_time()
    s = sample()
    sampled[0] += time.thread_time() - c
    return s
source.sample = timed_sample
hinted = [0.0]
on_tick = None
if sys.argv[3] == "1":
    from gputop_hints.hints.diagnoser import Diagnoser
    diagnoser = Diagnoser(interval_s=1.0)
    def on_tick(snapshot):
        c = time.thread_time()
        diagnoser.feed(snapshot)
        hinted[0] += time.thread_time() - c
c0 = time.process_time(); t0 = time.monotonic()
# pace=True: a bounded demo recording would otherwise run as fast as it goes, and
# the cost of recording in real time is what this measures.
code = record(source, sys.argv[1], interval_s=1.0, duration_s=float(sys.argv[2]), pace=True,
              on_tick=on_tick)
wall = time.monotonic() - t0
print(json.dumps({"cpu": time.process_time() - c0, "wall": wall, "writer": spent[0],
                  "source": sampled[0], "hints": hinted[0], "code": code}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--gz", action="store_true")
    parser.add_argument("--hints", action="store_true", help="run the hints on every tick")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("bench.jsonl.gz" if args.gz else "bench.jsonl")
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), str(args.seconds), "1" if args.hints else "0"],
            check=True,
            capture_output=True,
            text=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        size = path.stat().st_size
    wall = r["wall"]
    print(
        f"record at 1 Hz, 8 GPUs x 64 processes (demo), {wall:.0f} s, {size / 1e3:.0f} kB written"
    )
    print(f"  whole recorder process: {r['cpu'] / wall * 100:.2f} % of one core")
    print(f"    demo simulator (stands in for NVML + psutil): {r['source'] / wall * 100:.2f} %")
    print(f"    writer (encode + write + flush):              {r['writer'] / wall * 100:.2f} %")
    if args.hints:
        hints = r["hints"] / wall * 100
        print(f"    hints (Diagnoser.feed, as --notify runs them): {hints:.2f} %")
    ticks = round(args.seconds)
    print(
        f"  writer per tick: {r['writer'] / ticks * 1e3:.2f} ms; bytes per tick: {size / ticks:.0f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
