"""How fast is ``gputop-hints report`` on a day-long recording of a big machine?

Generates (once, cached in /tmp) a 24 h recording at 1 Hz of the demo's "mixed"
scenario on 8 GPUs with 64 processes, written through RecordingWriter --
generation is not measured -- then builds the report in a child process and
prints its wall time, CPU time and peak RSS, with the file's size.

Usage::

    python bench/report_speed.py [--hours 24] [--gz] [--stride K]
    python bench/report_speed.py --table-log [--table-gb 1]
    python bench/report_speed.py --formats [--mb 3] [--e2e-mb 10] [--only csv,wandb]
    python bench/report_speed.py --lms100

``--table-log`` measures instead the importer on a plain ``nvidia-smi`` table
log (``while true; do nvidia-smi >> gpu.log; ...``) of about 1 GB, generated in
a temporary directory from the shared 8-GPU trace with changing values and
times: one pass reading every snapshot, then the report as ``gputop-hints
report`` builds it; wall time and peak RSS of each (goal: the report of 1 GB
under 60 s, 100 MB).

``--formats`` measures every reader (one per format of ALL_FORMATS): for each,
an input of about ``--mb`` MB is generated in a temporary directory under /tmp
by repeating a small fixture (tests/fixtures/import or the shared traces) with
its timestamps advanced copy by copy; a child process then times, in CPU time
(the machine may be shared: other tenants' jobs move wall time, not this), (a) reading
every snapshot (the fastest of READ_PASSES passes), (b) building its records
again from their fields (what a record costs to build, per GPU reading) and (c)
the full report, hints included, and (d) the bare scan of the file (each line
decoded and split, nothing more). Then ``gputop-hints report`` runs end to end, as
a user runs it, on inputs of ``--e2e-mb`` MB (default 10) and twice that, and the
line through the two times is projected to 100 MB. The table shows GPU readings a
second and MB/s read, the format's floor, the build cost, the scan's MB/s, bytes a
GPU reading, report s, peak RSS, the end-to-end time and the 100 MB projection,
and judges each format (:func:`judge`): the rate clause (readings a second >= the
floor, :func:`floor_for`, never under MIN_READINGS_PER_S; "n/a" where the floor
would need more MB/s than the bare scan reads) and the 100 MB clause (projected
<= END_TO_END_GOAL_S), met or NOT MET. It ends with ``--lms100``.

``--lms100`` times ``gputop-hints report`` end to end on a generated 10-minute
``nvidia-smi --query-gpu=... --format=csv -lms 100`` log of 8 GPUs without an
index column, some polls short (goal: LMS100_GOAL_S).
"""

from __future__ import annotations

import argparse
import calendar
import itertools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
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


LMS100_HEADER = "timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]\n"


def generate_lms100(path: Path, minutes: float = 10.0, gpus: int = 8) -> int:
    """An ``nvidia-smi --query-gpu=timestamp,power.draw,utilization.gpu,memory.used
    --format=csv -lms 100`` log of a node with ``gpus`` GPUs and no index column: the
    rows of one poll share its stamp, a poll every 102 ms, and about one poll in
    three short (1, 2, 4 or 5 rows: the shape of
    tests/fixtures/import/nvsmi_noindex_8gpu_lms100_short.csv). Six GPUs train
    after a minute of loading, with a data-loader stall every few seconds; two hold
    memory and idle. Seeded, so every run writes the same file. The number of rows."""
    import random

    rng = random.Random(42)
    start = calendar.timegm((2024, 3, 5, 14, 0, 0, 0, 0, 0))
    polls = round(minutes * 60 / 0.102)
    rows = 0
    with open(path, "w") as f:
        f.write(LMS100_HEADER)
        for n in range(polls):
            t = start + 0.120 + n * 0.102
            stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(t))
            stamp += f".{int(t * 1000) % 1000:03d}"
            size = rng.choice((1, 2, 4, 5)) if rng.random() < 0.3 else gpus
            lines = []
            for g in range(size):
                loading = t - start < 60
                if g >= 6 or loading:
                    util = 0
                elif n % 40 < 6:  # the input pipeline stalls 0.6 s in every 4 s
                    util = rng.choice((0, 0, 3))
                else:
                    util = rng.choice((97, 99, 100, 100))
                power = 60.0 + g + util * 2.5 + rng.random()
                used = (1000 + 3000 * g) if loading else (30000 + 1000 * g + rng.randrange(64))
                lines.append(f"{stamp}, {power:.2f} W, {util} %, {used} MiB\n")
            f.writelines(lines)
            rows += size
    return rows


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
    rate = size / 1e6 / r["read_s"] if r["read_s"] else float("inf")
    per_gb = (r["read_s"] + r["report_s"]) * 1e9 / size if size else 0.0
    print(f"  read {rate:.1f} MB/s; read + report {per_gb:.0f} s per GB")
    floor = READ_FLOOR_MB_S
    print(f"  [{'ok' if rate >= floor else 'BELOW FLOOR'}] read >= {floor:g} MB/s")
    print(f"  [{'ok' if r['report_s'] * 1e9 / size <= 60 else 'OVER'}] report under 60 s per GB")
    ceiling = RSS_CEILING_MB
    print(f"  [{'ok' if r['rss_mb'] <= ceiling else 'OVER'}] under {ceiling:g} MB RSS")
    return 0


READ_FLOOR_MB_S = 20.0
READ_PASSES = 3
"""The read is timed this many times, the fastest kept: on a shared 2-core machine one
pass moves by a third from run to run (other tenants), the fastest by a few percent."""
RSS_CEILING_MB = 100.0
_ROOT = Path(__file__).resolve().parents[1]
_IMPORT = _ROOT / "tests" / "fixtures" / "import"
_TRACES = _ROOT.parent / "shared" / "traces"

_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def _epoch(t: float, m: re.Match[str]) -> str:
    text = m.group(0)
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    return f"{t:.{decimals}f}"


def _ctime(t: float, m: re.Match[str]) -> str:
    tm = time.gmtime(t)
    return (
        f"{_DAYS[tm.tm_wday]} {_MONTHS[tm.tm_mon - 1]} {tm.tm_mday:2d} "
        f"{tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d}{m.group(5)}{tm.tm_year}"
    )


_Parse = Callable[[re.Match[str]], float]
_Write = Callable[[float, re.Match[str]], str]

# kind: (pattern, to epoch, back to text)
_STAMPS: dict[str, tuple[re.Pattern[str], _Parse, _Write]] = {
    "epoch": (re.compile(r"\b1[4-9]\d{8}(?:\.\d+)?\b"), lambda m: float(m.group(0)), _epoch),
    "slash": (
        re.compile(r"(\d{4})/(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d)"),
        lambda m: calendar.timegm(time.strptime(m.group(0), "%Y/%m/%d %H:%M:%S")),
        lambda t, m: time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(t)),
    ),
    "iso": (
        re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"),
        lambda m: calendar.timegm(time.strptime(m.group(0), "%Y-%m-%dT%H:%M:%S")),
        lambda t, m: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)),
    ),
    "logging": (
        re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?=,\d{3} )"),
        lambda m: calendar.timegm(time.strptime(m.group(0), "%Y-%m-%d %H:%M:%S")),
        lambda t, m: time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)),
    ),
    "dmon": (
        re.compile(r"(\d{8})(\s+)(\d\d:\d\d:\d\d)"),
        lambda m: calendar.timegm(time.strptime(m.group(1) + m.group(3), "%Y%m%d%H:%M:%S")),
        lambda t, m: (
            time.strftime("%Y%m%d", time.gmtime(t))
            + m.group(2)
            + time.strftime("%H:%M:%S", time.gmtime(t))
        ),
    ),
    "ctime": (
        re.compile(
            r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
            r"([ \d]\d) (\d\d:\d\d:\d\d)(\s+(?:UTC\s+)?)(\d{4})"  # ctime, or date's in UTC
        ),
        lambda m: calendar.timegm(
            time.strptime(
                f"{m.group(2)} {int(m.group(3))} {m.group(4)} {m.group(6)}", "%b %d %H:%M:%S %Y"
            )
        ),
        _ctime,
    ),
}

# format: (fixture, header lines kept once, timestamp kind or None); a ":N" after the
# file name repeats only its first N lines (gpustat.jsonl ends in a cut-short line)
FORMAT_INPUTS: dict[str, tuple[Path, int, str | None]] = {
    "recording": (Path("-"), 0, "epoch"),
    "wandb": (_TRACES / "spaceinvaders_wandb-events.jsonl", 0, "epoch"),
    "nvidia-smi-dmon": (_IMPORT / "dmon_dt.log", 0, "dmon"),
    "nvidia-smi-table": (_TRACES / "nvsmi_table_checkin_384.log", 0, "ctime"),
    "nvidia-smi-watch": (_TRACES / "nvsmi_watch_hirataken_570.log", 0, "ctime"),
    "nvitop": (_IMPORT / "nvitop_once.log", 0, "ctime"),
    "nvidia-smi-query": (_IMPORT / "nvsmi_q_two_dumps.log", 0, "ctime"),
    "nvidia-smi-pmon": (_IMPORT / "pmon_dt.log", 0, "dmon"),
    "nvidia-smi-apps": (_IMPORT / "merge_apps.csv", 1, "slash"),
    "dcgmi-dmon": (_IMPORT / "dcgmi_dmon.log", 0, None),
    "dcgm-exporter": (_IMPORT / "dcgm_exporter_scrapes.log:130", 0, "ctime"),
    "gpustat": (_IMPORT / "gpustat.jsonl:2", 0, "iso"),
    "jsonl": (_IMPORT / "script_nested.jsonl", 0, "iso"),
    "nvidia-smi-csv": (_TRACES / "openad_gpu_usage.csv", 1, "slash"),
    "csv": (_TRACES / "machine_translation_gpu_usage.csv", 1, "epoch"),
    "kv-lines": (_IMPORT / "kv_logging_2gpu.log", 0, "logging"),
    "wandb-run": (_IMPORT / "run-g7x2k9qa.wandb", 0, None),
}
"""The binary W&B run file is not repeated as text: see :func:`generate_wandb_run`."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def generate_wandb_run(fixture: Path, path: Path, size_bytes: int) -> int:
    """A W&B run file of about ``size_bytes``: the fixture's stats items again and
    again, one stats record every 15 s, framed as W&B's writer frames records (32 KiB
    blocks, CRC-32 chunks, records split across blocks); the number of records."""
    import zlib

    from gputop_hints.sources.files import wandb_run

    items: list[bytes] = []

    def stats_items(data: memoryview) -> None:
        for number, value in wandb_run._fields(data):
            if number == 7 and isinstance(value, memoryview) and not items:
                items.extend(
                    _field(3, bytes(v))
                    for n, v in wandb_run._fields(value)
                    if n == 3 and isinstance(v, memoryview)
                )

    with open(fixture, "rb") as f:
        for _n, _at, data in wandb_run.records(f, lambda _n, why: None):
            stats_items(data)
    body = b"".join(items)
    block = wandb_run.BLOCK_BYTES
    header = wandb_run.CHUNK_HEADER
    count = 0
    with open(path, "wb") as out:
        out.write(wandb_run.FILE_HEADER)
        written = len(wandb_run.FILE_HEADER)
        while written < size_bytes:
            count += 1
            stamp = _field(2, b"\x08" + _varint(1733300000 + 15 * count))
            record = memoryview(_field(7, stamp + body))
            first = True
            while True:
                room = block - written % block
                if room < header.size:
                    out.write(b"\0" * room)
                    written += room
                    room = block
                piece, record = record[: room - header.size], record[room - header.size :]
                kind = (1 if first else 4) if not record else (2 if first else 3)
                crc = zlib.crc32(piece, zlib.crc32(bytes([kind])))
                out.write(header.pack(crc, len(piece), kind) + piece)
                written += header.size + len(piece)
                first = False
                if not record:
                    break
    return count


def _recording_seed(tmp: Path) -> str:
    """A short recording of the demo (2 GPUs, 8 processes) as text."""
    from gputop_hints.recording import RecordingWriter
    from gputop_hints.sources.demo import DemoSource

    path = tmp / "seed.jsonl"
    source = DemoSource("mixed", gpus=2, processes=8)
    with RecordingWriter(path) as writer:
        for _ in range(120):
            writer.write(source.sample())
    return path.read_text()


def _shift(text: str, kind: str, offset: float) -> str:
    """``text`` with every timestamp of ``kind`` moved ``offset`` seconds on."""
    pattern, parse, write = _STAMPS[kind]

    def moved(m: re.Match[str]) -> str:
        return write(parse(m) + offset, m)

    return pattern.sub(moved, text)


def generate_format(fmt: str, path: Path, size_bytes: int) -> int:
    """Write about ``size_bytes`` of ``fmt`` to ``path``; the number of copies of its fixture."""
    fixture, keep, kind = FORMAT_INPUTS[fmt]
    if fmt == "wandb-run":
        return generate_wandb_run(fixture, path, size_bytes)
    if fmt == "recording":
        text = _recording_seed(path.parent)
        lines = text.splitlines(keepends=True)
        head = "".join(line for line in lines if not line.startswith("["))
        body = "".join(line for line in lines if line.startswith("["))
    else:
        name, _, last = fixture.name.partition(":")
        with open(fixture.with_name(name), encoding="utf-8", errors="replace", newline="") as f:
            lines = f.read().splitlines(keepends=True)[: int(last) if last else None]
        head, body = "".join(lines[:keep]), "".join(lines[keep:])
    if not body.endswith("\n"):
        body += "\n"
    period = 0.0
    if kind is not None:
        pattern, parse, _ = _STAMPS[kind]
        stamps = sorted({parse(m) for m in pattern.finditer(body)})
        steps = [b - a for a, b in itertools.pairwise(stamps) if b - a > 0]
        period = (stamps[-1] - stamps[0] if stamps else 0.0) + (min(steps) if steps else 1.0)
    copies = 0
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(head)
        written = len(head.encode())
        while written < size_bytes:
            chunk = body if kind is None or copies == 0 else _shift(body, kind, copies * period)
            f.write(chunk)
            written += len(chunk.encode())
            copies += 1
    return copies


CHILD_FORMAT = """
import dataclasses, json, resource, sys, time
from gputop_hints.outputs.report import build_report, report_text
from gputop_hints.sources.files import open_stream
read_s = float("inf")
kept = []
for _ in range(int(sys.argv[2])):
    t0 = time.process_time()
    stream = open_stream(sys.argv[1])
    ticks = readings = 0
    for snap in stream:
        ticks += 1
        readings += len(snap.gpus)
        if len(kept) < 2000:
            kept.append(snap)
    read_s = min(read_s, time.process_time() - t0)
    fmt = stream.info.format
    stream.close()
# What a record costs to build: the reader's own snapshots and GPU samples made again
# from their fields (no parsing; the fields gathered beforehand), per GPU reading.
def fields(obj):
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
args = [(type(s), fields(s), [(type(g), fields(g)) for g in s.gpus]) for s in kept]
built = sum(len(s.gpus) for s in kept)
t0 = time.process_time()
for snap_type, snap_fields, gpus in args:
    snap_type(**{**snap_fields, "gpus": tuple(t(**f) for t, f in gpus)})
build_us = (time.process_time() - t0) / built * 1e6 if built else 0.0
# The bare cost of the bytes: each line decoded and split on blanks, nothing more (the
# least any reader does with them; the fastest of the passes).
scan_s = float("inf")
for _ in range(int(sys.argv[2])):
    t0 = time.process_time()
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        for line in f:
            line.split()
    scan_s = min(scan_s, time.process_time() - t0)
t1 = time.process_time()
stream = open_stream(sys.argv[1])
report = build_report(stream)
report_text(report, 120)
report_s = time.process_time() - t1
stream.close()
print(json.dumps({
    "format": fmt, "read_s": read_s, "ticks": ticks, "readings": readings,
    "build_us": build_us, "scan_s": scan_s, "report_s": report_s,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "stride": report.hint_stride, "evaluations": report.hint_evaluations,
    "bad": report.counters.bad_lines,
}))
"""

MIN_READINGS_PER_S = 100_000
"""No reader may read fewer GPU readings a second (issue 42: MB/s is no yardstick for
formats of tiny records, and a record costs the same to build whatever its size)."""
BUILD_SHARE = 0.1
"""A reader's floor is this share of the rate at which its records can merely be built
(its GPU samples and snapshots made again from their fields, no parsing: ~1-3 us a GPU
reading in CPython), and never under MIN_READINGS_PER_S: parsing may cost up to nine
times the building, no more."""


def floor_for(build_us: float) -> float:
    """The GPU readings a second a reader whose records cost ``build_us`` to build must reach."""
    return max(MIN_READINGS_PER_S, BUILD_SHARE * 1e6 / build_us if build_us else 0.0)


END_TO_END_MB = 100.0
END_TO_END_GOAL_S = 60.0
"""Issue 42: no log of END_TO_END_MB or less takes more than this, end to end, hints
included -- judged on every format, and the only clause for a format whose floor is
out of reach (:func:`judge`)."""
MEASURED_E2E_MB = 10.0
"""The end-to-end time behind the 100 MB projection is measured on two inputs, of this
size and of twice it, and extended along the line through them (:func:`project`)."""


def project(points: list[tuple[float, float]], target_mb: float, read_mb_s: float) -> float:
    """The end-to-end seconds for ``target_mb`` from measured (MB, seconds) ``points``:
    the measured time where one is that big, else the line through the two largest.
    The report is linear in the file past a fixed cost (the interpreter's start; the
    hints, once their stride holds them to a fixed budget of evaluations: at most the
    per-MB cost below that budget), so the line is an upper bound; and never less
    than reading ``target_mb`` alone takes."""
    points = sorted(points)
    (mb1, s1), (mb2, s2) = points[-2], points[-1]
    if mb2 >= target_mb:
        projected = s2 * target_mb / mb2
    else:
        slope = (s2 - s1) / (mb2 - mb1) if mb2 > mb1 else s2 / mb2
        projected = s2 + (target_mb - mb2) * slope
    return max(projected, target_mb / read_mb_s if read_mb_s else 0.0)


def judge(
    per_s: float, floor: float, bytes_per_reading: float, scan_mb_s: float, projected_s: float
) -> tuple[str, str, str]:
    """The rate clause, the 100 MB clause and the verdict of one format. The rate clause
    is out of reach ("n/a") where reading ``floor`` GPU readings a second would mean
    reading more MB/s than merely splitting the file's lines does (``scan_mb_s``: the
    readings hold so many bytes that no CPython parser gets there); the format is then
    judged on the 100 MB clause alone."""
    needed_mb_s = floor * bytes_per_reading / 1e6
    if per_s >= floor:
        rate = "met"
    elif needed_mb_s > scan_mb_s:
        rate = "n/a"
    else:
        rate = "NOT MET"
    e2e = "met" if projected_s <= END_TO_END_GOAL_S else "NOT MET"
    verdict = "met" if rate != "NOT MET" and e2e == "met" else "NOT MET"
    return rate, e2e, verdict


def _end_to_end(path: Path) -> float:
    """Seconds of ``gputop-hints report FILE`` as a user runs it (a child process: the
    interpreter's start and imports included), in CPU time (user + system): the
    report is one thread, so on an idle machine its wall time, and on a shared one
    what other tenants' jobs do not move."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "gputop_hints", "report", str(path)],
        check=True,
        capture_output=True,
        cwd=_ROOT,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def formats(size_mb: float, only: list[str], e2e_mb: float = MEASURED_E2E_MB) -> int:
    import tempfile

    names = only or list(FORMAT_INPUTS)
    print(
        f"{'format':<18} {'MB':>5} {'readings':>9} {'read/s':>9} {'floor/s':>9} {'build us':>8} "
        f"{'read MB/s':>9} {'scan MB/s':>9} {'B/read':>6} {'report s':>8} {'RSS MB':>6} "
        f"{'e2e MB':>6} {'e2e s':>6} {'100MB s':>7}  {'rate':<7} {'100MB':<7} verdict"
    )
    missed = 0
    for fmt in names:
        source = FORMAT_INPUTS.get(fmt)
        shared = source is not None and source[0].is_relative_to(_TRACES)
        if shared and source is not None and not Path(str(source[0]).split(":")[0]).exists():
            # The shared traces are not part of a clone: say so, do not fail.
            print(f"{fmt:<18} skipped: {source[0]} is not beside this checkout")
            continue
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            path = Path(tmp) / f"input-{fmt}.log"
            generate_format(fmt, path, round(size_mb * 1e6))
            size = path.stat().st_size / 1e6
            out = subprocess.run(
                [sys.executable, "-c", CHILD_FORMAT, str(path), str(READ_PASSES)],
                check=True,
                capture_output=True,
                text=True,
            )
            points = []
            for mb in (e2e_mb, 2 * e2e_mb):
                path.unlink()
                path = Path(tmp) / f"e2e-{fmt}.log"
                generate_format(fmt, path, round(mb * 1e6))
                points.append((path.stat().st_size / 1e6, _end_to_end(path)))
        e2e_size, e2e_s = points[-1]
        r = json.loads(out.stdout.strip().splitlines()[-1])
        read_rate = size / r["read_s"] if r["read_s"] else float("inf")
        per_s = r["readings"] / r["read_s"] if r["read_s"] else float("inf")
        scan_rate = size / r["scan_s"] if r["scan_s"] else float("inf")
        per_reading = size * 1e6 / r["readings"] if r["readings"] else float("inf")
        floor = floor_for(r["build_us"])
        projected = project(points, END_TO_END_MB, read_rate)
        rate, e2e, verdict = judge(per_s, floor, per_reading, scan_rate, projected)
        flags = []
        if r["format"] != fmt:
            flags.append(f"READ AS {r['format']}")
        if r["rss_mb"] > RSS_CEILING_MB:
            flags.append("OVER RSS")
            verdict = "NOT MET"
        if verdict != "met":
            missed += 1
        print(
            f"{fmt:<18} {size:>5.1f} {r['readings']:>9} {per_s:>9.0f} {floor:>9.0f} "
            f"{r['build_us']:>8.2f} {read_rate:>9.1f} {scan_rate:>9.1f} {per_reading:>6.0f} "
            f"{r['report_s']:>8.1f} {r['rss_mb']:>6.0f} {e2e_size:>6.1f} {e2e_s:>6.1f} "
            f"{projected:>7.0f}  {rate:<7} {e2e:<7} {verdict}"
            + (f"  {' '.join(flags)}" if flags else ""),
            flush=True,
        )
    print(
        f"rate: GPU readings a second >= floor = max({MIN_READINGS_PER_S:,}, "
        f"{BUILD_SHARE:g} / build us); n/a where the floor times the bytes a reading takes "
        f"(B/read) exceeds what merely splitting the file's lines reads (scan MB/s)"
    )
    print(
        f"100MB: `gputop-hints report` end to end (every time here is CPU seconds), "
        f"measured on {e2e_mb:g} MB and on twice that (e2e MB, e2e s), projected along "
        f"that line to {END_TO_END_MB:g} MB "
        f"<= {END_TO_END_GOAL_S:g} s; peak RSS <= {RSS_CEILING_MB:g} MB; {missed} NOT MET"
    )
    return lms100()


def lms100() -> int:
    """The end-to-end time of ``gputop-hints report`` (a child process, as a user runs it)
    on a generated 10-minute 8-GPU ``-lms 100`` log (issue 42: goal 5 s)."""
    import tempfile

    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        path = Path(tmp) / "nvsmi_8gpu_lms100.csv"
        rows = generate_lms100(path)
        size = path.stat().st_size / 1e6
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "gputop_hints", "report", str(path)],
            check=True,
            capture_output=True,
            cwd=_ROOT,
        )
        wall = time.perf_counter() - started
    print(
        f"8-GPU -lms 100 log, 10 min ({rows} rows, {size:.1f} MB): report {wall:.1f} s "
        f"end to end  [{'ok' if wall <= LMS100_GOAL_S else 'OVER'}] <= {LMS100_GOAL_S:g} s"
    )
    return 0


LMS100_GOAL_S = 5.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--gz", action="store_true", help="a gzip recording")
    parser.add_argument("--stride", default="auto", help="hint stride (default: auto)")
    parser.add_argument(
        "--table-log", action="store_true", help="measure a plain nvidia-smi table log instead"
    )
    parser.add_argument("--table-gb", type=float, default=1.0, help="its size (default 1 GB)")
    parser.add_argument("--formats", action="store_true", help="measure every reader format")
    parser.add_argument(
        "--mb", type=float, default=3.0, help="input size per format (MB; default 3, as the README)"
    )
    parser.add_argument(
        "--e2e-mb",
        type=float,
        default=MEASURED_E2E_MB,
        help=f"least input for the end-to-end report time (MB; default {MEASURED_E2E_MB:g})",
    )
    parser.add_argument("--only", default="", help="comma-separated formats (with --formats)")
    parser.add_argument(
        "--lms100", action="store_true", help="only the 8-GPU -lms 100 log's report time"
    )
    args = parser.parse_args()
    if args.lms100:
        return lms100()
    if args.formats:
        return formats(args.mb, [f for f in args.only.split(",") if f], args.e2e_mb)
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
    ok_rss = r["rss_mb"] <= RSS_CEILING_MB
    print(f"  [{'ok' if ok_time else 'OVER'}] under 15 s")
    print(f"  [{'ok' if ok_rss else 'OVER'}] under {RSS_CEILING_MB:g} MB RSS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
