"""Where ``gputop-hints record -o FILE`` may write, checked before anything is written.

A recorder pointed at the wrong path must not destroy a file: an existing FILE is
overwritten only when it is empty or when ``--force`` says so -- an earlier
recording too (``record -o run.jsonl.gz`` run twice lost the first run without a
word); a rotated part ``FILE.1`` ... ``FILE.<keep>`` that ``--max-bytes`` rotation
would replace may be a recording (rotating recordings is what the user asked for),
anything else only with ``--force``. Pipes, devices and directories are refused even
with ``--force``: the writer needs a regular file it can seek in. Missing
directories are created, and the user is told, so a typo in a path does not
silently grow a tree. While a recorder runs it holds an exclusive lock on FILE
(:func:`lock_output`): a second recorder on the same file is refused, not
interleaved.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

SNIFF_BYTES = 64 * 1024
"""How much of an existing file is read to tell whether it is a recording."""


class OutputRefused(Exception):
    """Writing FILE would destroy something, or cannot work; the message says which and why."""


def rotated_parts(path: Path, keep: int) -> list[Path]:
    """``FILE.1`` ... ``FILE.<keep>``: what rotation renames older parts to."""
    return [path.with_name(f"{path.name}.{i}") for i in range(1, keep + 1)]


def check_output(path: Path, *, force: bool, rotation_keep: int = 0) -> None:
    """Raise :class:`OutputRefused` when recording to ``path`` would destroy a file.

    ``rotation_keep`` is ``--keep`` when ``--max-bytes`` is given (rotation then
    replaces ``FILE.1`` ... ``FILE.<keep>``), else 0.
    """
    _check_one(path, force=force, recording_ok=False)
    for target in rotated_parts(path, rotation_keep):
        _check_one(target, force=force, recording_ok=True)


def _check_one(path: Path, *, force: bool, recording_ok: bool) -> None:
    try:
        info = path.stat()
    except OSError:
        # Nothing there (or nothing we may look at): the writer says what is wrong, if anything.
        return
    if stat.S_ISDIR(info.st_mode):
        raise OutputRefused(f"{path} is a directory; give a file name to record to")
    if not stat.S_ISREG(info.st_mode):
        raise OutputRefused(
            f"{path} is not a regular file (a pipe, socket or device); "
            "a recording needs a regular file"
        )
    if info.st_size == 0 or force:
        return
    if not _is_recording(path):
        raise OutputRefused(
            f"{path} exists and is not a gputop-hints recording; refusing to overwrite it "
            "(choose another name, or add --force to replace it)"
        )
    if not recording_ok:
        raise OutputRefused(
            f"{path} is an earlier recording ({info.st_size:,} bytes); refusing to replace "
            "it (choose another name, or add --force to replace it)"
        )


def _is_recording(path: Path) -> bool:
    """Whether ``path`` starts like a recording; a file that cannot be read is not one."""
    # Imported here: the file readers are not needed by every gputop-hints command.
    from gputop_hints.recording.reader import looks_like_recording

    try:
        with open(path, "rb") as f:
            return looks_like_recording(f.read(SNIFF_BYTES))
    except OSError:
        return False


def create_missing_directories(path: Path) -> Path | None:
    """Create the directory ``path`` goes in; it, or None when it already existed.

    Raises OSError when it cannot be made (a file in the way, no permission).
    """
    parent = path.parent
    if parent.is_dir():
        return None
    parent.mkdir(parents=True, exist_ok=True)
    return parent


def lock_output(path: Path) -> int | None:
    """Take an exclusive lock on FILE (created if missing, never truncated here) for as
    long as the returned descriptor stays open; None when FILE is not a regular file
    (``check_output`` refuses those). :class:`OutputRefused` when another process holds
    it: two recorders on one file would interleave their lines silently.

    The lock (``flock``) is advisory: it keeps gputop-hints recorders apart; it is
    released when the recorder exits, however it exits."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OutputRefused(
            f"{path}: another gputop-hints record is writing to it; stop that one first, "
            "or give another file with -o"
        ) from None
    except OSError:
        # A file system without locks (some network mounts): record without one.
        return fd
    return fd
