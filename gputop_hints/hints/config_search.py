"""Where the user's thresholds file is, found without loading the rules.

:mod:`.config` loads and checks the file (and with it every rule's thresholds
class, ~0.1 s of imports); the monitor asks only this first, so that with no
file to read it can draw its first frame before those imports
(:mod:`gputop_hints.tui.first_frame`).

Search order (first found wins): ``--config PATH``, ``$GPUTOP_HINTS_CONFIG``,
``$XDG_CONFIG_HOME/gputop-hints/config.yaml`` (``~/.config`` when
XDG_CONFIG_HOME is unset).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gputop_hints.typed_yaml import ConfigError


def user_config_path(env: Mapping[str, str] = os.environ) -> Path:
    """Where the user's own config file lives (it need not exist)."""
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gputop-hints" / "config.yaml"


def find_config(
    explicit: str | None, env: Mapping[str, str] = os.environ
) -> tuple[Path | None, str]:
    """The config file to use and how it was found (for messages).

    An explicitly named file (``--config`` or ``$GPUTOP_HINTS_CONFIG``) that does
    not exist is an error; a missing user file just means "defaults".
    """
    if explicit is not None:
        if not explicit.strip():
            raise ConfigError(repr(explicit), None, None, "empty path given with --config")
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(explicit, None, None, "no such file (given with --config)")
        return path, "--config"
    from_env = env.get("GPUTOP_HINTS_CONFIG")
    if from_env:
        path = Path(from_env)
        if not path.is_file():
            raise ConfigError(from_env, None, None, "no such file (named by $GPUTOP_HINTS_CONFIG)")
        return path, "$GPUTOP_HINTS_CONFIG"
    user = user_config_path(env)
    if user.is_file():
        return user, "user config"
    return None, "built-in defaults"
