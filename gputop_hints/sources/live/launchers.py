"""Which job launcher started each GPU process: torchrun and friends.

A DDP job's ranks are children of one launcher (``torchrun``, ``python -m
torch.distributed.run``, ``deepspeed``, ``accelerate launch``, ``mpirun``,
``srun``) that usually holds no GPU context itself, so NVML never lists it: it
is found by walking the parent pids up from each GPU process. The process tree
view groups ranks under it.

A process's parent only changes when the parent dies, so the walk is made once
per GPU process (per pid and start time) and kept while it lives.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import replace

import psutil

from gputop_hints.model import GpuProcess, Launcher

MAX_DEPTH = 8
"""Ancestors looked at above a GPU process: torchrun under srun under a shell is 3."""

_LAUNCHER_PROGRAMS = {
    "torchrun": "torchrun",
    "deepspeed": "deepspeed",
    "mpirun": "mpirun",
    "mpiexec": "mpirun",
    "orterun": "mpirun",
    "prterun": "mpirun",
    "srun": "srun",
    "horovodrun": "horovodrun",
}
_LAUNCHER_MODULES = {
    "torch.distributed.run": "torchrun",
    "torch.distributed.launch": "torchrun",
    "deepspeed.launcher.launch": "deepspeed",
    "deepspeed.launcher.runner": "deepspeed",
    "accelerate.commands.launch": "accelerate",
}
_PYTHON_PREFIXES = ("python", "pypy")


def launcher_kind(argv: Sequence[str]) -> str | None:
    """The launcher an argument vector runs ("torchrun", "deepspeed", ...), else None.

    Looks at the program and, for an interpreter, at its script or ``-m`` module:
    ``/venv/bin/python /venv/bin/torchrun ...`` is torchrun as surely as ``torchrun ...``.
    """
    if not argv:
        return None
    words = list(argv)
    program = os.path.basename(words[0])
    if program.startswith(_PYTHON_PREFIXES):
        rest = words[1:]
        while rest and rest[0].startswith("-") and rest[0] != "-m":
            rest = rest[1:]  # interpreter flags (-u, -O, -X ...)
        if len(rest) >= 2 and rest[0] == "-m":
            return _LAUNCHER_MODULES.get(rest[1])
        if not rest:
            return None
        words = rest
        program = os.path.basename(words[0])
    if program == "accelerate":
        return "accelerate" if "launch" in words[1:2] else None
    return _LAUNCHER_PROGRAMS.get(program)


class LauncherFinder:
    """Each GPU process's launcher, found by walking parent pids (psutil), cached."""

    def __init__(self, max_depth: int = MAX_DEPTH) -> None:
        self.max_depth = max_depth
        self._of: dict[tuple[int, float | None], int | None] = {}
        """(GPU pid, its start time) -> its launcher's pid (None: none)."""
        self._launchers: dict[int, Launcher] = {}
        self.walks = 0
        """How many ancestor walks were made (for tests)."""

    def attach(
        self, processes: Iterable[GpuProcess]
    ) -> tuple[tuple[GpuProcess, ...], tuple[Launcher, ...]]:
        """The processes with :attr:`GpuProcess.launcher_pid` set, and their launchers."""
        rows = list(processes)
        seen: set[tuple[int, float | None]] = set()
        out: list[GpuProcess] = []
        used: set[int] = set()
        for proc in rows:
            key = (proc.pid, proc.create_time)
            seen.add(key)
            if key not in self._of:
                self._of[key] = self._walk(proc.pid) if proc.create_time is not None else None
            launcher = self._of[key]
            if launcher is not None and launcher in self._launchers:
                used.add(launcher)
                proc = replace(proc, launcher_pid=launcher)
            out.append(proc)
        for key in [k for k in self._of if k not in seen]:
            del self._of[key]
        for pid in [p for p in self._launchers if p not in used]:
            del self._launchers[pid]
        return tuple(out), tuple(self._launchers[p] for p in sorted(used))

    def _walk(self, pid: int) -> int | None:
        """The nearest ancestor of ``pid`` that is a launcher, or None."""
        self.walks += 1
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            for _ in range(self.max_depth):
                parent = proc.parent()
                if parent is None or parent.pid <= 1:
                    return None
                proc = parent
                argv: list[str] = []
                with contextlib.suppress(psutil.AccessDenied):
                    argv = proc.cmdline()
                kind = launcher_kind(argv)
                if kind is None:
                    continue
                if proc.pid not in self._launchers:
                    self._launchers[proc.pid] = self._describe(proc, kind, argv)
                return proc.pid
        return None

    @staticmethod
    def _describe(proc: psutil.Process, kind: str, argv: list[str]) -> Launcher:
        user = name = None
        with contextlib.suppress(psutil.Error):
            user = proc.username()
        with contextlib.suppress(psutil.Error):
            name = proc.name()
        return Launcher(pid=proc.pid, kind=kind, user=user, name=name, command=" ".join(argv))
