"""Per-process logs, shared by ``--query-compute-apps`` and ``pmon``: rows -> polls.

Both print one row per process per poll and nothing between polls, so a poll
ends when a (GPU, pid) pair repeats or the time moves on. GPUs may be named by
index (pmon) or only by UUID / bus id (compute-apps): those are numbered in
order of first appearance, which is nvidia-smi's own order when every GPU holds
a process, and said so in the stream's detail.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from gputop_hints.model import GpuProcess, GpuSample, HostSample, Snapshot
from gputop_hints.sources.files._table import _BY_INDEX, Clock
from gputop_hints.streams import ReadCounters


@dataclass
class ProcessRow:
    line: int
    timestamp: float | None
    gpu: int | str
    """Index, or a UUID / bus id when that is all the log names."""
    process: GpuProcess | None
    """None for pmon's ``-`` row: the GPU is there, with no process."""


@dataclass
class Poll:
    timestamp: float | None
    gpus: dict[int | str, list[GpuProcess]] = field(default_factory=dict)


def polls(rows: Iterable[ProcessRow], tolerance: float) -> Iterator[Poll]:
    """Group rows into polls: a repeated (GPU, pid) or a later time starts the next."""
    current: Poll | None = None
    seen: set[tuple[int | str, int | None]] = set()
    for row in rows:
        key = (row.gpu, row.process.pid if row.process is not None else None)
        new = current is None or key in seen
        if not new and current is not None and row.timestamp is not None:
            new = (
                current.timestamp is not None and abs(row.timestamp - current.timestamp) > tolerance
            )
        if new:
            if current is not None:
                yield current
            current = Poll(row.timestamp)
            seen = set()
        assert current is not None
        seen.add(key)
        procs = current.gpus.setdefault(row.gpu, [])
        if row.process is not None:
            procs.append(row.process)
    if current is not None:
        yield current


class GpuNumbering:
    """UUIDs and bus ids -> GPU indices in order of first appearance."""

    def __init__(self) -> None:
        self.by_name: dict[str, int] = {}

    def index(self, gpu: int | str) -> int:
        if isinstance(gpu, int):
            return gpu
        if gpu not in self.by_name:
            self.by_name[gpu] = len(self.by_name)
        return self.by_name[gpu]


def snapshots(
    source: Iterable[Poll], counters: ReadCounters, interval: float, detail: str
) -> Iterator[Snapshot]:
    """Polls -> Snapshots whose GPUs carry nothing but their identity."""
    clock = Clock(counters, interval)
    numbering = GpuNumbering()
    counters.found["gpu_numbering"] = numbering.by_name
    host = HostSample(hostname="unknown", cpu_percent_per_core=(), allowed_cores=())
    # The readers hand the same GpuProcess for a process polled again with the same
    # figures: what is made of it is made once (by identity, the process kept).
    made_gpus: dict[tuple[int, str | None, int], tuple[GpuProcess | None, GpuSample]] = {}
    made_procs: dict[tuple[int, int], tuple[GpuProcess, GpuProcess]] = {}
    for poll in source:
        gpus = []
        processes = []
        for gpu, procs in poll.gpus.items():
            index = numbering.index(gpu)
            uuid = gpu if isinstance(gpu, str) and gpu.startswith(("GPU-", "MIG-")) else None
            only = procs[0] if len(procs) == 1 else None
            key = (index, uuid, id(only))
            made = made_gpus.get(key)
            if made is None or made[0] is not only:
                if len(made_gpus) >= _MADE_MAX:
                    made_gpus.clear()
                made = made_gpus[key] = (only, _gpu(index, uuid, procs))
            gpus.append(made[1])
            for p in procs:
                if p.gpu_index == index:
                    processes.append(p)
                    continue
                moved = made_procs.get((id(p), index))
                if moved is None or moved[0] is not p:
                    if len(made_procs) >= _MADE_MAX:
                        made_procs.clear()
                    moved = made_procs[id(p), index] = (p, _on(p, index))
                processes.append(moved[1])
        if len(gpus) > 1:
            gpus.sort(key=_BY_INDEX)
        counters.saw_gpus(len(gpus))
        # By position, as the Assembler passes them (see _table._SNAPSHOT_HEAD).
        yield Snapshot(
            clock.next(poll.timestamp), interval, host, tuple(gpus), tuple(processes),
            "replay", detail, None,
        )  # fmt: skip


_MADE_MAX = 4096

FROM_ONLY_PROCESS = (
    "a GPU's SM % and memory % are its only process's, where it has exactly one; "
    "unknown where it has none or several"
)
"""The detail note of a per-process log read alone (see :func:`_gpu`)."""


def _gpu(index: int, uuid: str | None, procs: list[GpuProcess]) -> GpuSample:
    """The GPU of a poll. With exactly one process on it, NVML's per-process SM % and
    memory % (``nvmlDeviceGetProcessUtilization``, what pmon prints) are the GPU's own
    over the same sample window, so the GPU gets them: a per-process log alone then
    supports the findings that read SM %. With several, the per-process figures
    overlap in time (their sum can exceed the GPU's, their maximum falls short), so
    the GPU stays unknown; with none, pmon printed ``-``: no sample, not idle."""
    if len(procs) != 1:
        return GpuSample(index=index, uuid=uuid)
    (only,) = procs
    if only.sm_percent is None and only.memory_access_percent is None:
        return GpuSample(index=index, uuid=uuid)
    return GpuSample(
        index=index,
        uuid=uuid,
        sm_percent=only.sm_percent,
        memory_access_percent=only.memory_access_percent,
    )


def _on(proc: GpuProcess, index: int) -> GpuProcess:
    if proc.gpu_index == index:
        return proc
    return GpuProcess(
        pid=proc.pid,
        gpu_index=index,
        vram_bytes=proc.vram_bytes,
        sm_percent=proc.sm_percent,
        memory_access_percent=proc.memory_access_percent,
        name=proc.name,
        command=proc.command,
    )
