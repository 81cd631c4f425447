"""How much does watching cost? The TUI's own CPU, memory and terminal traffic.

Runs ``gputop-hints --demo`` (8 GPUs, 64 processes, 1 Hz by default) in a
pseudo-terminal of 160x50 for 60 s, reads everything it writes, and prints:

* CPU % of one core used by the monitor process (user + system, all threads),
  measured after a warm-up so start-up cost is reported separately;
* peak RSS (the kernel's VmHWM) and RSS at the end;
* bytes written to the terminal per second in the steady state;
* time to the first frame (first bytes of the full-screen UI);
* with ``--keys N``: the CPU a burst of N Down/j key presses costs beyond the
  same time idle (keys held down must not cost a burst of CPU).

Usage::

    python bench/overhead.py [--duration 60] [--size 160x50] [--gpus 8] [--processes 64]
                             [--keys 200]

The comparison point from DESIGN.md: nvitop on the same fake 8 x 64 load uses
about 3.3 % of one core, 25 MB RSS and 1.6 KB/s at 160x50.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path


def _command(args: argparse.Namespace) -> list[str]:
    script = Path(sys.executable).parent / "gputop-hints"
    base = [str(script)] if script.exists() else [sys.executable, "-m", "gputop_hints"]
    return [
        *base,
        "--demo",
        args.scenario,
        "--gpus",
        str(args.gpus),
        "--processes",
        str(args.processes),
        "--interval",
        str(args.interval),
    ]


def _peak_rss_bytes(pid: int) -> tuple[int, int]:
    """(VmHWM, VmRSS) of a process, in bytes."""
    peak = rss = 0
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    return peak, rss


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all threads), from /proc."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def run(args: argparse.Namespace) -> dict[str, float]:
    cols, rows = (int(v) for v in args.size.lower().split("x"))
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
    env.pop("NO_COLOR", None)
    started = time.monotonic()
    proc = subprocess.Popen(
        _command(args),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)

    first_frame: float | None = None
    total = 0
    measured = 0
    cpu_start = 0.0
    t_start = 0.0
    warm_until = started + args.warmup
    end = warm_until + args.duration
    measuring = False
    try:
        while True:
            now = time.monotonic()
            if not measuring and now >= warm_until:
                measuring = True
                cpu_start = _cpu_seconds(proc.pid)
                t_start = now
            if now >= end:
                break
            if proc.poll() is not None:
                raise RuntimeError(f"gputop-hints exited early with status {proc.returncode}")
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if first_frame is None and len(chunk) > 0:
                    first_frame = time.monotonic() - started
                total += len(chunk)
                if measuring:
                    measured += len(chunk)
        elapsed = time.monotonic() - t_start
        cpu = _cpu_seconds(proc.pid) - cpu_start
        peak, rss = _peak_rss_bytes(proc.pid)
        keys_cpu = _key_burst_cpu_seconds(proc.pid, master, args.keys) if args.keys else 0.0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(master)
    return {
        "cpu_percent_of_one_core": 100.0 * cpu / elapsed,
        "peak_rss_mb": peak / 1e6,
        "end_rss_mb": rss / 1e6,
        "terminal_bytes_per_s": measured / elapsed,
        "first_output_s": first_frame if first_frame is not None else float("nan"),
        "measured_s": elapsed,
        "startup_bytes": float(total - measured),
        "keys_cpu_s": keys_cpu,
    }


def _drain(master: int, seconds: float) -> None:
    """Read (and drop) the terminal output for ``seconds``, so the monitor never blocks."""
    until = time.monotonic() + seconds
    while (left := until - time.monotonic()) > 0:
        ready, _, _ = select.select([master], [], [], min(0.1, left))
        if ready:
            os.read(master, 65536)


def _key_burst_cpu_seconds(pid: int, master: int, keys: int) -> float:
    """CPU seconds ``keys`` Down/j presses (written at once) cost, beyond as long idle."""
    before = _cpu_seconds(pid)
    started = time.monotonic()
    burst = b"".join(b"\x1b[B" if i % 2 == 0 else b"j" for i in range(keys))
    os.write(master, burst)
    _drain(master, 1.0)  # the keys are taken and the screen settles
    took = time.monotonic() - started
    burst_cpu = _cpu_seconds(pid) - before
    before = _cpu_seconds(pid)
    _drain(master, took)
    idle_cpu = _cpu_seconds(pid) - before
    return max(0.0, burst_cpu - idle_cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="measured seconds (60)")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before measuring (5)")
    parser.add_argument("--size", default="160x50", help="terminal COLSxROWS (160x50)")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--scenario", default="mixed")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument(
        "--keys", type=int, default=0, help="then press Down/j this many times at once (0: no)"
    )
    args = parser.parse_args()
    if (
        shutil.which("gputop-hints") is None
        and not (Path(sys.executable).parent / "gputop-hints").exists()
    ):
        print("note: console script not installed; running python -m gputop_hints", file=sys.stderr)
    result = run(args)
    print(
        f"gputop-hints --demo {args.scenario} --gpus {args.gpus} --processes {args.processes} "
        f"at {1 / args.interval:g} Hz in a {args.size} pty, measured {result['measured_s']:.0f} s "
        f"after {args.warmup:g} s warm-up"
    )
    print(f"  CPU                 {result['cpu_percent_of_one_core']:.2f} % of one core")
    print(
        f"  peak RSS            {result['peak_rss_mb']:.1f} MB (end {result['end_rss_mb']:.1f} MB)"
    )
    print(f"  terminal output     {result['terminal_bytes_per_s'] / 1000:.2f} KB/s")
    print(f"  first output after  {result['first_output_s']:.2f} s")
    print(f"  start-up output     {result['startup_bytes'] / 1000:.1f} KB")
    if args.keys:
        print(
            f"  {args.keys} keys at once    {result['keys_cpu_s'] * 1000:.0f} ms of CPU beyond idle"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
