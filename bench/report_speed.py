"""How fast is ``gputop-hints report`` on a day-long recording of a big machine?

Generates (once, cached in /tmp) a 24 h recording at 1 Hz of the demo's "mixed"
scenario on 8 GPUs with 64 processes, written through RecordingWriter --
generation is not measured -- then builds the report in a child process and
prints its wall time, CPU time and peak RSS, with the file's size.

Usage::

    python bench/report_speed.py [--hours 24] [--gz] [--stride K]
    python bench/report_speed.py --table-log [--table-gb 1]

``--table-log`` measures instead the importer on a plain ``nvidia-smi`` table
log (``while true; do nvidia-smi >> gpu.log; ...``) of about 1 GB, generated in
a temporary directory from the shared 8-GPU trace with changing values and
times: one pass reading every snapshot, then the report as ``gputop-hints
report`` builds it; wall time and peak RSS of each (goal: under 60 s, 200 MB).
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
from gputop_hints.recording.reader import open_recording
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


CHILD_TABLE = """
import json, resource, sys, time
from gputop_hints.outputs.report import build_report, report_text
from gputop_hints.sources.files import open_stream
stride = None if sys.argv[2] == "auto" else int(sys.argv[2])
t0 = time.perf_counter()
stream = open_stream(sys.argv[1])
ticks = sum(1 for _ in stream)
read_s = time.perf_counter() - t0
read_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t1 = time.perf_counter()
report = build_report(open_stream(sys.argv[1]), hint_stride=stride)
report_text(report, 120)
print(json.dumps({
    "read_s": read_s, "read_rss_mb": read_rss, "ticks": ticks,
    "report_s": time.perf_counter() - t1,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "stride": report.hint_stride, "findings": len(report.findings),
    "bad": stream.counters.bad_lines,
}))
"""

TABLE_FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "fixtures"
    / "import"
    / "nvsmi_table_separators.log"
)


def generate_table_log(path: Path, size_bytes: int) -> int:
    """Repeat the first snapshot of a 2-GPU fixture (driver 545 layout, one process)
    with a new time and utilization each time until the file holds ``size_bytes``."""
    text = TABLE_FIXTURE.read_text()
    start_at = text.index("Tue Dec  1 20:06:47 2026")
    first = text[start_at : text.index("\n&\n", start_at) + 1]
    date, body = first.split("\n", 1)
    start = time.mktime(time.strptime(date.strip(), "%a %b %d %H:%M:%S %Y"))
    count = 0
    with open(path, "w") as f:
        while f.tell() < size_bytes:
            stamp = time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(start + 5 * count))
            util = f"{(count * 7) % 101:>3}%"
            f.write(f"{stamp}       \n" + body.replace(" 42%      Default", f"{util}      Default"))
            count += 1
    return count


def table_log(size_gb: float, stride: str) -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gpu.log"
        started = time.perf_counter()
        count = generate_table_log(path, round(size_gb * 1e9))
        size = path.stat().st_size
        print(
            f"  generated {count} snapshots, {size / 1e6:.0f} MB "
            f"in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        out = subprocess.run(
            [sys.executable, "-c", CHILD_TABLE, str(path), stride],
            check=True,
            capture_output=True,
            text=True,
        )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"nvidia-smi table log: {size / 1e6:.0f} MB, {r['ticks']} snapshots (2 GPUs)")
    print(f"read: {r['read_s']:.1f} s wall, peak RSS {r['read_rss_mb']:.0f} MB, {r['bad']} bad")
    print(
        f"report: {r['report_s']:.1f} s wall, peak RSS {r['rss_mb']:.0f} MB; "
        f"hints every {r['stride']} ticks, {r['findings']} findings"
    )
    print(f"  [{'ok' if r['read_s'] < 60 else 'OVER'}] read under 60 s")
    print(f"  [{'ok' if r['rss_mb'] < 200 else 'OVER'}] under 200 MB RSS")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--gz", action="store_true", help="a gzip recording")
    parser.add_argument("--stride", default="auto", help="hint stride (default: auto)")
    parser.add_argument(
        "--table-log", action="store_true", help="measure a plain nvidia-smi table log instead"
    )
    parser.add_argument("--table-gb", type=float, default=1.0, help="its size (default 1 GB)")
    args = parser.parse_args()
    if args.table_log:
        return table_log(args.table_gb, args.stride)
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
