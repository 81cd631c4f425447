"""The shared memory between the lab's training child and its monitor: an mmap'd file.

Layout (float64 slots): a header, then one slot per ``SAMPLE_S`` bin holding the seconds
the simulated GPU was busy in that bin. The trainer writes each busy interval when it
launches it (a kernel queue: the GPU will be busy from now to then), so a bin that has
ended is complete. The monitor only reads.
"""

from __future__ import annotations

import fcntl
import mmap
import os
from pathlib import Path

SAMPLE_S = 1 / 6
"""NVML's utilization sample period on recent GPUs (nvmlDeviceGetSamples)."""

EPOCH, VRAM, PCIE_BYTES, STEPS, SAMPLES, DONE, READY, COPY_FROM, COPY_TO, COPY_RATE = range(10)
"""Header slots. ``COPY_*``: the latest host-to-device copy's interval (time.time()) and
its rate (bytes/s), so the monitor can take a reading as NVML's ~20 ms PCIe counter
does: the rate of whatever copy is running at that moment."""
HEADER = 16
BINS = 6 * 120
"""Two minutes of bins: far more than one lab run."""


class Board:
    """The shared record; ``create`` in the monitor, ``attach`` in the trainer."""

    def __init__(self, path: Path, mm: mmap.mmap) -> None:
        self.path = path
        self._mm = mm
        self._view = memoryview(mm)
        self.slots = self._view.cast("d")
        """The float64 slots: the header, then :data:`BINS` bins from :data:`HEADER`."""

    @classmethod
    def create(cls, path: Path) -> Board:
        size = (HEADER + BINS) * 8
        with open(path, "wb") as f:
            f.write(b"\0" * size)
        return cls.attach(path)

    @classmethod
    def attach(cls, path: Path) -> Board:
        fd = os.open(path, os.O_RDWR)
        try:
            mm = mmap.mmap(fd, 0)
        finally:
            os.close(fd)
        return cls(path, mm)

    def add_busy(self, start: float, end: float) -> None:
        """Record the simulated GPU busy from ``start`` to ``end`` (time.time() seconds)."""
        epoch = self.slots[EPOCH]
        a, b = (start - epoch) / SAMPLE_S, (end - epoch) / SAMPLE_S
        first, last = int(a), min(int(b), BINS - 1)
        for i in range(max(first, 0), last + 1):
            lo, hi = max(a, float(i)), min(b, float(i + 1))
            if hi > lo:
                self.slots[HEADER + i] += (hi - lo) * SAMPLE_S

    def copy_rate_at(self, now: float, window_s: float = 0.02) -> float:
        """Bytes/s a PCIe reading over ``window_s`` ending at ``now`` would see."""
        lo = max(now - window_s, float(self.slots[COPY_FROM]))
        hi = min(now, float(self.slots[COPY_TO]))
        return max(0.0, hi - lo) / window_s * float(self.slots[COPY_RATE])

    def busy_percent(self, index: int) -> float:
        return min(100.0, self.slots[HEADER + index] / SAMPLE_S * 100.0)

    def bin_end(self, index: int) -> float:
        return float(self.slots[EPOCH]) + (index + 1) * SAMPLE_S

    def close(self) -> None:
        self.slots.release()
        self._view.release()
        self._mm.close()


class GpuQueue:
    """The one simulated GPU that several programs share: when it is next free.

    One float64 slot (``time.time()`` seconds) in an mmap'd file, changed under an
    ``flock``. A step queues behind whatever the other programs queued before it, so
    their busy intervals never overlap: time-slicing at the lab's scale (the device's
    utilization is their sum, at most 100 %, and each program waits for the others'
    work as a CUDA context waits for its time slice). Each program still writes its own
    intervals to its own :class:`Board`: NVML's per-process samples.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR)
        self._mm = mmap.mmap(self._fd, 8)
        self._view = memoryview(self._mm)
        self._slot = self._view.cast("d")

    @classmethod
    def create(cls, path: Path) -> GpuQueue:
        with open(path, "wb") as f:
            f.write(b"\0" * 8)
        return cls(path)

    def take(self, now: float, seconds: float) -> float:
        """Queue ``seconds`` of work submitted at ``now``; when it starts."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            start = max(now, float(self._slot[0]))
            self._slot[0] = start + seconds
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        return start

    def close(self) -> None:
        self._slot.release()
        self._view.release()
        self._mm.close()
        os.close(self._fd)
