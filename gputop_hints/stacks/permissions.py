"""Why py-spy was refused, said as what would allow it.

py-spy reads another process's memory, which Linux allows only to a tracer the
kernel's ptrace access check lets through (``man 2 ptrace``, "Ptrace access mode
checking"): the same user, unless Yama's ``/proc/sys/kernel/yama/ptrace_scope``
restricts it further (1: only to the process's ancestors; 2: only with
CAP_SYS_PTRACE; 3: to nobody), or CAP_SYS_PTRACE (root has it outside a container;
Docker drops it unless started with ``--cap-add SYS_PTRACE``). We read these and say
which applies; we never try to raise our own privileges.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CAP_SYS_PTRACE = 19
"""Its bit in /proc/<pid>/status CapEff (linux/capability.h)."""

_SCOPE_FILE = "/proc/sys/kernel/yama/ptrace_scope"


@dataclass(frozen=True)
class PtraceEnv:
    """What decides whether we may read another process: Yama's scope (None: no Yama),
    our effective user, CAP_SYS_PTRACE in our effective set, and whether we run in a
    container."""

    ptrace_scope: int | None
    euid: int
    cap_sys_ptrace: bool
    in_container: bool


def read_ptrace_scope(path: str = _SCOPE_FILE) -> int | None:
    """Yama's ptrace_scope, or None where Yama is absent or the file unreadable."""
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def has_cap_sys_ptrace(status_path: str = "/proc/self/status") -> bool:
    """Whether CAP_SYS_PTRACE is in our effective capabilities (CapEff, bit 19)."""
    try:
        for line in Path(status_path).read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def in_container(root: str = "/") -> bool:
    """Docker's ``/.dockerenv``, Podman's ``/run/.containerenv``, or a container
    runtime named in our cgroup."""
    base = Path(root)
    if (base / ".dockerenv").exists() or (base / "run/.containerenv").exists():
        return True
    try:
        cgroup = (base / "proc/self/cgroup").read_text()
    except OSError:
        return False
    return any(word in cgroup for word in ("docker", "containerd", "kubepods", "libpod", "lxc"))


def current_env() -> PtraceEnv:
    """This process's :class:`PtraceEnv`, read from /proc."""
    return PtraceEnv(read_ptrace_scope(), os.geteuid(), has_cap_sys_ptrace(), in_container())


def refusal_reason(pid: int, env: PtraceEnv, detail: str = "") -> str:
    """A plain sentence on why reading ``pid``'s stacks was refused and what would allow
    it, from ``env``; ``detail`` is py-spy's own last error line, quoted at the end."""
    head = f"py-spy was not allowed to read process {pid}'s stacks"
    who = "we run as root" if env.euid == 0 else f"we run as uid {env.euid}"
    cap = "with CAP_SYS_PTRACE" if env.cap_sys_ptrace else "without CAP_SYS_PTRACE"
    parts = [f"{head} ({who}, {cap})."]
    scope = env.ptrace_scope
    if scope is None or scope == 0:
        yama = "Yama is absent" if scope is None else "ptrace_scope is 0"
        parts.append(
            f"{yama}: a process of the same user may be read, another user's only with "
            "CAP_SYS_PTRACE -- run gputop-hints as the job's user, or as root."
        )
    elif scope == 1:
        parts.append(
            "ptrace_scope is 1: only a process's ancestors may read it -- start the job "
            "under gputop-hints (gputop-hints run -- python train.py), or give us "
            "CAP_SYS_PTRACE (root)."
        )
    elif scope == 2:
        parts.append(
            "ptrace_scope is 2: only a process with CAP_SYS_PTRACE may read another "
            "-- run gputop-hints as root."
        )
    else:
        parts.append(
            f"ptrace_scope is {scope}: nobody may read another process's memory until "
            "reboot; stacks cannot be read on this host."
        )
    if env.in_container and not env.cap_sys_ptrace and scope != 3:
        parts.append(
            "In a container CAP_SYS_PTRACE is dropped by default: start it with "
            "--cap-add SYS_PTRACE (docker/podman run) to let root inside read its processes."
        )
    if detail:
        parts.append(f"py-spy said: {detail}")
    return " ".join(parts)
