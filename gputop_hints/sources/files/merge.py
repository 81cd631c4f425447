"""Several logs of one run read as one stream: GPU samples plus per-process rows.

``gputop-hints report gpu.csv apps.csv``: a ``--query-gpu`` log (or dmon, or
any GPU log) says how busy each GPU was; a ``--query-compute-apps`` or ``pmon``
log of the same run says which processes held it. :func:`open_streams` opens
each, takes the first log with GPU metrics as the time base, and attaches to
each of its snapshots the processes of the latest poll at or before that time
(or up to half a poll after it: two loops drift apart; no older than two of the
process log's intervals). GPUs are joined by UUID
when both logs name them, else by index. A process log without timestamps is
laid from the GPU log's first time at its own interval (``--interval`` sets it
for both), which the detail line says.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from gputop_hints.model import GpuProcess, Snapshot
from gputop_hints.sources.files.registry import PROCESS_FORMATS, open_stream
from gputop_hints.streams import (
    METRIC_PROCESSES,
    ReadCounters,
    SnapshotStream,
    UnrecognisedFormat,
)


class MergedStream:
    """A GPU log's snapshots with the processes of a per-process log of the same run."""

    def __init__(self, gpus: SnapshotStream, processes: SnapshotStream) -> None:
        self.gpus = gpus
        self.processes = processes
        base = gpus.info
        other = processes.info
        self.info = dataclasses.replace(
            base,
            missing=tuple(m for m in base.missing if m != METRIC_PROCESSES),
            detail=f"{base.detail}; processes from {Path(other.path).name} ({other.detail})",
            header={**base.header, "process_log": other.path},
        )
        self._relative = other.interval_s is not None and "no timestamps" in other.detail
        self.counters = ReadCounters()

    def __iter__(self) -> Iterator[Snapshot]:
        polls = iter(self.processes)
        pending = next(polls, None)
        current: Snapshot | None = None
        offset: float | None = None
        window = 2 * (self.processes.info.interval_s or 1.0)
        # Two nvidia-smi loops started together drift apart by a fraction of a poll.
        slack = 0.5 * (self.processes.info.interval_s or 1.0)
        for snap in self.gpus:
            if offset is None:
                offset = snap.timestamp if self._relative else 0.0
            while pending is not None and pending.timestamp + offset <= snap.timestamp + slack:
                current, pending = pending, next(polls, None)
            fresh = current is not None and snap.timestamp - (current.timestamp + offset) <= window
            yield self._join(snap, current if fresh else None)
        self._copy_counts()

    def _join(self, snap: Snapshot, poll: Snapshot | None) -> Snapshot:
        if poll is None:
            return snap
        index_by_uuid = {g.uuid: g.index for g in snap.gpus if g.uuid}
        poll_uuid = {g.index: g.uuid for g in poll.gpus}
        procs: list[GpuProcess] = []
        for p in poll.processes:
            uuid = poll_uuid.get(p.gpu_index)
            index = index_by_uuid.get(uuid, p.gpu_index) if uuid else p.gpu_index
            procs.append(dataclasses.replace(p, gpu_index=index))
        return dataclasses.replace(snap, processes=tuple(procs))

    def _copy_counts(self) -> None:
        """What reading both logs found: the GPU log's facts, the malformed lines of
        both, the first one named with its file."""
        counters = self.counters
        counters.reset()
        counters.bad_lines = self.gpus.counters.bad_lines + self.processes.counters.bad_lines
        counters.gpu_count = self.gpus.counters.gpu_count
        counters.found.update(self.gpus.counters.found)
        for part in (self.gpus, self.processes):
            if part.counters.first_bad_line is not None:
                counters.first_bad_line = part.counters.first_bad_line
                name = Path(part.info.path).name
                counters.first_bad_reason = f"{name}: {part.counters.first_bad_reason}"
                break

    def close(self) -> None:
        self.gpus.close()
        self.processes.close()

    def __enter__(self) -> MergedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_streams(
    paths: Sequence[str | Path],
    *,
    format: str | None = None,
    interval_s: float | None = None,
    mapping: Mapping[str, str] | None = None,
) -> SnapshotStream:
    """Open one log, or a GPU log and a per-process log of the same run as one stream.

    With one path this is :func:`~gputop_hints.sources.files.registry.open_stream`. With two,
    one must be a per-process log (compute-apps or pmon) and the other a GPU log;
    ``format`` and ``mapping`` apply to the GPU log. Raises UnrecognisedFormat when
    the pair is not of that shape."""
    if len(paths) == 1:
        return open_stream(paths[0], format=format, interval_s=interval_s, mapping=mapping)
    if len(paths) != 2:
        raise UnrecognisedFormat(
            f"give one log, or a GPU log and a per-process log of the same run ({len(paths)} given)"
        )
    opened: list[SnapshotStream] = []
    try:
        for path in paths:
            first = open_stream(path, interval_s=interval_s)
            if first.info.format not in PROCESS_FORMATS and (format or mapping):
                first.close()
                first = open_stream(path, format=format, interval_s=interval_s, mapping=mapping)
            opened.append(first)
        kinds = [s.info.format in PROCESS_FORMATS for s in opened]
        if kinds.count(True) != 1:
            names = ", ".join(f"{Path(s.info.path).name} ({s.info.format})" for s in opened)
            raise UnrecognisedFormat(
                "two logs are read together when one has GPU samples and the other per-process "
                f"rows (--query-compute-apps or pmon); got {names}"
            )
    except BaseException:
        for s in opened:
            s.close()
        raise
    gpus, procs = (opened[1], opened[0]) if kinds[0] else (opened[0], opened[1])
    return MergedStream(gpus, procs)
