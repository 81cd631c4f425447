"""Fixed-rate deadlines shared by every loop that samples in real time.

A tick is due every ``interval_s`` from the start. When a tick overruns (a hung
NVML call, a busy host), the deadlines it missed are skipped, not caught up in a
burst: the next tick waits for the next deadline still ahead. No Textual here.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Deadlines:
    """The deadlines of a loop that ticks every ``interval_s``, starting now."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._deadline = clock()
        self.skipped = 0
        """Deadlines missed because a tick overran, over the whole run."""

    def wait_s(self) -> float:
        """Seconds to wait, once a tick is done, until the next one is due (always > 0)."""
        self._deadline += self.interval_s
        now = self._clock()
        if self._deadline <= now:
            missed = int((now - self._deadline) // self.interval_s) + 1
            self.skipped += missed
            self._deadline += missed * self.interval_s
        return self._deadline - now
