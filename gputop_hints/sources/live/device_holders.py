"""Who holds the GPU device files: ``fuser -v /dev/nvidia*``, run for the user on request.

ghost-memory (issue 48) names this command as the way to find memory nothing lists: a
process in another namespace, an exited process's child that inherited its
``/dev/nvidia*`` descriptors, a zombie's leftover workers. The monitor runs it only
when asked (a key), reads its output and signals nothing.

The device files are globbed here (no shell), fuser gets a bounded time, and its
output is returned as it was written: the view makes control characters visible.
Run only on the live source: a demo's GPUs are simulated, a replay's are of another
time, and a Prometheus view's are on other machines -- :func:`refusal` says so.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass

DEVICE_GLOB = "/dev/nvidia*"
TIMEOUT_S = 10.0
"""fuser reads every process's /proc/PID/fd: seconds on a busy node, never minutes."""
MAX_CHARS = 200_000
"""More than any node's holders take; what is beyond is cut, and said."""
_SEARCH_PATH = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
_UNREADABLE = "Cannot stat file /proc/"


@dataclass(frozen=True, slots=True)
class Holders:
    """What one run of fuser gave, or why it did not run."""

    command: str
    """The command line as a person would type it (the files as the glob found them)."""
    ran: bool
    """False: fuser was not run (no device files, no fuser, not a live source)."""
    text: str
    """fuser's table and anything else it printed; or why it did not run."""
    unreadable: int = 0
    """Descriptors of other processes fuser could not read (its "Cannot stat file
    /proc/..." lines, one per descriptor, without root): counted, left out of ``text``."""

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


def refusal(source_kind: str) -> str | None:
    """Why the listing is not run for this source; None for the live source."""
    if source_kind == "live":
        return None
    where = {
        "demo": "the demo's GPUs are simulated: this machine's device files say nothing about them",
        "replay": "a replay shows a recording: who holds this machine's device files now "
        "says nothing about then",
        "prometheus": "this view reads metrics of other machines: their device files are "
        "there, not here",
    }.get(source_kind, f"the {source_kind or 'current'} source is not this machine's GPUs")
    return f"Not run: {where}. On the GPU node itself: fuser -v {DEVICE_GLOB} (as root)."


def list_holders(
    pattern: str = DEVICE_GLOB, timeout_s: float = TIMEOUT_S, fuser: str = "fuser"
) -> Holders:
    """Run ``fuser -v`` on the files ``pattern`` matches (read-only: fuser is given no
    signal or kill option) and return its output. ``fuser``: the program's name,
    looked up on $PATH and then in the system's bin directories."""
    files = sorted(glob.glob(pattern))
    shown = f"fuser -v {pattern}"
    if not files:
        return Holders(
            shown,
            False,
            f"No file matches {pattern}: the NVIDIA driver's device files are not here "
            "(no driver loaded, or a container started without the GPU devices).",
        )
    exe = shutil.which(fuser) or shutil.which(fuser, path=os.pathsep.join(_SEARCH_PATH))
    if exe is None:
        return Holders(
            shown,
            False,
            "fuser not found (psmisc): install psmisc (apt install psmisc, dnf install "
            "psmisc), or list the holders by hand: ls -l /proc/*/fd | grep /dev/nvidia",
        )
    try:
        done = subprocess.run(
            [exe, "-v", *files],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # the table on stderr, the pids on stdout: one stream
            timeout=timeout_s,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
    except subprocess.TimeoutExpired:
        return Holders(shown, False, f"fuser did not finish in {timeout_s:g} s; stopped.")
    except OSError as e:
        return Holders(shown, False, f"fuser could not be started: {e.strerror or e}")
    out = done.stdout.decode("utf-8", "replace")
    kept: list[str] = []
    unreadable = 0
    for line in out.splitlines():
        if line.startswith(_UNREADABLE):
            unreadable += 1
        else:
            kept.append(line)
    text = "\n".join(kept)
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + f"\n... (cut at {MAX_CHARS} characters)"
    if not text.strip():
        text = (
            f"No process holds {pattern} that this user can see"
            + ("" if os.geteuid() == 0 else " (run as root to see other users' processes)")
            + "."
        )
    return Holders(shown, True, text, unreadable)
