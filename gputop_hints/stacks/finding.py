"""Finding py-spy: on PATH, or beside the interpreter running us (a virtual
environment's ``bin/`` is often not on PATH when the program is started by its full
path)."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

INSTALL_REASON = (
    "py-spy is not installed: install py-spy (pip install py-spy, or the [stacks] extra: "
    "pip install 'gputop-hints[stacks]') to read where a process's Python waits"
)


@dataclass(frozen=True)
class PySpy:
    """Where py-spy is, or why it cannot be used (``path`` None, ``reason`` set)."""

    path: str | None
    reason: str | None = None


def find_py_spy(path_env: str | None = None, executable: str | None = None) -> PySpy:
    """py-spy on ``path_env`` (default ``$PATH``), else beside ``executable`` (default
    ``sys.executable``); never raises: a missing one comes back with the install reason."""
    search = path_env if path_env is not None else os.environ.get("PATH", os.defpath)
    found = shutil.which("py-spy", path=search)
    if found:
        return PySpy(found)
    beside = Path(executable if executable is not None else sys.executable).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return PySpy(str(beside))
    return PySpy(None, INSTALL_REASON)
