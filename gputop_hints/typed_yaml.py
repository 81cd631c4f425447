"""YAML into frozen dataclasses, checked field by field, with errors at file:line key.

The thresholds file is parsed here without anything knowing what thresholds
are: the dataclass tree says which keys exist and each field's metadata gives
its range and unit. An unknown key (with the nearest valid one suggested), a
value of the wrong type, a value out of its range, or a low/high pair in the
wrong order is a :class:`ConfigError` that names the file, the line and the
dotted key -- never a half-valid result.

The same checks apply to data that is already parsed (:func:`build_dataclass`):
the packaged defaults ship as a generated Python module as well, so that a start
without a user file never imports PyYAML (~10 ms). PyYAML is imported only when a
file is actually parsed (:func:`parse_dataclass`).

It sits in the bottom layer beside ``model`` and ``units``: the hints' thresholds
(``hints.thresholds``, ``hints.config``) and the TUI's themes build on it, and it
imports nothing of gputop_hints.
"""

from __future__ import annotations

import math
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, is_dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # CSafeLoader exists only where PyYAML was built with libyaml
    from typing import TypeAlias

    import yaml  # at run time imported where a file is parsed: not on every start

    _Loader: TypeAlias = yaml.SafeLoader | yaml.CSafeLoader
    """What parses a file: the pure-Python loader, or libyaml's for packaged files."""


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


class ConfigErrors(ConfigError):
    """Every problem found in one configuration file, in file order (as a compiler
    lists them), so a user fixes them in one pass; behaves as the first one."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        first = errors[0]
        super().__init__(first.path, first.line, first.key, first.message)
        self.all = list(errors)

    def __str__(self) -> str:
        return "\n".join(Exception.__str__(e) for e in self.all)


# Patterns, not compiled objects: ``re`` compiles each on its first use (~0.2 ms
# apiece), which a start that reads no file and meets no bad key never pays.
_NAME = r"[A-Za-z_][A-Za-z0-9_-]{0,39}"
_NUMBER_TEXT = r"[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
EXCERPT_CHARS = 12
"""At most this much of a value from a file is quoted back: enough to find it, too
little to leak a secret from a file that was never a config (``--config /etc/shadow``)."""


def excerpt(value: object) -> str:
    """A short, printable quote of a value read from a file, for an error message.

    Never ``repr()`` of the whole value: an alias bomb expands to gigabytes, and a
    file named by mistake may hold secrets. Lists and mappings are named, not shown."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, int | float):
        text = str(value) if abs(value) < 1e15 else "a very large number"
        return text
    if not isinstance(value, str):
        return "a list" if isinstance(value, list) else f"a {type(value).__name__}"
    head = "".join(
        ch if ch.isprintable() and ch not in "'\\" else "?" for ch in value[:EXCERPT_CHARS]
    )
    return f"'{head}{'...' if len(value) > EXCERPT_CHARS else ''}'"


def key_name(key: str) -> str:
    """``key`` when it looks like a setting name, else a description that quotes none of it."""
    return key if re.fullmatch(_NAME, key) else "(a key that is not a setting name)"


def number_from_text(text: str) -> float | None:
    """The number a person meant by ``1e3``, ``1.0e3`` or ``1_000``, which YAML 1.1
    (``safe_load``) reads as strings; None when ``text`` is no such number."""
    text = text.strip()
    if not text or not re.fullmatch(_NUMBER_TEXT, text) or not any(c.isdigit() for c in text):
        return None
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


MAX_NUMBER_CHARS = 40
"""A number written with more characters than this is refused before it is converted."""


def parse_dataclass(
    cls: type,
    text: str,
    path: str,
    base: Any,
    ordered_pairs: Sequence[tuple[str, str, str]] = (),
    *,
    packaged: bool = False,
    foreign: Sequence[str] = (),
) -> Any:
    """Parse YAML ``text`` into an instance of ``cls``, applied over ``base``.

    ``base`` None means every key is required (the packaged defaults); an empty
    file then is an error, and otherwise overrides nothing. ``ordered_pairs``
    lists (section, low key, high key) whose values only make sense with low <= high.
    ``packaged``: a file shipped with gputop-hints, so parsed with libyaml's C
    parser where PyYAML has it; the user's files keep the pure-Python parser and
    its messages. ``foreign``: top-level sections another parser reads from the same
    file (the ``notify:`` section of ``gputop_hints.alerts.config``), skipped here.
    """
    import yaml  # here, not at the top: a start without a file to parse never loads it

    make_loader: Callable[[str], _Loader] = yaml.SafeLoader
    if packaged and getattr(yaml, "__with_libyaml__", False):
        make_loader = yaml.CSafeLoader
    try:
        loader = make_loader(text)
    except yaml.YAMLError as exc:  # a NUL or other control character
        raise ConfigError(path, None, None, f"not valid YAML: {_reader_problem(exc)}") from None
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(path, line, None, f"not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, None, None, f"not valid YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(
            path, None, None, "nested too deeply to be a configuration (thousands of levels)"
        ) from None
    finally:
        loader.dispose()
    if root is None or root.tag == "tag:yaml.org,2002:null":  # empty: overrides nothing
        if base is None:
            raise ConfigError(path, None, None, "empty defaults file")
        return base
    if foreign and isinstance(root, yaml.MappingNode):
        root.value = [
            (k, v)
            for k, v in root.value
            if not (isinstance(k, yaml.ScalarNode) and k.value in foreign)
        ]
        if not root.value:
            if base is None:
                raise ConfigError(path, None, None, "empty defaults file")
            return base
    errors: list[ConfigError] = []
    result = _apply(cls, root, base, path, "", loader, errors)
    if errors:
        raise errors[0] if len(errors) == 1 else ConfigErrors(errors)
    _check_ordered(result, path, ordered_pairs, lambda s, k: _key_line(root, s, k))
    return result


def build_dataclass(
    cls: type,
    data: Mapping[str, Any],
    path: str,
    ordered_pairs: Sequence[tuple[str, str, str]] = (),
) -> Any:
    """An instance of ``cls`` from already-parsed ``data``: nested dicts of numbers, as
    ``yaml.safe_load`` returns them (the packaged defaults, shipped as a Python module).

    Every key is required, and each is checked as :func:`parse_dataclass` checks a
    file's (unknown or missing keys, numbers, whole numbers, ranges, ``ordered_pairs``);
    a problem is a :class:`ConfigError` naming ``path`` and the dotted key, no line.
    A string is read as a plain YAML scalar would be (``1e3`` is a number).
    """
    result = _build(cls, data, path, "")
    _check_ordered(result, path, ordered_pairs, lambda _s, _k: None)
    return result


def _build(cls: Any, data: object, path: str, prefix: str) -> Any:
    section = prefix.rstrip(".") or "top level"
    if not isinstance(data, Mapping):
        raise ConfigError(
            path, None, prefix.rstrip(".") or None, f"expected a mapping of keys for {section}"
        )
    by_name = {f.name: f for f in fields(cls)}
    valid = list(by_name)
    values: dict[str, Any] = {}
    for key, value in data.items():
        if not isinstance(key, str):
            raise ConfigError(path, None, None, f"keys in {section} must be names")
        if key not in by_name:
            message = _unknown_key(key, valid, prefix, section)
            raise ConfigError(path, None, prefix + key_name(key), message)
        dotted = prefix + key  # a field's name
        ftype = field_type(cls, key)
        if is_dataclass(ftype):
            values[key] = _build(ftype, value, path, dotted + ".")
        else:
            number = number_from_text(value) if isinstance(value, str) else value
            values[key] = _number(number, value, ftype, by_name[key].metadata, path, None, dotted)
    missing = [name for name in valid if name not in values]
    if missing:
        raise ConfigError(
            path, None, prefix.rstrip(".") or None, f"missing keys: {', '.join(missing)}"
        )
    return cls(**values)


def _reader_problem(exc: yaml.YAMLError) -> str:
    character = getattr(exc, "character", None)
    if isinstance(character, int) and getattr(exc, "encoding", None) == "unicode":
        return f"it holds a control character YAML does not allow (#x{character:04x})"
    return "it cannot be read as YAML text"


def field_type(cls: type, name: str) -> Any:
    """The class of a dataclass field, resolving ``from __future__`` string annotations."""
    return _type_hints(cls)[name]


@cache
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _key_line(root: yaml.Node, section: str, key: str) -> int | None:
    """Line of ``section.key`` in the user's file, or of the section, if the file names it."""
    import yaml

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


def _check_ordered(
    result: Any,
    path: str,
    ordered_pairs: Sequence[tuple[str, str, str]],
    key_line: Callable[[str, str], int | None],
) -> None:
    """Reject combinations that would silently switch a rule off (e.g. min above max);
    ``key_line(section, key)``: where the file names that key, if it does."""
    for section, low_key, high_key in ordered_pairs:
        values = getattr(result, section)
        low, high = getattr(values, low_key), getattr(values, high_key)
        if low <= high:
            continue
        line = key_line(section, low_key) or key_line(section, high_key)
        raise ConfigError(
            path,
            line,
            f"{section}.{low_key}",
            f"{low:g} must not exceed {section}.{high_key} ({high:g}), or the rule can never fire",
        )


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _unknown_key(key: str, valid: Sequence[str], prefix: str, section: str) -> str:
    """The message for a key that ``section`` does not have, with the nearest one suggested."""
    import difflib  # only for a bad key's suggestion: not on every start-up

    near = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    hint = f"; did you mean '{prefix}{near[0]}'?" if near else ""
    return f"unknown key{hint} (valid keys in {section}: {', '.join(valid)})"


def _apply(
    cls: Any,
    node: yaml.Node,
    base: Any,
    path: str,
    prefix: str,
    loader: _Loader,
    errors: list[ConfigError],
) -> Any:
    import yaml

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
        try:
            _apply_key(cls, key_node, value_node, base, path, prefix, loader, errors, seen, values)
        except ConfigError as exc:  # noqa: PERF203 -- noted; the other keys are still checked
            errors.append(exc)
    if errors:
        return base  # not used: parse_dataclass raises them all
    if base is None:
        missing = [name for name in valid if name not in values]
        if missing:
            raise ConfigError(
                path, _line(node), prefix.rstrip(".") or None, f"missing keys: {', '.join(missing)}"
            )
        return cls(**values)
    return replace(base, **values)


def _apply_key(
    cls: Any,
    key_node: yaml.Node,
    value_node: yaml.Node,
    base: Any,
    path: str,
    prefix: str,
    loader: _Loader,
    errors: list[ConfigError],
    seen: dict[str, int],
    values: dict[str, Any],
) -> None:
    """One ``key: value`` of a section into ``values`` (raises ConfigError for it)."""
    import yaml

    section = prefix.rstrip(".") or "top level"
    valid = [f.name for f in fields(cls)]
    key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
    if not isinstance(key, str):
        raise ConfigError(path, _line(key_node), None, f"keys in {section} must be names")
    dotted = prefix + key_name(key)
    if key in seen:
        raise ConfigError(
            path, _line(key_node), dotted, f"given twice (first on line {seen[key]})"
        )
    seen[key] = _line(key_node)
    if key not in valid:
        raise ConfigError(path, _line(key_node), dotted, _unknown_key(key, valid, prefix, section))
    ftype = field_type(cls, key)
    sub_base = getattr(base, key) if base is not None else None
    if is_dataclass(ftype):
        values[key] = _apply(ftype, value_node, sub_base, path, dotted + ".", loader, errors)
    else:
        meta = next(f.metadata for f in fields(cls) if f.name == key)
        values[key] = _scalar(value_node, ftype, meta, path, dotted, loader)


def _allowed(meta: Mapping[str, Any]) -> str:
    """A field's range for a message: ``allowed 0-100 %``."""
    low, high, unit = meta.get("min"), meta.get("max"), meta.get("unit", "")
    return f"allowed {low:g}-{high:g}{(' ' + unit) if unit else ''}"


def _scalar(
    node: yaml.Node,
    ftype: Any,
    meta: Mapping[str, Any],
    path: str,
    key: str,
    loader: _Loader,
) -> float | int:
    import yaml

    if not isinstance(node, yaml.ScalarNode):
        raise ConfigError(path, _line(node), key, "expected a single number, not a list or mapping")
    if len(node.value) > MAX_NUMBER_CHARS:
        # int() of thousands of digits is refused (ValueError), and a float cannot
        # hold one: no threshold is written with more than a few digits.
        raise ConfigError(
            path,
            _line(node),
            key,
            f"a number of {len(node.value)} characters is out of range ({_allowed(meta)})",
        )
    try:
        value = loader.construct_object(node)
    except yaml.YAMLError:  # an unknown tag such as !foo or !!python/name: nothing is run
        raise ConfigError(
            path,
            _line(node),
            key,
            f"a YAML tag is not a number ({_allowed(meta)}); write the number",
        ) from None
    except (ValueError, OverflowError):
        raise ConfigError(
            path, _line(node), key, f"{excerpt(node.value)} is out of range ({_allowed(meta)})"
        ) from None
    if isinstance(value, str):
        # Only plain scalars: a quoted "90" is text on purpose.
        value = number_from_text(value) if node.style is None else None
    return _number(value, node.value, ftype, meta, path, _line(node), key)


def _number(
    value: object,
    written: object,
    ftype: Any,
    meta: Mapping[str, Any],
    path: str,
    line: int | None,
    key: str,
) -> float | int:
    """``value`` checked against a field's type and range; ``written``: what the file
    (or the data) said, quoted in a message."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(path, line, key, f"{excerpt(written)} is not a number ({_allowed(meta)})")
    if ftype is int or ftype == "int":
        if isinstance(value, float) and not value.is_integer():
            raise ConfigError(
                path, line, key, f"{value:g} must be a whole number ({_allowed(meta)})"
            )
        value = int(value)
    else:
        try:
            value = float(value)
        except OverflowError:  # an integer past what a float holds
            raise ConfigError(
                path, line, key, f"{excerpt(written)} is out of range ({_allowed(meta)})"
            ) from None
    low, high = meta.get("min"), meta.get("max")
    if value != value or (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(path, line, key, f"{value:g} is out of range ({_allowed(meta)})")
    number: float | int = value
    return number
