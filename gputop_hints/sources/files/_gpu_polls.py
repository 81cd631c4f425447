"""Polls of a ``--query-gpu`` log without an index (or UUID, bus id) column.

On a node with several GPUs ``nvidia-smi --query-gpu=timestamp,... -lms 100``
prints one row per GPU per poll, in index order, each row with its own timestamp
a few milliseconds after the previous one. The gaps between consecutive rows are
then bimodal: tiny within a poll, the period between polls. :func:`find_polls`
tells the two apart from the data and :class:`PollAssembler` makes each poll one
snapshot, the GPUs numbered by their position in the poll.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gputop_hints.model import Snapshot
from gputop_hints.sources.files._table import Assembler, Row
from gputop_hints.streams import ReadCounters

SPLIT_RATIO = 4.0
"""The smallest poll gap must be this many times the largest within-poll gap."""
TIME_RESOLUTION_S = 0.001
"""nvidia-smi's timestamps are in milliseconds: a gap of 0 counts as this much
when gaps are compared by ratio."""
FULL_SHARE = 0.2
"""A full poll (one row per GPU) is the largest size at least this share of the polls
hold: short polls (a GPU's query failed) are common on some nodes -- half the polls
of an 8-GPU ``-lms 100`` log held 1, 2, 4 or 5 rows -- but never longer."""
LONG_SHARE = 0.1
"""At most this share of the polls may hold more rows than a full one."""
MAX_WITHIN_S = 0.25
"""The median gap between rows of one poll is at most this: nvidia-smi queries
one GPU in milliseconds. A single GPU's rows (a period apart, 1 s with ``-l 1``)
that pause after every N-th are not N GPUs."""


@dataclass(frozen=True)
class PollShape:
    gpus: int
    """Rows in a full poll: the modal poll size, one row per GPU."""
    period_s: float
    """The median spacing of consecutive polls' first rows."""
    boundary_s: float
    """A gap between rows over this starts a new poll: half the median poll gap."""
    within_s: float
    """The largest gap between rows of one poll seen in the sample."""

    @property
    def gpu_count(self) -> int:
        return self.gpus

    @property
    def interval_s(self) -> float:
        return self.period_s

    how = "median spacing of polls"
    """How :attr:`interval_s` was found, for the interval's note."""

    def header(self) -> dict[str, object]:
        """Its entry in the stream's header."""
        return {"polls": {"gpus": self.gpus, "period_s": self.period_s}}

    def assembler(self, counters: ReadCounters, interval: float, detail: str) -> Assembler:
        return PollAssembler(counters, interval, "unknown", detail, self)

    def note(self) -> str:
        return (
            f"no index column: GPUs assigned by position within each poll "
            f"(nvidia-smi prints them in index order), {self.gpus} rows per poll, "
            f"poll period {self.period_s:g} s (a gap over {self.boundary_s:g} s "
            "starts a poll)"
        )


def find_polls(times: Sequence[float]) -> PollShape | None:
    """The polls in row timestamps (file order), or None when the rows are not
    grouped in polls of two or more (a single GPU: every gap is a period).

    Candidate splits are the jumps of at least :data:`SPLIT_RATIO` in the sorted
    gaps, largest first; a split holds when cutting the rows at gaps over half the
    median of the gaps above it gives full polls -- the largest size, two rows or
    more, that :data:`FULL_SHARE` of the polls hold, at least two of them -- the
    rest shorter (but :data:`LONG_SHARE`), their rows at most :data:`MAX_WITHIN_S`
    apart (the median)."""
    gaps = sorted(b - a for a, b in itertools.pairwise(times) if b >= a)
    if len(gaps) < 3:
        return None
    jumps = sorted(
        (
            (gaps[i] / max(gaps[i - 1], TIME_RESOLUTION_S), i)
            for i in range(1, len(gaps))
            if gaps[i] / max(gaps[i - 1], TIME_RESOLUTION_S) >= SPLIT_RATIO
        ),
        reverse=True,
    )
    for _ratio, i in jumps[:8]:
        boundary = float(statistics.median(gaps[i:])) / 2
        if boundary <= gaps[i - 1]:
            continue
        shape = _polls_at(times, boundary, gaps[i - 1])
        if shape is not None:
            return shape
    return None


def _polls_at(times: Sequence[float], boundary: float, within: float) -> PollShape | None:
    starts = [0]
    for n, (a, b) in enumerate(itertools.pairwise(times), start=1):
        if b - a > boundary or b < a:
            starts.append(n)
    sizes = [b - a for a, b in itertools.pairwise([*starts, len(times)])]
    common = [n for n in set(sizes) if sizes.count(n) >= max(2, FULL_SHARE * len(sizes))]
    if not common:
        return None
    modal = max(common)
    longer = sum(1 for n in sizes if n > modal)
    if modal < 2 or longer > LONG_SHARE * len(sizes):
        return None
    first = set(starts)
    pairs = enumerate(itertools.pairwise(times), start=1)
    inside = [b - a for n, (a, b) in pairs if n not in first]
    if not inside or statistics.median(inside) > MAX_WITHIN_S:
        return None
    spacing = [times[b] - times[a] for a, b in itertools.pairwise(starts) if times[b] > times[a]]
    if not spacing:
        return None
    return PollShape(modal, float(statistics.median(spacing)), boundary, within)


class PollAssembler(Assembler):
    """One snapshot per poll of :attr:`PollShape.gpus` rows, GPU *i* the poll's row *i*;
    the snapshot's time is the poll's first row's.

    A poll of another size cannot be attributed -- without an index column the
    rows do not say which GPU is missing (a failed query in the middle shifts the
    rest) or which is extra -- so it is dropped whole, counted as a bad record at
    its first row's line and in ``found["short_polls"]`` / ``["long_polls"]``."""

    def __init__(
        self,
        counters: ReadCounters,
        interval: float,
        hostname: str,
        detail: str,
        shape: PollShape,
    ) -> None:
        super().__init__(counters, interval, hostname, detail)
        self.shape = shape
        self._poll: list[dict[str, Any]] = []
        self._first_line = 0
        self._last: float | None = None
        self._extra = 0

    def add(self, row: Row) -> Snapshot | None:
        out: Snapshot | None = None
        if self._poll and row.timestamp is not None and self._last is not None:
            gap = row.timestamp - self._last
            if gap > self.shape.boundary_s or gap < 0:
                out = self.flush()
        if not self._poll and not self._extra:
            self._time = row.timestamp
            self._first_line = row.line
        if row.timestamp is not None:
            self._last = row.timestamp
        if len(self._poll) < self.shape.gpus:
            self._poll.append(row.fields)
        else:
            self._extra += 1  # not kept: the poll is dropped anyway
        return out

    def flush(self) -> Snapshot | None:
        poll, extra = self._poll, self._extra
        self._poll, self._extra = [], 0
        if not poll:
            return None
        rows = len(poll) + extra
        if rows != self.shape.gpus:
            kind = "short_polls" if rows < self.shape.gpus else "long_polls"
            self.counters.found[kind] = int(self.counters.found.get(kind, 0)) + 1  # type: ignore[call-overload]
            self.counters.note_bad_line(
                self._first_line,
                f"a poll of {rows} row(s), not {self.shape.gpus}: without an index column "
                "its GPUs cannot be told apart (dropped)",
            )
            return None
        self._rows = [(i, f, None) for i, f in enumerate(poll)]
        return super().flush()
