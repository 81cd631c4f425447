"""Per-process running tallies over the snapshot ring, kept by the engine across ticks.

A window's host-side statistics of a process (how many of its workers were busy, how
many of its states were D, over the window's ticks) are sums of per-snapshot counts.
A snapshot never changes once it is in the ring, so each one is counted once, when it
enters, into a cumulative sum per process; the sum over any window is then the newest
cumulative sum less the one just before the window's first snapshot, whatever the
window's length. The counts are integers, so the difference is exact: the same as
counting the window afresh.

What is kept, per process: one entry (snapshot number, cumulative ticks present,
busy workers, D states, known states) for each ring snapshot that lists it, and per
ring snapshot its number -- bounded by the ring, as the snapshots themselves are. A
process's snapshot numbers are one ``array('q')``, its cumulative sums four integers an
entry in another (issue 49: no tuple and no int objects per process per tick).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque

from gputop_hints.history import History
from gputop_hints.model import Snapshot

_WIDTH = 4
"""Integers per entry of a process's sums (cumulative): ticks present, busy workers, D
states, known states."""


class HostTallies:
    """Running host-side tallies of every process over the snapshots of one history."""

    def __init__(self, worker_busy_percent: float) -> None:
        self.worker_busy_percent = worker_busy_percent
        self._ring: deque[tuple[Snapshot, int]] = deque()
        """The tallied snapshots, oldest first, each with its number."""
        self._next = 0
        self._by_key: dict[tuple[int, int], array[int]] = {}
        """Per process, the numbers of the snapshots that list it, oldest first."""
        self._sums: dict[tuple[int, int], array[int]] = {}
        """Per process, its cumulative sums as of each of those snapshots (``_WIDTH`` an
        entry, in the same order)."""

    def sync(self, history: History) -> None:
        """Count the snapshots that entered ``history``'s ring since the last call and
        forget those that left it (all of them afresh where the ring is not the one
        counted before: a new history, or one cleared)."""
        snaps = history.snapshots
        ring = self._ring
        if ring and snaps and ring[-1][0] is snaps[-1]:
            return
        new: list[Snapshot] = []
        last = ring[-1][0] if ring else None
        for snap in reversed(snaps):
            if snap is last:
                break
            new.append(snap)
        else:
            ring.clear()
            self._by_key.clear()
            self._sums.clear()
        for snap in reversed(new):
            self._count(history, snap)
        oldest = self._next - len(snaps)
        while ring and ring[0][1] < oldest:
            ring.popleft()
        for key in list(self._by_key):
            entries = self._by_key[key]
            # One entry before the ring is kept: a window's sum starts after it.
            drop = 0
            while drop + 1 < len(entries) and entries[drop + 1] < oldest:
                drop += 1
            if drop:
                del entries[:drop]
                del self._sums[key][: drop * _WIDTH]
            if entries[-1] < oldest:
                del self._by_key[key]
                del self._sums[key]

    def _count(self, history: History, snap: Snapshot) -> None:
        number = self._next
        self._next = number + 1
        self._ring.append((snap, number))
        threshold = self.worker_busy_percent
        for key, p in history.processes_by_key(snap).items():
            d = known = 0
            for state in (p.state, *(w.state for w in p.workers)):
                if state is not None:
                    known += 1
                    d += state == "D"
            numbers = self._by_key.get(key)
            if numbers is None:
                self._by_key[key] = array("q", (number,))
                self._sums[key] = array("q", (1, p.busy_workers(threshold), d, known))
            else:
                numbers.append(number)
                sums = self._sums[key]
                n, busy, ds, knowns = sums[-_WIDTH:]
                sums.extend((n + 1, busy + p.busy_workers(threshold), ds + d, knowns + known))

    def covers(self, history: History) -> bool:
        """Whether these tallies are of ``history``'s ring as it is now."""
        ring = self._ring
        snaps = history.snapshots
        return bool(ring) and bool(snaps) and ring[-1][0] is snaps[-1] and len(ring) == len(snaps)

    def window(self, key: tuple[int, int], ticks: int) -> tuple[int, int, int, int]:
        """Over the newest ``ticks`` snapshots: (ticks ``key`` was listed, its busy workers
        summed, its D states, its known states). Call only where :meth:`covers` holds."""
        numbers = self._by_key.get(key)
        if not numbers:
            return 0, 0, 0, 0
        sums = self._sums[key]
        n, busy, d, known = sums[-_WIDTH:]
        at = bisect_left(numbers, self._next - ticks) - 1
        if at >= 0:
            n0, busy0, d0, known0 = sums[at * _WIDTH : (at + 1) * _WIDTH]
            return n - n0, busy - busy0, d - d0, known - known0
        return n, busy, d, known
