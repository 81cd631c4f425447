"""The process tree: GPU processes grouped under the launcher that started them.

``launcher -> ranks -> DataLoader workers``: a torchrun job's ranks sit under the
torchrun process (which NVML does not list: it holds no GPU context), each rank's
workers under the rank. A launcher row carries its ranks' findings rolled up
(how many, the worst), so a job with one starving rank is visible while folded.

A pure function of a tick's processes, launchers and findings (no Textual): the
process table's tree view draws what :func:`build_tree` returns.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from gputop_hints.hints.findings import Finding
from gputop_hints.model import GpuProcess, Launcher, WorkerProcess

RowKey = tuple[str, int, int, int]
"""How a tree row is known across ticks: ``("launcher", pid, 0, 0)``,
``("process", pid, gpu, 0)``, ``("worker", rank pid, gpu, worker pid)``."""


def launcher_key(pid: int) -> RowKey:
    return ("launcher", pid, 0, 0)


def process_key(pid: int, gpu_index: int) -> RowKey:
    return ("process", pid, gpu_index, 0)


@dataclass(frozen=True, slots=True)
class Rollup:
    """A launcher's ranks' findings, together."""

    findings: int
    """How many findings its ranks have (a process's own, not its GPU's)."""
    ranks_with_findings: int
    worst: Finding | None
    """The worst of them (the first when several share the worst severity)."""


@dataclass(frozen=True, slots=True)
class TreeRow:
    """One line of the tree view."""

    kind: str
    """"launcher", "process" (a GPU process: a rank, or a process of its own) or "worker"."""
    key: RowKey
    depth: int
    """0 for top-level rows, 1 under a launcher, one more for a worker."""
    pid: int
    process: GpuProcess | None = None
    """The GPU process of a "process" row, and the rank a "worker" row belongs to."""
    launcher: Launcher | None = None
    worker: WorkerProcess | None = None
    children: int = 0
    """Rows folded under this one (ranks of a launcher, workers of a process)."""
    expanded: bool = False
    last: bool = True
    """The last of its siblings under the same parent (drawn ``└`` rather than ``├``)."""
    rollup: Rollup | None = None
    """For a launcher: its ranks' findings."""

    @property
    def user(self) -> str | None:
        if self.launcher is not None:
            return self.launcher.user
        if self.process is not None:
            return self.process.user
        return None

    @property
    def command(self) -> str:
        if self.launcher is not None:
            return self.launcher.command or self.launcher.name or ""
        if self.worker is not None:
            return self.worker.command or self.worker.name or ""
        if self.process is not None:
            return self.process.command or self.process.name or ""
        return ""


def rollup(
    ranks: Sequence[GpuProcess], findings: Mapping[tuple[int, int], Sequence[Finding]]
) -> Rollup:
    """The findings of ``ranks`` together: how many, on how many ranks, the worst."""
    count = 0
    with_findings = 0
    worst: Finding | None = None
    for proc in ranks:
        own = findings.get(proc.key, ())
        if own:
            with_findings += 1
            count += len(own)
        for finding in own:
            if worst is None or finding.severity > worst.severity:
                worst = finding
    return Rollup(count, with_findings, worst)


def is_expanded(key: RowKey, toggled: Collection[RowKey]) -> bool:
    """Launchers start unfolded, processes folded (their workers hidden); a key in
    ``toggled`` was flipped by the user."""
    default = key[0] == "launcher"
    return default != (key in toggled)


def build_tree(
    processes: Sequence[GpuProcess],
    launchers: Sequence[Launcher],
    findings: Mapping[tuple[int, int], Sequence[Finding]] | None = None,
    toggled: Collection[RowKey] = (),
) -> list[TreeRow]:
    """The rows of the tree view, top to bottom.

    ``processes`` keep their order (the table's sort); a launcher's group stands
    where its first rank would, with its ranks in the same order under it. A
    process whose launcher is not in ``launchers`` is a top-level row. Rows folded
    away (see :func:`is_expanded`) are left out; their parent counts them.
    """
    shown_findings = findings or {}
    by_pid = {launcher.pid: launcher for launcher in launchers}
    ranks_of: dict[int, list[GpuProcess]] = {}
    for proc in processes:
        if proc.launcher_pid is not None and proc.launcher_pid in by_pid:
            ranks_of.setdefault(proc.launcher_pid, []).append(proc)
    rows: list[TreeRow] = []
    placed: set[int] = set()
    for proc in processes:
        launcher_pid = proc.launcher_pid
        if launcher_pid is None or launcher_pid not in by_pid:
            _add_process(rows, proc, 0, True, toggled)
            continue
        if launcher_pid in placed:
            continue
        placed.add(launcher_pid)
        ranks = ranks_of[launcher_pid]
        key = launcher_key(launcher_pid)
        expanded = is_expanded(key, toggled)
        rows.append(
            TreeRow(
                kind="launcher",
                key=key,
                depth=0,
                pid=launcher_pid,
                launcher=by_pid[launcher_pid],
                children=len(ranks),
                expanded=expanded,
                rollup=rollup(ranks, shown_findings),
            )
        )
        if expanded:
            for i, rank in enumerate(ranks):
                _add_process(rows, rank, 1, i == len(ranks) - 1, toggled)
    return rows


def _add_process(
    rows: list[TreeRow], proc: GpuProcess, depth: int, last: bool, toggled: Collection[RowKey]
) -> None:
    key = process_key(proc.pid, proc.gpu_index)
    expanded = bool(proc.workers) and is_expanded(key, toggled)
    rows.append(
        TreeRow(
            kind="process",
            key=key,
            depth=depth,
            pid=proc.pid,
            process=proc,
            children=len(proc.workers),
            expanded=expanded,
            last=last,
        )
    )
    if not expanded:
        return
    for i, worker in enumerate(proc.workers):
        rows.append(
            TreeRow(
                kind="worker",
                key=("worker", proc.pid, proc.gpu_index, worker.pid),
                depth=depth + 1,
                pid=worker.pid,
                process=proc,
                worker=worker,
                last=i == len(proc.workers) - 1,
            )
        )
