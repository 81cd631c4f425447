"""JSON lines written by people's own scripts: one object a line (or pretty-printed).

Two shapes, told by the first objects:

* flat -- ``{"timestamp": 1700000000, "gpu_util": 45, "memory_used_mb": 1000}``: one
  GPU, or several with an index key (``gpu``, ``index``, ``device_id`` ...) and one
  object per GPU per poll;
* nested -- ``{"time": "...", "gpus": [{"index": 0, "utilization": 45}, ...]}``: a list
  of objects under any key (``gpus``, ``devices`` ...), one per GPU; the object's other
  keys (its time) apply to every GPU in it. Without an index key the GPUs are numbered
  by their place in the list.

Keys are named as a CSV header's columns are (``_header_names``: case-insensitive,
separators folded, a unit in the name sets the scale); an object under a key is
flattened (``{"memory": {"used": 1000}}`` is ``memory_used``). Values are numbers, or
strings as nvidia-smi prints them (``"45 %"``, ``"1000 MiB"``); ``null`` is unknown.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._csvio import apply_mapping
from gputop_hints.sources.files._header_names import SIZE_SUFFIX, header_columns
from gputop_hints.sources.files._table import (
    Assembler,
    Column,
    Row,
    assemble,
    bad,
    note_bad_cells,
    parse_row,
    time_of,
)
from gputop_hints.sources.files._tabular import table_stream
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.gpustat import json_documents
from gputop_hints.sources.files.spec import GPU_COLUMNS, FormatSpec
from gputop_hints.streams import ReadCounters

FORMAT = "jsonl"
LABEL = "JSON lines"

POSITION = "(place in the list)"
"""The header name of the index a nested list without an index key gets."""
SAMPLE_DOCUMENTS = 50
"""Objects of the head the key names are gathered from."""
_METADATA_ROLES = frozenset({"time", "gpu", "name", "uuid"})


@dataclass
class JsonPlan:
    header: list[str]
    """Every key (flattened), the top level's first, then a GPU object's."""
    columns: list[Column]
    """The columns read; position i is :attr:`paths` [i]."""
    gpu_list: str | None
    """The key of the list of GPU objects (nested shape), or None (flat)."""
    numbered: bool
    """Nested without an index key: GPUs numbered by place (the last header name)."""
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """How the VRAM scale was chosen, and the --map entries applied."""
    paths: list[tuple[bool, Path_]] = field(default_factory=list)
    """Per column (position i): whether its value is in a GPU object (else at the top
    level), and its path there; an empty path is the GPU's place in the list."""


Path_ = tuple[str, ...]
"""Where a value sits in an object: the keys down to it."""


def _paths(doc: Mapping[str, Any], skip: str | None, out: dict[str, Path_], at: Path_ = ()) -> None:
    """Add ``doc``'s scalar values to ``out`` by flattened name (an object's keys joined
    to its own with ``_``) -> their path; lists are dropped, ``skip`` (the GPU list) too.
    A name seen before keeps its first path."""
    for key, value in doc.items():
        if key == skip or isinstance(value, list):
            continue
        path = (*at, key)
        if isinstance(value, dict):
            _paths(value, None, out, path)
        else:
            out.setdefault("_".join(path), path)


def _gpu_list_key(doc: Mapping[str, Any]) -> str | None:
    """The first key holding a non-empty list of objects: the GPUs."""
    for key, value in doc.items():
        if isinstance(value, list) and value and all(isinstance(g, dict) for g in value):
            return str(key)
    return None


_AS_CELL: dict[type, Callable[[Any], str]] = {int: repr, float: repr, str: str}
"""How a JSON value becomes a table cell, by its exact type: numbers and strings as
they read; anything else (null, true/false, an object) is unknown."""


def _cell(obj: Any, path: Path_) -> str:
    """The cell at ``path`` in ``obj`` ("" where it is absent or not a scalar)."""
    for key in path:
        obj = obj.get(key) if type(obj) is dict else None
    as_cell = _AS_CELL.get(type(obj))
    return "" if as_cell is None else as_cell(obj)


def _cells_of(doc: dict[str, Any], plan: JsonPlan) -> list[Sequence[str]] | None:
    """The cells of :attr:`JsonPlan.paths` for each GPU in ``doc``; None when ``doc``
    lacks the GPU list."""
    paths = plan.paths
    if plan.gpu_list is None:
        return [[_cell(doc, path) for _in_gpu, path in paths]]
    gpus = doc.get(plan.gpu_list)
    if type(gpus) is not list:
        return None
    return [
        [
            (str(place) if not path else _cell(gpu, path)) if in_gpu else _cell(doc, path)
            for in_gpu, path in paths
        ]
        for place, gpu in enumerate(gpus)
        if type(gpu) is dict
    ]


_CellsOf = Callable[[dict[str, Any]], "list[Sequence[str]] | None"]


def quick_cells(plan: JsonPlan) -> _CellsOf:
    """:func:`_cells_of` for ``plan``, its work on the paths done once: per object the
    top level's cells are read once for all its GPUs, a GPU's values under one key
    fetched together (``map(gpu.get, keys)``), then put in column order by one
    ``itemgetter``. The same cells as :func:`_cells_of` (a test holds them to it)."""
    paths = plan.paths
    gpu_list = plan.gpu_list
    if gpu_list is None or len(paths) < 2:
        return lambda doc: _cells_of(doc, plan)
    tops = [path for in_gpu, path in paths if not in_gpu]
    keys = [path[0] for in_gpu, path in paths if in_gpu and len(path) == 1]
    deep = [path for in_gpu, path in paths if in_gpu and len(path) > 1]
    # where each column's cell sits in: tops + keys' cells + deep ones' + [place]
    where: list[int] = []
    counts = {"top": 0, "key": 0, "deep": 0}
    for in_gpu, path in paths:
        if not in_gpu:
            where.append(counts["top"])
            counts["top"] += 1
        elif len(path) == 1:
            where.append(len(tops) + counts["key"])
            counts["key"] += 1
        elif path:
            where.append(len(tops) + len(keys) + counts["deep"])
            counts["deep"] += 1
        else:
            where.append(len(tops) + len(keys) + len(deep))
    # the deep ones fetched as: per first key of two-key paths, its inner keys; then
    # the longer paths one by one
    by_first: dict[str, list[str]] = {}
    for path in deep:
        if len(path) == 2:
            by_first.setdefault(path[0], []).append(path[1])
    pairs = list(by_first.items())
    deeper = [path for path in deep if len(path) > 2]
    fetched: list[Path_] = [(first, inner) for first, inners in pairs for inner in inners]
    fetched += deeper
    order = [fetched.index(path) for path in deep]
    base = len(tops) + len(keys)
    where = [base + order[at - base] if base <= at < base + len(deep) else at for at in where]
    in_order = operator.itemgetter(*where)
    as_cell = _AS_CELL.get

    def cells_of(doc: dict[str, Any]) -> list[Sequence[str]] | None:
        gpus = doc.get(gpu_list)
        if type(gpus) is not list:
            return None
        top = [_cell(doc, path) for path in tops]
        out: list[Sequence[str]] = []
        for place, gpu in enumerate(gpus):
            if type(gpu) is not dict:
                continue
            pool = top + [
                "" if (to_cell := as_cell(type(value))) is None else to_cell(value)
                for value in map(gpu.get, keys)
            ]
            for key, inner in pairs:  # deep paths of two keys, by the first
                sub = gpu.get(key)
                if type(sub) is dict:
                    pool += [
                        "" if (to_cell := as_cell(type(value))) is None else to_cell(value)
                        for value in map(sub.get, inner)
                    ]
                else:
                    pool += [""] * len(inner)
            if deeper:
                pool += [_cell(gpu, path) for path in deeper]
            pool.append(str(place))
            out.append(in_order(pool))
        return out

    return cells_of


def _shared_time(plan: JsonPlan) -> int:
    """The position of the time cell the GPUs of an object share (its one time column, at
    its top level, of the nested shape without a date column): read once per object;
    -1 where there is none such."""
    times = [c.position for c in plan.columns if c.role == "time"]
    if (
        plan.gpu_list is None
        or len(times) != 1
        or any(c.role == "date" for c in plan.columns)
        or plan.paths[times[0]][0]
    ):
        return -1
    return times[0]


def sniff(head: Head, mapping: Mapping[str, str] | None) -> JsonPlan | str:
    lines = head.nonblank
    if not lines:
        return "empty file"
    if not lines[0].lstrip().startswith("{"):
        return "not JSON lines (the first line is not an object)"
    docs = [doc for _n, doc in json_documents(enumerate(head.lines, 1), lambda *_: None)][
        :SAMPLE_DOCUMENTS
    ]
    if not docs:
        return "no JSON object in the first lines"
    gpu_list = _gpu_list_key(docs[0])
    top: dict[str, Path_] = {}
    inner: dict[str, Path_] = {}
    for doc in docs:
        _paths(doc, gpu_list, top)
        gpus = doc.get(gpu_list) if gpu_list is not None else None
        for gpu in gpus if isinstance(gpus, list) else ():
            if isinstance(gpu, dict):
                _paths(gpu, None, inner)
    # a GPU object's own value wins over the top level's of the same name
    everything = [(False, path) for name, path in top.items() if name not in inner]
    everything += [(True, path) for path in inner.values()]
    header = ["_".join(path) for _in_gpu, path in everything]
    plan = JsonPlan(header, [], gpu_list, False, paths=everything)
    sample = [cells for doc in docs for cells in _cells_of(doc, plan) or ()]
    columns, notes = header_columns(header, sample)
    try:
        columns, mapped = apply_mapping(columns, mapping, header, len(header), SIZE_SUFFIX)
    except KeyError as exc:
        return str(exc.args[0])
    if not any(c.role not in _METADATA_ROLES for c in columns):
        return (
            f"JSON lines, but no key names a GPU metric (keys: {', '.join(header)[:120]}); "
            "name them with --map sm=KEY,vram_used=KEY"
        )
    if gpu_list is not None and not any(
        c.role == "gpu" and everything[c.position][0] for c in columns
    ):
        # no index inside the GPU objects: number them by their place in the list
        columns = [c for c in columns if c.role != "gpu"]
        header.append(POSITION)
        everything.append((True, ()))
        columns.append(Column(len(header) - 1, "gpu", 1.0, POSITION))
        plan.numbered = True
    plan.paths = [everything[c.position] for c in columns]
    plan.columns = [Column(i, c.role, c.scale, c.label) for i, c in enumerate(columns)]
    plan.notes = notes + mapped
    for number, doc in enumerate(docs, start=1):
        for cells in _cells_of(doc, plan) or ():
            try:
                plan.rows.append(parse_row(cells, plan.columns, number))
            except v.CellError:  # noqa: PERF203 -- the head's damaged objects are skipped
                continue
    if not plan.rows:
        return "no JSON object reads (no value of a GPU metric key is a number)"
    return plan


def read(
    source: TextSource, plan: JsonPlan, counters: ReadCounters, assembler: Assembler
) -> Iterator[Snapshot]:
    def on_bad(line: int, reason: str) -> None:
        bad(counters, line, reason)

    columns = plan.columns
    cells_of = quick_cells(plan)
    shared_time = _shared_time(plan)

    def rows() -> Iterator[Row]:
        for line, doc in json_documents(source.lines(), on_bad):
            per_gpu = cells_of(doc)
            if per_gpu is None:
                bad(counters, line, f"no {plan.gpu_list!r} list of GPU objects")
                continue
            when = time_of(per_gpu[0][shared_time]) if shared_time >= 0 and per_gpu else None
            for cells in per_gpu:
                try:
                    row = parse_row(cells, columns, line, when)
                except v.CellError as exc:
                    bad(counters, line, str(exc))
                    continue
                note_bad_cells(counters, row)
                yield row

    yield from assemble(rows(), assembler)


def open_jsonl(
    path: Path, plan: JsonPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of a JSON-lines log: one snapshot per tick of records."""
    shape = f"a {plan.gpu_list!r} list per object" if plan.gpu_list else "one GPU an object"
    notes = [f"{LABEL} ({shape})", *plan.notes]
    if plan.numbered:
        notes.append("GPUs numbered by their place in the list (no index key)")

    def rows(
        source: TextSource, counters: ReadCounters, assembler: Assembler, _vram: int | None
    ) -> Iterator[Snapshot]:
        return read(source, plan, counters, assembler)

    return table_stream(
        path, FORMAT, LABEL, plan.columns, plan.rows, notes, interval_s, mapping, rows
    )


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_jsonl,
    metrics=GPU_COLUMNS,
    docs="JSON lines",
)
