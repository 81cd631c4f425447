"""Sampling a process's Python stacks with py-spy, a few times a second for a few seconds.

Each sample is one ``py-spy dump --pid N --json --nonblocking`` per process (the main
process, then each worker), run with a hard timeout: a py-spy that hangs or is slow is
killed at ``timeout_s`` and that sample is missing, so the caller waits at most about
``samples x (period_s + timeout_s x processes)``.

Why ``--nonblocking``: without it py-spy stops the target (ptrace) for the length of
each dump so that the stack it reads is consistent. Stopping a training process's main
thread a few times a second delays its kernel launches, and on a distributed job a
stopped rank holds every other rank at the next collective -- the monitor would make
the stalls it reports. Unpaused, a dump can now and then read a stack mid-change;
py-spy then fails that dump or returns a frame that is off by one call, which shifts
one sample of many. docs/stacks.md has the measured failure rate (bench/stack_cost.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from gputop_hints.stacks.finding import PySpy, find_py_spy
from gputop_hints.stacks.permissions import current_env, refusal_reason

DEFAULT_SAMPLES = 15
DEFAULT_PERIOD_S = 0.2
"""15 samples 0.2 s apart: 3 s at 5 a second (docs/stacks.md has what this costs)."""
DEFAULT_TIMEOUT_S = 1.0

_REFUSED = ("Permission denied", "Operation not permitted", "os error 1)", "os error 13)")


@dataclass(frozen=True)
class Frame:
    """One Python frame as py-spy names it (``Class.method`` from Python 3.11)."""

    function: str
    file: str
    line: int

    def where(self) -> str:
        return f"{self.function} ({self.file}:{self.line})"


@dataclass(frozen=True)
class ThreadStack:
    """One thread in one dump: its frames innermost first. ``idle`` is py-spy's own
    flag (the thread was not running: blocked in a wait, a sleep or a read)."""

    thread_id: int
    os_thread_id: int | None
    name: str
    idle: bool
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class ProcessSamples:
    """Every dump of one process. ``dumps[i]`` is the i-th sample's threads; ``failed``
    counts dumps that came back empty (timed out, torn, unreadable); ``reason`` is set
    when sampling this process stopped (refused, gone, not Python)."""

    pid: int
    dumps: tuple[tuple[ThreadStack, ...], ...]
    failed: int = 0
    reason: str | None = None

    def main_thread(self, dump: Sequence[ThreadStack]) -> ThreadStack | None:
        """The process's main thread in ``dump``: the one whose OS id is the pid (or
        named MainThread where py-spy gives no OS id)."""
        for thread in dump:
            if thread.os_thread_id == self.pid:
                return thread
        return next((t for t in dump if t.name == "MainThread"), None)

    def busy_threads(self, dump: Sequence[ThreadStack]) -> list[ThreadStack]:
        """The threads of ``dump`` py-spy saw running: where the process spends CPU."""
        return [t for t in dump if not t.idle]


@dataclass(frozen=True)
class StackSamples:
    """What :func:`sample` read: the main process and each worker. ``reason`` is set
    when nothing could be sampled at all (py-spy missing)."""

    main: ProcessSamples
    workers: tuple[ProcessSamples, ...] = ()
    reason: str | None = None


def parse_dump(text: str) -> tuple[ThreadStack, ...]:
    """The threads of one ``py-spy dump --json`` output; malformed parts are skipped."""
    try:
        data = json.loads(text)
    except ValueError:
        return ()
    if not isinstance(data, list):
        return ()
    threads: list[ThreadStack] = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("frames"), list):
            continue
        frames = tuple(_frame(f) for f in item["frames"] if isinstance(f, dict))
        os_id = item.get("os_thread_id")
        threads.append(
            ThreadStack(
                thread_id=_int(item.get("thread_id")),
                os_thread_id=os_id if isinstance(os_id, int) else None,
                name=str(item.get("thread_name") or ""),
                idle=item.get("active") is False,
                frames=frames,
            )
        )
    return tuple(threads)


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _frame(item: dict[str, Any]) -> Frame:
    return Frame(
        str(item.get("name") or "?"), str(item.get("filename") or "?"), _int(item.get("line"))
    )


@dataclass(frozen=True)
class _Dump:
    threads: tuple[ThreadStack, ...]
    error: str | None = None
    fatal: bool = False


def dump(py_spy: str, pid: int, timeout_s: float) -> _Dump:
    """One ``py-spy dump`` of ``pid``, killed at ``timeout_s``; never raises."""
    try:
        proc = subprocess.Popen(
            [py_spy, "dump", "--pid", str(pid), "--json", "--nonblocking"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own group: killed whole, never our terminal's
        )
    except OSError as exc:
        return _Dump((), f"could not start py-spy ({py_spy}): {exc}", fatal=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=1.0)  # a child stuck even after SIGKILL is left
        return _Dump((), f"py-spy took longer than {timeout_s:g} s")
    if proc.returncode == 0:
        threads = parse_dump(out.decode("utf-8", "replace"))
        return _Dump(threads, None if threads else "py-spy printed no stacks")
    return _failure(pid, err.decode("utf-8", "replace"))


def _failure(pid: int, stderr: str) -> _Dump:
    # py-spy prints "Error: ...", "Caused by:" and numbered causes, then a Rust
    # backtrace: the error and its innermost cause say it.
    lines = [ln.strip() for ln in stderr.split("Stack backtrace:")[0].splitlines()]
    words = [re.sub(r"^\d+: ", "", ln) for ln in lines if ln and ln != "Caused by:"]
    detail = "; ".join(dict.fromkeys(words[:1] + words[-1:]))
    if not _exists(pid):
        return _Dump((), f"process {pid} is gone", fatal=True)
    if any(mark in stderr for mark in _REFUSED):
        return _Dump((), refusal_reason(pid, current_env(), detail), fatal=True)
    return _Dump((), f"py-spy could not read process {pid}: {detail or 'no error text'}")


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sample(
    pid: int,
    workers: Sequence[int] = (),
    samples: int = DEFAULT_SAMPLES,
    period_s: float = DEFAULT_PERIOD_S,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    py_spy: str | None = None,
) -> StackSamples:
    """``samples`` dumps of ``pid`` and of each of ``workers``, ``period_s`` apart
    (start to start), each call bounded by ``timeout_s``.

    A process whose dump is refused, that exits or that py-spy cannot start on is
    dropped from the later rounds with its reason; the others go on. Never raises.
    """
    if py_spy is None:
        found: PySpy = find_py_spy()
        if found.path is None:
            reason = found.reason or "py-spy is not installed"
            return StackSamples(ProcessSamples(pid, (), reason=reason), reason=reason)
        py_spy = found.path
    pids = [pid, *workers]
    dumps: dict[int, list[tuple[ThreadStack, ...]]] = {p: [] for p in pids}
    failed = dict.fromkeys(pids, 0)
    reasons: dict[int, str] = {}
    last_error: dict[int, str] = {}
    for i in range(samples):
        start = time.monotonic()
        live = [p for p in pids if p not in reasons]
        if not live:
            break
        for p in live:
            got = dump(py_spy, p, timeout_s)
            if got.fatal:
                reasons[p] = got.error or "py-spy failed"
            elif got.threads:
                dumps[p].append(got.threads)
            else:
                failed[p] += 1
                last_error[p] = got.error or "py-spy failed"
        if i < samples - 1:
            time.sleep(max(0.0, period_s - (time.monotonic() - start)))

    def one(p: int) -> ProcessSamples:
        reason = reasons.get(p)
        if reason is None and not dumps[p] and p in last_error:
            reason = last_error[p]
        return ProcessSamples(p, tuple(dumps[p]), failed[p], reason)

    return StackSamples(one(pid), tuple(one(w) for w in workers))
