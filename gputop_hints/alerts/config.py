"""The ``notify:`` section of the config file (the thresholds file, docs/config.md).

::

    notify:
      channels: [bell, osc, cmd]      # or "bell,osc"; none given: no alerts unless --notify
      command: "curl -sS -H 'Content-Type: application/json' -d @- https://ntfy.sh/my-topic"
      min_severity: warning           # or critical
      clear_after_s: 60
      min_interval_s: 300
      max_per_minute: 6
      command_timeout_s: 10
      queue_size: 16

Checked as the thresholds are: an unknown key (with the nearest one suggested), a
wrong type or a value out of range is a :class:`~gputop_hints.typed_yaml.ConfigError`
naming the file, the line and the key; the program exits 2. The thresholds'
parser leaves this section to this module (``foreign`` in ``typed_yaml``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputop_hints.alerts.settings import (
    BadNotifySetting,
    NotifySettings,
    parse_channels,
    split_command,
)
from gputop_hints.hints.config import MAX_CONFIG_BYTES, read_bounded
from gputop_hints.hints.findings import Severity
from gputop_hints.typed_yaml import ConfigError, excerpt, key_name

if TYPE_CHECKING:
    import yaml

SECTION = "notify"

_NUMBERS: dict[str, tuple[type, float, float]] = {
    "clear_after_s": (float, 0.0, 86400.0),
    "min_interval_s": (float, 0.0, 86400.0),
    "max_per_minute": (int, 1, 600),
    "command_timeout_s": (float, 0.1, 600.0),
    "queue_size": (int, 1, 1000),
}
KEYS = ("channels", "command", "min_severity", *_NUMBERS)


def load_notify(path: Path | None) -> NotifySettings:
    """The ``notify:`` section of the config file at ``path`` (None: the defaults)."""
    if path is None:
        return NotifySettings()
    return parse_notify(read_bounded(path, MAX_CONFIG_BYTES), str(path))


def parse_notify(text: str, path: str) -> NotifySettings:
    """The ``notify:`` section of YAML ``text``; defaults where it says nothing."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        raise ConfigError(
            path, mark.line + 1 if mark else None, None, f"not valid YAML: {exc.problem}"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, None, None, f"not valid YAML: {exc}") from None
    settings = NotifySettings()
    if not isinstance(root, yaml.MappingNode):
        return settings
    section = next(
        (v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == SECTION), None
    )
    if section is None or section.tag == "tag:yaml.org,2002:null":
        return settings
    if not isinstance(section, yaml.MappingNode):
        raise ConfigError(path, _line(section), SECTION, "expected a mapping of keys for notify")
    values: dict[str, Any] = {}
    for key_node, value_node in section.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if not isinstance(key, str):
            raise ConfigError(path, _line(key_node), None, "keys in notify must be names")
        dotted = f"{SECTION}.{key_name(key)}"
        if key not in KEYS:
            import difflib

            near = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.5)
            hint = f"; did you mean '{SECTION}.{near[0]}'?" if near else ""
            raise ConfigError(
                path,
                _line(key_node),
                dotted,
                f"unknown key{hint} (valid keys in notify: {', '.join(KEYS)})",
            )
        if key in values:
            raise ConfigError(path, _line(key_node), dotted, "given twice")
        values[key] = _value(key, value_node, path, dotted)
    return replace(settings, **values)


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _value(key: str, node: yaml.Node, path: str, dotted: str) -> Any:
    import yaml

    line = _line(node)
    if key == "channels":
        if isinstance(node, yaml.SequenceNode):
            items = [n.value for n in node.value if isinstance(n, yaml.ScalarNode)]
            if len(items) != len(node.value):
                raise ConfigError(path, line, dotted, "expected channel names (bell, osc, cmd)")
            text = ",".join(items)
        elif isinstance(node, yaml.ScalarNode):
            text = str(node.value)
        else:
            raise ConfigError(path, line, dotted, "expected a list such as [bell, osc]")
        if not text.strip():
            return frozenset()
        try:
            return parse_channels(text)
        except BadNotifySetting as exc:
            raise ConfigError(path, line, dotted, str(exc)) from None
    if not isinstance(node, yaml.ScalarNode):
        raise ConfigError(path, line, dotted, "expected a single value, not a list or mapping")
    written = str(node.value)
    if key == "command":
        try:
            return split_command(written)
        except BadNotifySetting as exc:
            raise ConfigError(path, line, dotted, str(exc)) from None
    if key == "min_severity":
        names = {s.label: s for s in Severity if s >= Severity.WARNING}
        if written.lower() not in names:
            raise ConfigError(path, line, dotted, f"{excerpt(written)} is not warning or critical")
        return names[written.lower()]
    kind, low, high = _NUMBERS[key]
    allowed = f"allowed {low:g}-{high:g}"
    try:
        number = float(written) if node.style is None else None
    except ValueError:
        number = None
    if number is None or number != number:
        raise ConfigError(path, line, dotted, f"{excerpt(written)} is not a number ({allowed})")
    if kind is int and not number.is_integer():
        raise ConfigError(path, line, dotted, f"{number:g} must be a whole number ({allowed})")
    if not low <= number <= high:
        raise ConfigError(path, line, dotted, f"{number:g} is out of range ({allowed})")
    return int(number) if kind is int else number
