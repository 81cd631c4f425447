"""The one ``/proc`` scanner: every process on the host from one read of each
``/proc/<pid>/stat``.

A tick that has GPU processes (or a job to follow) makes one pass; everything
the live source needs per process -- parent, state, CPU time, RSS, start time,
last core -- comes from that pass: GPU-process CPU % and workers
(:mod:`~gputop_hints.sources.live.processes`), job membership and the load other
jobs put on the job's cores (:mod:`~gputop_hints.sources.live.slurm`). Linux
only: elsewhere :func:`scan_proc` answers None and callers fall back to psutil.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""Clock ticks per second: the unit of the CPU times in ``/proc/<pid>/stat``."""
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
"""Bytes per page: the unit of the RSS in ``/proc/<pid>/stat``."""


class ProcStat:
    """The fields of one ``/proc/<pid>/stat`` line that a tick needs."""

    __slots__ = ("cpu_ticks", "last_cpu", "ppid", "rss_pages", "start", "state")

    def __init__(
        self,
        state: str,
        ppid: int,
        cpu_ticks: int,
        start: int,
        rss_pages: int,
        last_cpu: int | None = None,
    ) -> None:
        self.state = state
        self.ppid = ppid
        self.cpu_ticks = cpu_ticks
        """utime + stime, in clock ticks."""
        self.start = start
        """Start time in clock ticks since boot: with the pid, the process's identity."""
        self.rss_pages = rss_pages
        self.last_cpu = last_cpu
        """The core it last ran on (proc(5) field 39)."""


@dataclass
class ProcTable:
    """Every process on the host, from one pass over ``/proc/<pid>/stat``."""

    stats: dict[int, ProcStat]
    children: dict[int, list[int]]
    """``{ppid: [pid, ...]}``."""
    taken_at: float
    """``time.monotonic()`` when the pass was made."""

    def tree(self) -> dict[int, tuple[int, int]]:
        """``{pid: (ppid, start)}``: what job membership needs from the pass."""
        return {pid: (st.ppid, st.start) for pid, st in self.stats.items()}

    def cpu_rows(self) -> Iterator[tuple[int, int, float, int | None, int]]:
        """``(pid, start, cpu_seconds, last_cpu, ppid)`` per process: the input of
        :class:`~gputop_hints.sources.live.slurm.ForeignLoad`."""
        return (
            (pid, st.start, st.cpu_ticks / CLOCK_TICKS, st.last_cpu, st.ppid)
            for pid, st in self.stats.items()
        )


def scan_proc() -> ProcTable | None:
    """State, parent, CPU time, RSS and start time of every process, one read each.

    Some microseconds per process -- half what psutil's own ``/proc`` pass
    costs -- and it replaces both ``Process.children()`` per GPU process (which
    rescans ``/proc`` on every call) and the two or three psutil reads per
    watched process per tick. None where there is no Linux ``/proc``.
    """
    if not os.path.isdir("/proc/self"):
        return None
    stats: dict[int, ProcStat] = {}
    children: dict[int, list[int]] = {}
    taken_at = time.monotonic()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{entry}/stat", os.O_RDONLY)
        except OSError:
            continue
        try:
            data = os.read(fd, 2048)
        except OSError:
            continue
        finally:
            os.close(fd)
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
        # count from the last ')'. After it, index 0 is proc(5) field 3 (state),
        # 1 the ppid, 11/12 utime/stime, 19 starttime, 21 rss (pages), 36 the
        # core it last ran on.
        fields = data[data.rfind(b")") + 2 :].split(b" ", 37)
        if len(fields) < 23:
            continue
        try:
            pid = int(entry)
            stat = ProcStat(
                state=fields[0].decode("ascii", "replace"),
                ppid=int(fields[1]),
                cpu_ticks=int(fields[11]) + int(fields[12]),
                start=int(fields[19]),
                rss_pages=int(fields[21]),
                last_cpu=int(fields[36]) if len(fields) > 37 else None,
            )
        except ValueError:
            continue
        stats[pid] = stat
        children.setdefault(stat.ppid, []).append(pid)
    return ProcTable(stats, children, taken_at)


def process_name(pid: int) -> str | None:
    """A process's name (``/proc/<pid>/comm``); None when it is gone or unreadable.

    Job membership uses it to leave SLURM's own ``slurmstepd`` out of the job.
    """
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None
