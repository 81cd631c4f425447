"""What ``gputop-hints export`` costs the node, and what the job view costs Prometheus.

Part 1, the exporter: ``gputop-hints export --demo --gpus G --processes P`` runs
for ``--seconds``; it prints the exporter's CPU (% of one core and ms a tick,
from /proc utime + stime after a settling time), its RSS, and the latency and
size of a scrape of ``/metrics`` (``--scrapes`` GETs, median and max), while it
keeps ticking at 1 s.

Part 2, the job view (with ``--nodes N``, needs the ``prometheus`` binary): N
exporters of 2 GPUs each (``--label-host node-I --label-job 1``) scraped by a
real Prometheus every second; after ``--seconds`` it times what the view asks:
``report --prometheus``'s range read of the job (``PrometheusJobStream``, 1 s
points over the whole run) and the monitor's tick (``PrometheusSource.sample``,
one instant query per exporter kind), median of 5 each, with the HTTP requests
each makes::

    PYTHONPATH=. .venv/bin/python bench/exporter_cost.py [--gpus 8] [--processes 64]
        [--seconds 20] [--scrapes 20] [--nodes 16]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import _cpu_seconds, _peak_rss_bytes  # its /proc readers

from tests.support.cli import reap

ROOT = Path(__file__).resolve().parent.parent
SETTLE_S = 3.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUTOP_HINTS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    return env


def start_exporter(*args: str) -> tuple[subprocess.Popen[str], int]:
    """An exporter on a free port; (process, port)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputop_hints", "export", "--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if "serving http://127.0.0.1:" not in line:
        proc.kill()
        raise SystemExit(f"the exporter did not start: {line!r}")
    return proc, int(line.split("127.0.0.1:", 1)[1].split("/", 1)[0])


def stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        reap(proc)


def exporter_part(args: argparse.Namespace) -> None:
    size_args = ("--gpus", str(args.gpus), "--processes", str(args.processes))
    proc, port = start_exporter("--demo", *size_args)
    try:
        time.sleep(SETTLE_S)
        cpu0, t0 = _cpu_seconds(proc.pid), time.monotonic()
        time.sleep(args.seconds)
        cpu1, t1 = _cpu_seconds(proc.pid), time.monotonic()
        latencies, size = [], 0
        for _ in range(args.scrapes):
            start = time.perf_counter()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
                size = len(r.read())
            latencies.append(time.perf_counter() - start)
            time.sleep(0.05)
        peak, rss = _peak_rss_bytes(proc.pid)
    finally:
        stop([proc])
    cpu = (cpu1 - cpu0) / (t1 - t0)
    print(f"== exporter, demo {args.gpus} GPUs x {args.processes} processes, 1 s ticks")
    print(f"  CPU                {100 * cpu:6.2f} % of a core ({1000 * cpu:.1f} ms a tick)")
    print(f"  RSS                {rss / 1e6:6.1f} MB (peak {peak / 1e6:.1f} MB)")
    print(
        f"  scrape /metrics    {1000 * statistics.median(latencies):6.1f} ms median, "
        f"{1000 * max(latencies):.1f} ms max, {size / 1e3:.0f} kB"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def view_part(args: argparse.Namespace) -> None:
    from gputop_hints.sources.prometheus import JobQuery, PrometheusClient, PrometheusJobStream
    from gputop_hints.sources.prometheus.live import PrometheusSource

    binary = shutil.which("prometheus")
    if binary is None:
        print("== job view: skipped (no prometheus binary; apt-get install prometheus)")
        return
    procs: list[subprocess.Popen[str]] = []
    with tempfile.TemporaryDirectory(prefix="exporter-cost-") as tmp:
        try:
            targets = []
            for i in range(args.nodes):
                proc, port = start_exporter(
                    "--demo", "healthy", "--gpus", "2", "--seed", str(i),
                    "--label-host", f"node-{i:02d}", "--label-job", "1",
                )  # fmt: skip
                procs.append(proc)
                targets.append(f"'127.0.0.1:{port}'")
            config = Path(tmp) / "prometheus.yml"
            config.write_text(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: bench\n"
                f"    static_configs:\n      - targets: [{', '.join(targets)}]\n"
            )
            port = _free_port()
            command = [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp}/data"]
            command.append(f"--web.listen-address=127.0.0.1:{port}")
            procs.append(
                subprocess.Popen(
                    command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True
                )
            )
            url = f"http://127.0.0.1:{port}"
            began = time.time()
            time.sleep(args.seconds)
            client = PrometheusClient(url)
            ranges, ticks = [], []
            gpus = 0
            for _ in range(5):
                now = time.time()
                requests = client.requests
                start = time.perf_counter()
                stream = PrometheusJobStream(client, JobQuery("1", began, now, 1.0))
                ranges.append(time.perf_counter() - start)
                range_requests = client.requests - requests
                gpus = stream.info.gpu_count or 0
            source = PrometheusSource(url, "1", client=client)
            for _ in range(5):
                requests = client.requests
                start = time.perf_counter()
                snap = source.sample()
                ticks.append(time.perf_counter() - start)
                tick_requests = client.requests - requests
            print(
                f"== job view, {args.nodes} nodes x 2 GPUs ({gpus} GPUs found, "
                f"{len(snap.gpus)} in a tick), {args.seconds:.0f} s of 1 s scrapes"
            )
            print(
                f"  report range read  {1000 * statistics.median(ranges):6.1f} ms median "
                f"({range_requests} requests)"
            )
            print(
                f"  monitor tick       {1000 * statistics.median(ticks):6.1f} ms median "
                f"({tick_requests} requests)"
            )
        finally:
            stop(procs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=0, help="also time the job view (N nodes)")
    args = parser.parse_args()
    exporter_part(args)
    if args.nodes:
        view_part(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
