"""Rows sharing one timestamp, without a GPU column: GPUs of one poll, or one GPU
read faster than its clock ticks.

``nvidia-smi --query-gpu=timestamp,...`` without ``index`` on a multi-GPU node
prints one row per GPU per poll, all with one timestamp: every poll the same
number of rows, at most a node's GPUs. A hand-made script polling one GPU faster
than its stamps' resolution (times to the second, 45 readings a second) also
writes rows sharing a timestamp -- but more than a node holds (16: HGX-2/DGX-2;
most hold 8), or a number that varies from stamp to stamp (a loop's rate against
the clock), which the GPUs of one poll do not (a failed query makes a poll shorter,
never longer). :func:`find_bursts` tells the second from the sample rows and
:class:`BurstAssembler` reads its rows as one GPU's successive readings, spread
evenly over their stamp (an assumption said in the stream's notes).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from gputop_hints.model import Snapshot
from gputop_hints.sources.files._table import Assembler, Row
from gputop_hints.streams import ReadCounters

MAX_NODE_GPUS = 16
"""The most GPUs one node holds (HGX-2/DGX-2's 16; most hold 8)."""
MODAL_SHARE = 0.75
"""GPUs of one poll: at least this share of the stamps hold the modal number of rows
(the rest fewer: failed queries)."""
RESOLUTIONS = (60.0, 1.0, 0.1, 0.01, 0.001)
"""The stamp resolutions told apart (a minute, a second, its tenths ... milliseconds)."""


@dataclass(frozen=True)
class BurstShape:
    resolution_s: float
    """What the stamps are rounded to: a burst is spread over this (or up to the next
    stamp, when sooner)."""
    most: int
    """The most rows one stamp held in the sample."""
    typical: int
    """The median rows per stamp (of the stamps the sample holds whole)."""
    why: str

    gpu_count = 1

    @property
    def interval_s(self) -> float:
        return self.resolution_s / max(1, self.typical)

    @property
    def how(self) -> str:
        """How :attr:`interval_s` was found, for the interval's note."""
        return f"the stamps' {self.resolution_s:g} s over {self.typical} rows a stamp"

    def header(self) -> dict[str, object]:
        """Its entry in the stream's header."""
        return {
            "bursts": {
                "resolution_s": self.resolution_s,
                "most_rows": self.most,
                "typical_rows": self.typical,
            }
        }

    def assembler(self, counters: ReadCounters, interval: float, detail: str) -> Assembler:
        return BurstAssembler(counters, interval, "unknown", detail, self)

    def note(self) -> str:
        return (
            f"rows sharing a timestamp read as one GPU's successive readings, spread "
            f"evenly over their {self.resolution_s:g} s stamp (no GPU column; {self.why}: "
            "not GPUs of one poll)"
        )


def resolution(times: Iterable[float]) -> float:
    """The coarsest of :data:`RESOLUTIONS` every time is a whole multiple of."""
    values = list(times)
    for res in RESOLUTIONS:
        if all(abs(t - round(t / res) * res) <= res * 1e-3 for t in values):
            return res
    return RESOLUTIONS[-1]


T = TypeVar("T")


def spread_stamps(
    items: Iterable[T], stamp_of: Callable[[T], float | None], resolution_s: float
) -> Iterator[tuple[T, float | None]]:
    """``(item, time)``: the items of one stamp spread evenly over its resolution (or up
    to the next stamp, when that comes sooner) -- item *i* of *n* at ``stamp + i * span
    / n``; an item alone on its stamp, or without one, keeps it. For records written
    faster than their clock ticks (several ``nvidia-smi`` tables a second under 1 s
    stamps), which would otherwise pile up on one instant."""
    burst: list[T] = []
    stamp: float | None = None
    for item in items:
        t = stamp_of(item)
        if burst and (t is None or t != stamp):
            yield from _spread_one(burst, stamp, t, resolution_s)
            burst = []
        burst.append(item)
        stamp = t
    yield from _spread_one(burst, stamp, None, resolution_s)


def _spread_one(
    burst: list[T], stamp: float | None, following: float | None, resolution_s: float
) -> Iterator[tuple[T, float | None]]:
    if stamp is None or len(burst) == 1:
        for item in burst:
            yield item, stamp
        return
    span = resolution_s
    if following is not None and stamp < following < stamp + span:
        span = following - stamp
    n = len(burst)
    for i, item in enumerate(burst):
        yield item, stamp + i * span / n


def find_bursts(rows: Sequence[Row]) -> BurstShape | None:
    """One GPU's readings sharing stamps in the sample ``rows`` (file order), or None
    (a GPU column, names that differ within a stamp, no stamp shared, or stamps shared
    as a node's GPUs share a poll's)."""
    if any(r.key is not None for r in rows):
        return None
    timed = [r for r in rows if r.timestamp is not None]
    if len(timed) < 2:
        return None
    groups = [list(g) for _, g in itertools.groupby(timed, key=lambda r: r.timestamp)]
    sizes = [len(g) for g in groups]
    if max(sizes) < 2:
        return None
    for g in groups:
        names = {r.fields.get("name") for r in g} - {None}
        if len(names) > 1:
            return None  # differently named GPUs of one poll
    whole = sizes[:-1] if len(sizes) > 1 else sizes  # the sample may cut the last stamp
    modal = max(set(whole), key=whole.count)
    why = None
    if max(sizes) > MAX_NODE_GPUS:
        why = f"up to {max(sizes)} rows a stamp, more than a node's {MAX_NODE_GPUS} GPUs"
    elif max(whole) > modal or whole.count(modal) < MODAL_SHARE * len(whole):
        counts = ", ".join(str(s) for s in sorted(set(whole)))
        why = f"{counts} rows a stamp: the count varies, as a poll's GPUs do not"
    if why is None:
        return None
    res = resolution(r.timestamp for r in timed if r.timestamp is not None)
    return BurstShape(res, max(sizes), round(statistics.median(whole)), why)


class BurstAssembler(Assembler):
    """One snapshot per row, GPU 0; the rows of one stamp spread evenly over the
    stamp's resolution (or up to the next stamp, when that comes sooner): row *i* of
    *n* at ``stamp + i * span / n``. Rows without a time are a tick each."""

    def __init__(
        self,
        counters: ReadCounters,
        interval: float,
        hostname: str,
        detail: str,
        shape: BurstShape,
    ) -> None:
        super().__init__(counters, interval, hostname, detail)
        self.shape = shape
        self._burst: list[dict[str, Any]] = []
        self._stamp: float | None = None

    def run(self, rows: Iterable[Row]) -> Iterator[Snapshot]:
        for row in rows:
            if self._burst and (row.timestamp is None or row.timestamp != self._stamp):
                yield from self._spread(row.timestamp)
            self._stamp = row.timestamp
            self._burst.append(row.fields)
        yield from self._spread(None)

    def _spread(self, following: float | None) -> Iterator[Snapshot]:
        burst, stamp = self._burst, self._stamp
        self._burst = []
        span = self.shape.resolution_s
        if stamp is not None and following is not None and stamp < following < stamp + span:
            span = following - stamp
        n = len(burst)
        for i, fields in enumerate(burst):
            self._rows = [(0, fields, None)]
            self._time = None if stamp is None else stamp + i * span / n
            snap = super().flush()
            if snap is not None:
                yield snap
