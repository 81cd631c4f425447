"""Loading thresholds from YAML, with errors that name the file, line and key.

A user file may override any subset of the defaults. Everything is checked
before anything starts: an unknown key (with the nearest valid one suggested),
a value of the wrong type, or a value out of its range is a :class:`ConfigError`
and the program exits with status 2 -- it never runs with a half-valid config.

Search order (first found wins, then merged over the packaged defaults):
``--config PATH``, ``$GPUTOP_HINTS_CONFIG``, ``$XDG_CONFIG_HOME/gputop-hints/config.yaml``
(``~/.config`` when XDG_CONFIG_HOME is unset).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from gputop_hints.hints.thresholds import DEFAULTS_PATH, Thresholds, field_type


class ConfigError(Exception):
    """A problem in a configuration file, located to its line and key."""

    def __init__(self, path: str, line: int | None, key: str | None, message: str) -> None:
        self.path = path
        self.line = line
        self.key = key
        self.message = message
        where = path if line is None else f"{path}:{line}"
        what = f" {key}:" if key else ""
        super().__init__(f"{where}:{what} {message}")


def user_config_path(env: Mapping[str, str] = os.environ) -> Path:
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


def load(explicit: str | None = None, env: Mapping[str, str] = os.environ) -> Thresholds:
    """Thresholds from the first config file in the search order, over the defaults."""
    path, _how = find_config(explicit, env)
    if path is None:
        return Thresholds.defaults()
    return load_file(path)


def load_file(path: Path) -> Thresholds:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), None, None, f"cannot read: {exc}") from None
    return parse_overrides(text, str(path), base=Thresholds.defaults())


def defaults_text() -> str:
    """The packaged, commented defaults file, verbatim."""
    return DEFAULTS_PATH.read_text(encoding="utf-8")


def parse_overrides(text: str, path: str, base: Thresholds | None) -> Thresholds:
    """Parse YAML ``text`` and apply it over ``base`` (None: every key is required)."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(path, line, None, f"not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, None, None, f"not valid YAML: {exc}") from None
    finally:
        loader.dispose()
    if root is None or root.tag == "tag:yaml.org,2002:null":  # empty: overrides nothing
        if base is None:
            raise ConfigError(path, None, None, "empty defaults file")
        return base
    result = _apply(Thresholds, root, base, path, "", loader)
    assert isinstance(result, Thresholds)
    _check_consistent(result, root, path)
    return result


_ORDERED_PAIRS = (
    ("small_batch", "sm_min_percent", "sm_max_percent"),
    ("vram_near_limit", "used_fraction_above", "critical_fraction_above"),
    ("idle_holding_vram", "idle_for_s", "critical_after_s"),
)
"""(section, low key, high key): values that only make sense with low <= high."""


def _key_line(root: yaml.Node, section: str, key: str) -> int | None:
    """Line of ``section.key`` in the user's file, or of the section, if the file names it."""
    if not isinstance(root, yaml.MappingNode):
        return None
    for k, v in root.value:
        if getattr(k, "value", None) != section:
            continue
        if isinstance(v, yaml.MappingNode):
            for k2, _v2 in v.value:
                if getattr(k2, "value", None) == key:
                    return _line(k2)
        return _line(k)
    return None


def _check_consistent(t: Thresholds, root: yaml.Node, path: str) -> None:
    """Reject combinations that would silently switch a rule off (e.g. min above max)."""
    for section, low_key, high_key in _ORDERED_PAIRS:
        values = getattr(t, section)
        low, high = getattr(values, low_key), getattr(values, high_key)
        if low <= high:
            continue
        line = _key_line(root, section, low_key) or _key_line(root, section, high_key)
        raise ConfigError(
            path,
            line,
            f"{section}.{low_key}",
            f"{low:g} must not exceed {section}.{high_key} ({high:g}), or the rule can never fire",
        )


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _apply(
    cls: Any, node: yaml.Node, base: Any, path: str, prefix: str, loader: yaml.SafeLoader
) -> Any:
    section = prefix.rstrip(".") or "top level"
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(
            path,
            _line(node),
            prefix.rstrip(".") or None,
            f"expected a mapping of keys for {section}",
        )
    valid = [f.name for f in fields(cls)]
    seen: dict[str, int] = {}
    values: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if not isinstance(key, str):
            raise ConfigError(path, _line(key_node), None, f"keys in {section} must be names")
        dotted = prefix + key
        if key in seen:
            raise ConfigError(
                path, _line(key_node), dotted, f"given twice (first on line {seen[key]})"
            )
        seen[key] = _line(key_node)
        if key not in valid:
            near = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
            hint = f"; did you mean '{prefix}{near[0]}'?" if near else ""
            raise ConfigError(
                path,
                _line(key_node),
                dotted,
                f"unknown key{hint} (valid keys in {section}: {', '.join(valid)})",
            )
        ftype = field_type(cls, key)
        sub_base = getattr(base, key) if base is not None else None
        if is_dataclass(ftype):
            values[key] = _apply(ftype, value_node, sub_base, path, dotted + ".", loader)
        else:
            meta = next(f.metadata for f in fields(cls) if f.name == key)
            values[key] = _scalar(value_node, ftype, meta, path, dotted, loader)
    if base is None:
        missing = [name for name in valid if name not in values]
        if missing:
            raise ConfigError(
                path, _line(node), prefix.rstrip(".") or None, f"missing keys: {', '.join(missing)}"
            )
        return cls(**values)
    return replace(base, **values)


def _scalar(
    node: yaml.Node,
    ftype: Any,
    meta: Mapping[str, Any],
    path: str,
    key: str,
    loader: yaml.SafeLoader,
) -> float | int:
    if not isinstance(node, yaml.ScalarNode):
        raise ConfigError(path, _line(node), key, "expected a single number, not a list or mapping")
    value = loader.construct_object(node)
    low, high, unit = meta.get("min"), meta.get("max"), meta.get("unit", "")
    allowed = f"allowed {low:g}-{high:g}{(' ' + unit) if unit else ''}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(path, _line(node), key, f"{node.value!r} is not a number ({allowed})")
    if ftype is int or ftype == "int":
        if isinstance(value, float) and not value.is_integer():
            raise ConfigError(
                path, _line(node), key, f"{value!r} must be a whole number ({allowed})"
            )
        value = int(value)
    else:
        value = float(value)
    if value != value or (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(path, _line(node), key, f"{value:g} is out of range ({allowed})")
    number: float | int = value
    return number
