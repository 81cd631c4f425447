"""Sending SIGINT, SIGTERM or SIGKILL to a process the monitor shows.

The monitor asks for confirmation first (the TUI's confirmation screen); this
module decides whether a signal may be sent at all and sends it. It refuses:

* with ``--readonly``: signals are off entirely;
* when the pids on screen are not this machine's (the demo simulates them, a
  replay recorded them elsewhere or long ago): a real process that happens to
  have the same pid must never be hit;
* when the pid now belongs to another process than the one shown (it exited
  and the pid was reused): told by its start time.

What the OS answers is reported as it is: not permitted (another user's
process), no such process (it already exited).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

import psutil

SIGNALS: dict[str, signal.Signals] = {
    "SIGINT": signal.SIGINT,
    "SIGTERM": signal.SIGTERM,
    "SIGKILL": signal.SIGKILL,
}
"""The signals the monitor sends, by name."""

READONLY_TEXT = "Signals are disabled (--readonly)."


@dataclass(frozen=True, slots=True)
class SignalTarget:
    """The process a signal is for, as the screen showed it."""

    pid: int
    user: str | None
    command: str
    create_time: float | None = None
    """Its start time when known: a pid now held by a younger process is not it."""


@dataclass(frozen=True, slots=True)
class SignalResult:
    sent: bool
    message: str


def refusal(source_kind: str, readonly: bool) -> str | None:
    """Why no signal may be sent from this monitor at all; None when they may."""
    if readonly:
        return READONLY_TEXT
    if source_kind == "demo":
        return "Signals are off in the demo: its processes are simulated, not processes here."
    if source_kind != "live":
        return (
            f"Signals are off in {source_kind or 'this'} mode: the pids were recorded, "
            "they are not this machine's processes now."
        )
    return None


def send_signal(
    target: SignalTarget, name: str, *, source_kind: str, readonly: bool
) -> SignalResult:
    """Send signal ``name`` ("SIGTERM" ...) to ``target`` unless :func:`refusal` says no.

    Call only after the user confirmed. Never raises for what the OS refuses."""
    refused = refusal(source_kind, readonly)
    if refused is not None:
        return SignalResult(False, refused)
    number = SIGNALS[name]
    pid = target.pid
    if pid <= 0:
        return SignalResult(False, f"Not sent: {pid} is not a process id.")
    if target.create_time is not None:
        try:
            started = psutil.Process(pid).create_time()
        except psutil.NoSuchProcess:
            return SignalResult(False, f"{name} not sent: no such process {pid} (it exited).")
        except psutil.Error:
            started = None
        if started is not None and abs(started - target.create_time) > 1.0:
            return SignalResult(
                False, f"{name} not sent: pid {pid} is now another process (the one shown exited)."
            )
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        return SignalResult(False, f"{name} not sent: no such process {pid} (it exited).")
    except PermissionError:
        owner = f" (owned by {target.user})" if target.user else ""
        return SignalResult(False, f"{name} to {pid}: not permitted{owner}.")
    except OSError as exc:
        return SignalResult(False, f"{name} to {pid} failed: {exc.strerror or exc}.")
    return SignalResult(True, f"{name} sent to {pid}.")
