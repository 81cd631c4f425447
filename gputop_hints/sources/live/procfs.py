"""The one ``/proc`` scanner: every process on the host from one read of each
``/proc/<pid>/stat``.

A tick that has GPU processes (or a job to follow) makes one pass; everything
the live source needs per process -- parent, state, CPU time, RSS, start time,
last core -- comes from that pass: GPU-process CPU % and workers
(:mod:`~gputop_hints.sources.live.processes`), job membership and the load other
jobs put on the job's cores (:mod:`~gputop_hints.sources.live.slurm`). Linux
only: elsewhere :func:`scan_proc` answers None and callers fall back to psutil.
Without a job, :class:`ProcScanner` makes the full pass only every few seconds
and reads just the GPU processes and their known descendants in between.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Iterable, Iterator, Mapping
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


def _read_stat(entry: str) -> ProcStat | None:
    """One ``/proc/<entry>/stat`` line, parsed; None when gone or unreadable."""
    try:
        fd = os.open(f"/proc/{entry}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 2048)
    except OSError:
        return None
    finally:
        os.close(fd)
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
    # count from the last ')'. After it, index 0 is proc(5) field 3 (state),
    # 1 the ppid, 11/12 utime/stime, 19 starttime, 21 rss (pages), 36 the
    # core it last ran on.
    fields = data[data.rfind(b")") + 2 :].split(b" ", 37)
    if len(fields) < 23:
        return None
    try:
        return ProcStat(
            state=fields[0].decode("ascii", "replace"),
            ppid=int(fields[1]),
            cpu_ticks=int(fields[11]) + int(fields[12]),
            start=int(fields[19]),
            rss_pages=int(fields[21]),
            last_cpu=int(fields[36]) if len(fields) > 37 else None,
        )
    except ValueError:
        return None


def _table(entries: Iterable[str]) -> ProcTable:
    stats: dict[int, ProcStat] = {}
    children: dict[int, list[int]] = {}
    taken_at = time.monotonic()
    for entry in entries:
        stat = _read_stat(entry)
        if stat is None:
            continue
        pid = int(entry)
        stats[pid] = stat
        children.setdefault(stat.ppid, []).append(pid)
    return ProcTable(stats, children, taken_at)


def scan_proc() -> ProcTable | None:
    """State, parent, CPU time, RSS and start time of every process, one read each.

    Some microseconds per process -- half what psutil's own ``/proc`` pass
    costs -- and it replaces both ``Process.children()`` per GPU process (which
    rescans ``/proc`` on every call) and the two or three psutil reads per
    watched process per tick. None where there is no Linux ``/proc``.
    """
    if not os.path.isdir("/proc/self"):
        return None
    return _table(entry for entry in os.listdir("/proc") if entry.isdigit())


FULL_RESCAN_S = 5.0
"""How often :class:`ProcScanner` reads all of ``/proc`` when nothing forces it.

Also the longest a new child of a GPU process (a DataLoader worker started
mid-run) waits to show: between full passes only the known processes are read.
"""


class ProcScanner:
    """This tick's :class:`ProcTable`, reading all of ``/proc`` only now and then.

    A full pass costs some microseconds per host process -- tens of ms a tick
    on a host with thousands of them -- though a tick without a job to follow
    needs only the GPU processes and their descendants. So a full pass is made
    on the first tick, every ``rescan_s`` seconds (:data:`FULL_RESCAN_S` by
    default), whenever a GPU pid appears that the last full pass was not asked
    about, and whenever the caller needs every process (``full=True``: a job
    is followed, whose membership and foreign load need the whole host).
    Between full passes only the GPU pids and the descendants known from the
    last pass are read: one that exits is gone from the next tick's table; a
    new child shows at the next full pass, at most ``rescan_s`` (plus one
    tick) after it started. A partial table's ``children`` holds only the
    processes read.
    """

    def __init__(self, rescan_s: float | None = None) -> None:
        self.rescan_s = FULL_RESCAN_S if rescan_s is None else rescan_s
        self._last: ProcTable | None = None
        self._last_full_at = 0.0
        self._asked: frozenset[int] = frozenset()
        """The GPU pids of the last full pass (those not visible here included)."""
        self.full_scans = 0
        """How many full passes were made (for tests and benchmarks)."""

    def scan(self, gpu_pids: Collection[int], *, full: bool = False) -> ProcTable | None:
        """The table for a tick whose GPU processes are ``gpu_pids``."""
        last = self._last
        if (
            full
            or last is None
            or time.monotonic() - self._last_full_at >= self.rescan_s
            or not self._asked.issuperset(gpu_pids)
        ):
            # Through the module global, so that a test can take /proc away.
            table = scan_proc()
            self.full_scans += 1
            self._last_full_at = time.monotonic()
            self._asked = frozenset(gpu_pids)
        else:
            table = _table(str(pid) for pid in _with_descendants(gpu_pids, last.children))
        self._last = table
        return table


def _with_descendants(roots: Iterable[int], children: Mapping[int, list[int]]) -> set[int]:
    out: set[int] = set()
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid in out:
            continue
        out.add(pid)
        stack.extend(children.get(pid, ()))
    return out


def process_name(pid: int) -> str | None:
    """A process's name (``/proc/<pid>/comm``); None when it is gone or unreadable.

    Job membership uses it to leave SLURM's own ``slurmstepd`` out of the job.
    """
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def pid_namespace_nested(status_path: str = "/proc/self/status") -> bool | None:
    """Whether the process whose status file this is runs in a PID namespace below the
    host's: its ``NSpid`` line (proc(5), Linux 4.1+) lists its pid in each namespace it
    belongs to, outermost first, so more than one pid means a nested namespace -- a
    container without ``--pid=host``. None: no such line (not Linux, an old kernel).
    """
    try:
        with open(status_path, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return len(line.split()) > 2
    except OSError:
        return None
    return None
