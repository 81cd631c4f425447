"""Finding and loading the user's thresholds file, with errors that name the file, line and key.

A user file may override any subset of the defaults. Everything is checked
before anything starts: an unknown key (with the nearest valid one suggested),
a value of the wrong type, or a value out of its range is a :class:`ConfigError`
(raised by the parser in ``typed_yaml``) and the program exits with status 2 --
it never runs with a half-valid config.

Search order (first found wins, then merged over the packaged defaults):
``--config PATH``, ``$GPUTOP_HINTS_CONFIG``, ``$XDG_CONFIG_HOME/gputop-hints/config.yaml``
(``~/.config`` when XDG_CONFIG_HOME is unset).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from gputop_hints.hints.config_search import find_config, user_config_path
from gputop_hints.hints.thresholds import DEFAULTS_PATH, Thresholds, parse_overrides
from gputop_hints.typed_yaml import ConfigError

MAX_CONFIG_BYTES = 256 * 1024
"""A bigger file is refused unread: the full defaults file is a few KB, and parsing a
huge YAML document costs gigabytes (a 100 MB list under a valid key reached 11 GB)."""

__all__ = [
    "ConfigError",
    "defaults_text",
    "find_config",
    "load",
    "load_file",
    "parse_overrides",
    "user_config_path",
]


def load(explicit: str | None = None, env: Mapping[str, str] = os.environ) -> Thresholds:
    """Thresholds from the first config file in the search order, over the defaults."""
    path, _how = find_config(explicit, env)
    if path is None:
        return Thresholds.defaults()
    return load_file(path)


def _stderr_warning(message: str) -> None:
    sys.stderr.write(f"gputop-hints: warning: {message}\n")


def writable_by_others(path: Path) -> str | None:
    """Why others than its owner could change what ``path`` says, or None.

    A world-writable file, or one in a world-writable directory (where anyone can
    replace it), lets another user change the thresholds -- or the hints -- you see."""
    try:
        if path.stat().st_mode & stat.S_IWOTH:
            return "the file is writable by every user"
        if path.resolve().parent.stat().st_mode & stat.S_IWOTH:
            return "its directory is writable by every user"
    except OSError:
        return None
    return None


def read_bounded(path: Path, limit: int) -> str:
    """The UTF-8 text of a small file; ConfigError when it is bigger than ``limit`` bytes
    or not text. Reads at most ``limit + 1`` bytes, whatever the file claims its size is."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise ConfigError(str(path), None, None, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ConfigError(
            str(path), None, None, f"too big for a config file (more than {limit // 1024} KB)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(path), None, None, f"cannot read: not UTF-8 text (byte {exc.start + 1} is not)"
        ) from None


def load_file(path: Path, warn: Callable[[str], None] = _stderr_warning) -> Thresholds:
    """Thresholds from one file, over the defaults; unreadable, too big or not text is a
    ConfigError too. A file others may change is still read, after a warning (``warn``)."""
    others = writable_by_others(path)
    if others is not None:
        warn(f"{path}: {others}; anyone could change your thresholds (chmod o-w)")
    text = read_bounded(path, MAX_CONFIG_BYTES)
    return parse_overrides(text, str(path), base=Thresholds.defaults())


def defaults_text() -> str:
    """The packaged, commented defaults file, verbatim."""
    return DEFAULTS_PATH.read_text(encoding="utf-8")
