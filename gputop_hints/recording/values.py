"""Reading one recording line safely: bounded JSON, numbers that make sense, checked shapes.

A recording may have been edited by hand, cut short, re-serialised or crafted.
Whatever a line holds, the reader must neither crash nor hand the report or the
replay a value they cannot use. So every line goes through here:

* :func:`loads_line` parses it. ``NaN``, ``Infinity`` and numbers beyond
  :data:`NUMBER_LIMIT` (``1e400``, a 30-digit integer) become ``None``
  (unknown), and nesting too deep for the parser is a :class:`ValueError`, like
  any other malformed JSON.
* :func:`clean_gpu_columns` and :func:`clean_tick` check a tick against the
  column order of :data:`~gputop_hints.recording.format.TICK_COLUMNS`: a value
  of the wrong type becomes ``None`` (or the entry is dropped when it has no
  index), and the problem is reported so the line is counted.
* :func:`record_problem` and :func:`header_problem` check static records and the
  header, naming the key at fault.

Values are checked by class, never walked recursively, so a crafted nesting
depth costs nothing here. Messages never quote the offending value.
"""

from __future__ import annotations

import json
import math
import re
from itertools import chain
from typing import Any

from gputop_hints.recording import fastjson

NUMBER_LIMIT = 1e18
"""A larger magnitude is no measurement (an exabyte; a timestamp 30 billion years out)."""

_SUSPECT_PATTERN = r"NaN|Infinity|[eE]\+?[0-9]{2}|[,\[: \t\r-][0-9]{19}"
_SUSPECT = re.compile(_SUSPECT_PATTERN.encode())
"""Bytes that may hold a number :func:`json.loads` would read as non-finite or absurd:
the constants, an exponent of two digits or more, or an integer of 19 digits or more
(past what a 64-bit integer holds), which in JSON starts after ``,``, ``[``, ``:``,
whitespace (a space, a tab or a carriage return: JSON's own, less the newline that
ends the line) or a minus sign. The digits after a decimal point do not count: the recorder
writes durations such as ``0.0018456180000612221`` (19 digits, the shortest
round-trip of a float) on most tick lines, and every such line used to take the
slow, careful parse.

Lines without them (nearly all) take the plain, fast parse."""

_CLASSES = bytearray(b"x" * 256)
for _c in b"0123456789":
    _CLASSES[_c] = ord("0")
for _c in b",[: \t\r-":
    _CLASSES[_c] = ord("S")
_CLASSES[ord("e")] = _CLASSES[ord("E")] = ord("E")
_CLASSES[ord("+")] = ord("+")
_CLASS_TABLE = bytes(_CLASSES)
"""Each byte mapped to its class in :data:`_SUSPECT_PATTERN` -- ``0`` a digit, ``S`` a
byte that may start a number, ``E`` an exponent letter, ``+`` itself, ``x`` anything
else -- so :func:`_suspect_bytes` answers like the pattern with a few substring
searches (in C) instead of trying the pattern at every byte (slower than the parse)."""
_LONG_INTEGER = b"S" + b"0" * 19


def _suspect_bytes(line: bytes) -> bool:
    """Whether ``_SUSPECT`` would match ``line`` (same answer, several times faster)."""
    if b"NaN" in line or b"Infinity" in line:
        return True
    classes = line.translate(_CLASS_TABLE)
    if _LONG_INTEGER in classes:
        return True
    # "E00" / "E+00" looked for from each exponent letter: searching for them in the
    # classes, mostly runs of "0", costs several times the translation. The letters are
    # few (words in names and reasons); a line full of them takes the plain search.
    count = classes.count(b"E")
    if count > 16:
        return b"E00" in classes or b"E+00" in classes
    find = classes.find
    at = find(b"E")
    while at >= 0:
        if classes.startswith(b"00", at + 1) or classes.startswith(b"+00", at + 1):
            return True
        at = find(b"E", at + 1)
    return False


_NONE = type(None)
_NUMBER: frozenset[type] = frozenset({int, float})
_NUMBER_OR_NONE: frozenset[type] = frozenset({int, float, _NONE})
_TEXT_OR_NONE: frozenset[type] = frozenset({str, _NONE})
_INTS: frozenset[type] = frozenset({int})
_TEXTS: frozenset[type] = frozenset({str})
_LISTS: frozenset[type] = frozenset({list})


class _Replaced:
    """Counts the numbers a careful parse turned into None."""

    def __init__(self) -> None:
        self.count = 0

    def constant(self, _name: str) -> None:
        self.count += 1

    def number(self, text: str) -> float | None:
        value = float(text)
        if math.isfinite(value) and -NUMBER_LIMIT < value < NUMBER_LIMIT:
            return value
        self.count += 1
        return None

    def integer(self, text: str) -> int | None:
        # Checked by length first: int() of thousands of digits is slow, then refused.
        if len(text.lstrip("-")) <= 18:
            return int(text)
        self.count += 1
        return None


def loads_line(line: bytes | str) -> tuple[Any, int]:
    """(the JSON value of a line, how many numbers in it were read as unknown).

    Raises ValueError for a line that is not JSON, nested too deeply included."""
    try:
        if not _suspect_bytes(line if isinstance(line, bytes) else line.encode()):
            return fastjson.loads(line), 0
        replaced = _Replaced()
        value = json.loads(
            line,
            parse_constant=replaced.constant,
            parse_float=replaced.number,
            parse_int=replaced.integer,
        )
        return value, replaced.count
    except RecursionError:
        raise ValueError("nested too deeply") from None


def suspect(line: bytes) -> bool:
    """Whether a line may hold a number that :func:`loads_line` must read carefully."""
    return _suspect_bytes(line)


def suspect_text(text: str) -> bool:
    """:func:`suspect` for text already decoded (a part of a line)."""
    return _suspect_bytes(text.encode("utf-8", "surrogatepass"))


def replaced_reason(count: int) -> str:
    """The bad-line note for a line whose numbers were partly unreadable (the line is kept)."""
    return f"{count} number(s) not finite or out of range, read as unknown"


def _types(values: list[Any]) -> set[type]:
    return set(map(type, values))


def _number(value: Any) -> bool:
    return value.__class__ in _NUMBER_OR_NONE


def _clean_gpu(g: Any) -> tuple[list[Any] | None, str | None]:
    """One GPU column, checked: (the column or a cleaned copy, or None to drop it; problem)."""
    if g.__class__ is not list or len(g) < 11 or g[0].__class__ is not int:
        return None, "a GPU entry without its index"
    throttle, samples = g[9], g[10]
    if (
        _types(g[1:9]) <= _NUMBER_OR_NONE
        and (throttle is None or (throttle.__class__ is list and _types(throttle) <= _TEXTS))
        and samples.__class__ is list
        and len(samples) % 2 == 0
        and _types(samples) <= _NUMBER_OR_NONE
    ):
        return g, None
    fixed = [g[0], *(v if _number(v) else None for v in g[1:9])]
    if throttle is not None and not (throttle.__class__ is list and _types(throttle) <= _TEXTS):
        throttle = None
    if not (
        samples.__class__ is list and len(samples) % 2 == 0 and _types(samples) <= _NUMBER_OR_NONE
    ):
        samples = []
    return [*fixed, throttle, samples, *g[11:]], f"GPU {g[0]}: a value that is not a number"


def _gpus_clean(gpus: list[Any]) -> bool:
    """Whether every GPU column passes :func:`_clean_gpu` unchanged -- the same checks,
    made on all the columns at once (the usual case)."""
    if not all(g.__class__ is list and len(g) >= 11 and g[0].__class__ is int for g in gpus):
        return False
    throttles = [g[9] for g in gpus if g[9] is not None]
    samples = [g[10] for g in gpus]
    return (
        set(map(type, chain.from_iterable([g[1:9] for g in gpus]))) <= _NUMBER_OR_NONE
        and set(map(type, throttles)) <= _LISTS
        and set(map(type, chain.from_iterable(throttles))) <= _TEXTS
        and set(map(type, samples)) <= _LISTS
        and not any(len(x) % 2 for x in samples)
        and set(map(type, chain.from_iterable(samples))) <= _NUMBER_OR_NONE
    )


def clean_gpu_columns(gpus: list[Any]) -> tuple[list[Any], str | None]:
    """A tick's GPU columns with every value of the wrong type made unknown.

    Returns the list itself when it is clean (the usual case), else a cleaned
    copy, and the first problem found (None when clean)."""
    if _gpus_clean(gpus):
        return gpus, None
    problem: str | None = None
    cleaned: list[Any] | None = None
    for i, g in enumerate(gpus):
        good, why = _clean_gpu(g)
        if why is None:
            if cleaned is not None:
                cleaned.append(good)
            continue
        if cleaned is None:
            cleaned = list(gpus[:i])
        problem = problem or why
        if good is not None:
            cleaned.append(good)
    return (gpus if cleaned is None else cleaned), problem


def _clean_host(h: list[Any]) -> tuple[list[Any], str | None]:
    load, cores = h[2], h[3]
    load_ok = load is None or (
        load.__class__ is list and len(load) >= 3 and _types(load) <= _NUMBER_OR_NONE
    )
    cores_ok = cores.__class__ is list and _types(cores) <= _NUMBER_OR_NONE
    if _number(h[0]) and _number(h[1]) and load_ok and cores_ok:
        return h, None
    return [
        h[0] if _number(h[0]) else None,
        h[1] if _number(h[1]) else None,
        load if load_ok else None,
        cores if cores_ok else [],
        *h[4:],
    ], "host: a value that is not a number"


def _workers_ok(flat: Any) -> bool:
    if flat.__class__ is not list or len(flat) % 4:
        return False
    return (
        _types(flat[0::4]) <= _INTS
        and _types(flat[1::4]) <= _NUMBER_OR_NONE
        and _types(flat[2::4]) <= _NUMBER_OR_NONE
        and _types(flat[3::4]) <= _TEXT_OR_NONE
    )


def _clean_process(p: Any) -> tuple[list[Any] | None, str | None]:
    if p.__class__ is not list or len(p) < 9 or not _types(p[0:2]) <= _INTS:
        return None, "a process entry without its pid and GPU"
    if _types(p[2:7]) <= _NUMBER_OR_NONE and p[7].__class__ in _TEXT_OR_NONE and _workers_ok(p[8]):
        return p, None
    return [
        p[0],
        p[1],
        *(v if _number(v) else None for v in p[2:7]),
        p[7] if p[7].__class__ in _TEXT_OR_NONE else None,
        p[8] if _workers_ok(p[8]) else [],
        *p[9:],
    ], f"process {p[0]}: a value of the wrong type"


def _processes_clean(procs: Any) -> bool:
    """Whether every entry of a tick's process column passes :func:`_clean_process`
    unchanged -- the same checks, made on all the entries at once (the usual case)."""
    if procs.__class__ is not list:
        return False
    if not all(p.__class__ is list and len(p) >= 9 for p in procs):
        return False
    workers = [p[8] for p in procs]
    if not (
        set(map(type, chain.from_iterable([p[0:2] for p in procs]))) <= _INTS
        and set(map(type, chain.from_iterable([p[2:7] for p in procs]))) <= _NUMBER_OR_NONE
        and set(map(type, [p[7] for p in procs])) <= _TEXT_OR_NONE
        and set(map(type, workers)) <= _LISTS
        and not any(len(w) % 4 for w in workers)
    ):
        return False
    # Each worker list holds whole groups of four, so joined they keep the column order.
    return _workers_ok(list(chain.from_iterable(workers)))


def clean_tick(tick: list[Any]) -> tuple[list[Any] | None, str | None]:
    """A whole tick (outer shape already checked by ``valid_tick``), cleaned like
    :func:`clean_gpu_columns`: (the tick or a cleaned copy, or None when it has no
    usable timestamp; the first problem found)."""
    timestamp = tick[0]
    if timestamp.__class__ not in _NUMBER:
        return None, "a tick without a timestamp"
    gpus, problem = clean_gpu_columns(tick[2])
    host, why = _clean_host(tick[3])
    problem = problem or why
    processes: list[Any] = []
    if _processes_clean(tick[4]):
        processes.extend(tick[4])
    else:
        for p in tick[4]:
            good, why = _clean_process(p)
            problem = problem or why
            if good is not None:
                processes.append(good)
    duration = tick[1] if _number(tick[1]) else None
    if problem is None and duration is tick[1]:
        return tick, None
    return [timestamp, duration, gpus, host, processes, *tick[5:]], problem or (
        "sample duration is not a number"
    )


# --- static records and the header -----------------------------------------------------

_META_KINDS: dict[str, frozenset[type]] = {
    "interval_s": _NUMBER_OR_NONE,
    "source": _TEXT_OR_NONE,
    "source_detail": _TEXT_OR_NONE,
    "driver_version": _TEXT_OR_NONE,
    "cuda_driver_version": _TEXT_OR_NONE,
    "gpu_unavailable_reason": _TEXT_OR_NONE,
    "hostname": _TEXT_OR_NONE,
    "memory_total_bytes": _NUMBER_OR_NONE,
    "core_count": _NUMBER_OR_NONE,
}
_GPU_KINDS: dict[str, frozenset[type]] = {
    "name": _TEXT_OR_NONE,
    "uuid": _TEXT_OR_NONE,
    "vram_total_bytes": _NUMBER_OR_NONE,
    "pcie_generation": _NUMBER_OR_NONE,
    "pcie_width": _NUMBER_OR_NONE,
    "power_limit_watts": _NUMBER_OR_NONE,
    "max_sm_clock_mhz": _NUMBER_OR_NONE,
    "default_power_limit_watts": _NUMBER_OR_NONE,
    "profiling_unavailable": _TEXT_OR_NONE,
    "mig_mode": frozenset({bool, _NONE}),
    "node": _TEXT_OR_NONE,
}
_PROCESS_KINDS: dict[str, frozenset[type]] = {
    "user": _TEXT_OR_NONE,
    "name": _TEXT_OR_NONE,
    "command": _TEXT_OR_NONE,
    "create_time": _NUMBER_OR_NONE,
    "container": _TEXT_OR_NONE,
    "launcher_pid": frozenset({int, _NONE}),
}
_LAUNCHER_KINDS: dict[str, frozenset[type]] = {
    "kind": _TEXT_OR_NONE,
    "user": _TEXT_OR_NONE,
    "name": _TEXT_OR_NONE,
    "command": _TEXT_OR_NONE,
}


def _kinds_problem(record: dict[str, Any], kinds: dict[str, frozenset[type]]) -> str | None:
    for key, allowed in kinds.items():
        if record.get(key).__class__ not in allowed:
            return f"key {key!r} has the wrong type"
    return None


def _ints_problem(record: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        if record.get(key).__class__ is not int:
            return f"key {key!r} is not a whole number"
    return None


def _list_problem(value: Any, key: str, allowed: frozenset[type]) -> str | None:
    if value is not None and not (value.__class__ is list and _types(value) <= allowed):
        return f"key {key!r} is not a list of the right values"
    return None


def _meta_problem(record: dict[str, Any]) -> str | None:
    interval = record.get("interval_s")
    positive = isinstance(interval, int | float) and not isinstance(interval, bool) and interval > 0
    if interval is not None and not positive:
        return "key 'interval_s' is not a positive number of seconds"
    return (
        _kinds_problem(record, _META_KINDS)
        or _list_problem(record.get("labels"), "labels", _TEXTS)
        or _list_problem(record.get("allowed_cores"), "allowed_cores", _INTS)
    )


def _gpu_problem(record: Any) -> str | None:
    if record.__class__ is not dict:
        return "a GPU that is not an object"
    return (
        _ints_problem(record, "index")
        or _kinds_problem(record, _GPU_KINDS)
        or _list_problem(record.get("mig_instances"), "mig_instances", frozenset({dict}))
    )


def _mig_key_problem(value: Any) -> str | None:
    if value is None or (value.__class__ is list and len(value) == 2 and _types(value) <= _INTS):
        return None
    return "key 'mig_instance' is not a pair of whole numbers"


def record_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a static record (naming the key), or None when it can be applied."""
    kind = record.get("type")
    if kind == "meta":
        return _meta_problem(record)
    if kind == "gpu":
        return _gpu_problem(record)
    if kind == "process":
        return (
            _ints_problem(record, "pid", "gpu_index")
            or _kinds_problem(record, _PROCESS_KINDS)
            or _list_problem(record.get("frameworks"), "frameworks", frozenset({str}))
            or _mig_key_problem(record.get("mig_instance"))
        )
    if kind == "launcher":
        return _ints_problem(record, "pid") or _kinds_problem(record, _LAUNCHER_KINDS)
    if kind == "worker":
        return _ints_problem(record, "pid") or _kinds_problem(
            record, {"name": _TEXT_OR_NONE, "command": _TEXT_OR_NONE}
        )
    if kind == "stack":
        return _ints_problem(record, "pid") or _stack_time_problem(record.get("taken_at"))
    return None


def _stack_time_problem(value: Any) -> str | None:
    """A ``stack`` line's ``taken_at``: a finite number (seconds, the ticks' clock). Its
    reading's own keys are checked where it is read as one (``StackReading.from_dict``:
    this layer does not know the stacks package)."""
    if value.__class__ not in (int, float) or not math.isfinite(value):
        return "key 'taken_at' is not a finite number"
    return None


def header_problem(header: dict[str, Any]) -> str | None:
    """What is wrong with a header line (naming the key), or None when it is usable."""
    problem = _meta_problem(header)
    if problem is not None:
        return problem
    gpus = header.get("gpus", [])
    if gpus.__class__ is not list:
        return "key 'gpus' is not a list"
    for gpu in gpus:
        why = _gpu_problem(gpu)
        if why is not None:
            return f"key 'gpus': {why}"
    return None
