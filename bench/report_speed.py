"""How fast is ``gputop-hints report`` on a day-long recording of a big machine?

Generates (once, cached in /tmp) a 24 h recording at 1 Hz of the demo's "mixed"
scenario on 8 GPUs with 64 processes, written through RecordingWriter --
generation is not measured -- then builds the report in a child process and
prints its wall time, CPU time and peak RSS, with the file's size.

Usage::

    python bench/report_speed.py [--hours 24] [--gz] [--stride K]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD = """
import json, resource, sys, time
from gputop_hints.outputs.report import build_report, report_text
from gputop_hints.sources.files.recording import open_recording
stride = None if sys.argv[2] == "auto" else int(sys.argv[2])
t0 = time.perf_counter(); c0 = time.process_time()
stream = open_recording(sys.argv[1])
report = build_report(stream, hint_stride=stride)
text = report_text(report, 120)
elapsed = time.perf_counter() - t0
print(json.dumps({
    "wall_s": elapsed, "cpu_s": time.process_time() - c0,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "samples": report.samples, "stride": report.hint_stride,
    "evaluations": report.hint_evaluations, "findings": len(report.findings),
}))
"""


def generate(path: Path, hours: float) -> None:
    from gputop_hints.recording import RecordingWriter
    from gputop_hints.sources.demo import DemoSource

    ticks = round(hours * 3600)
    source = DemoSource("mixed", gpus=8, processes=64)
    tmp = path.with_name(path.name + ".part")
    started = time.perf_counter()
    with RecordingWriter(tmp) as writer:
        for i in range(ticks):
            writer.write(source.sample())
            if i % 3600 == 0:
                print(f"  generating: {i / 3600:.0f} h", file=sys.stderr)
    tmp.replace(path)
    print(f"  generated {ticks} ticks in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--gz", action="store_true", help="a gzip recording")
    parser.add_argument("--stride", default="auto", help="hint stride (default: auto)")
    args = parser.parse_args()
    suffix = ".jsonl.gz" if args.gz else ".jsonl"
    path = Path("/tmp") / f"gputop-hints-bench-{args.hours:g}h-8gpu-64proc{suffix}"
    if not path.exists():
        generate(path, args.hours)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), args.stride],
        check=True,
        capture_output=True,
        text=True,
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    size = os.path.getsize(path)
    print(f"recording: {path} ({size / 1e6:.0f} MB, {r['samples']} ticks)")
    print(
        f"report: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, peak RSS {r['rss_mb']:.0f} MB; "
        f"hints every {r['stride']} ticks ({r['evaluations']} engine runs), "
        f"{r['findings']} findings"
    )
    ok_time = r["wall_s"] < 15
    ok_rss = r["rss_mb"] < 200
    print(f"  [{'ok' if ok_time else 'OVER'}] under 15 s")
    print(f"  [{'ok' if ok_rss else 'OVER'}] under 200 MB RSS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
