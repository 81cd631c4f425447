"""The process table's columns: what each shows, how it sorts, which go first when narrow.

Columns are data (:data:`COLUMNS`): a column is a :class:`Column` whose cell
function sees the process and the finding the hint engine attached to it.
Columns with a higher ``drop_order`` disappear first when the terminal is
narrow; the command column takes whatever width is left. CONTAINER is shown only
while some process runs in a container, pod or batch job, and goes first. The HINT
column is never dropped -- it is the point of the product -- so on a narrow terminal
USER and RSS go first, then the command shrinks, and only then CPU and
WORKERS.

The HINT cell reads ``<mark> [GPU: ]<label>``: the mark gives the severity by
shape (``·`` info, ``!`` warning, ``‼`` critical) as well as by the theme's
``severity-*`` colour, and ``GPU:`` says the finding is about the whole GPU the
process runs on rather than the process itself.

Nothing here imports Textual: the columns are plain functions of the model and
the findings, testable without an app.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rich.cells import cell_len

from gputop_hints.hints.findings import Finding
from gputop_hints.model import GpuProcess
from gputop_hints.text import visible
from gputop_hints.tui.hint_text import fit_text, hint_text
from gputop_hints.units import UNKNOWN, human_bytes, percent

SortValue = float | int | str
ProcessKey = tuple[int, int]
"""(pid, GPU index): how a process row is known across ticks."""
Hints = Mapping[ProcessKey, Finding | None]
"""The finding shown in each process's HINT cell (None: nothing to say)."""

Cell = Callable[[GpuProcess, Finding | None], str]
SortKey = Callable[[GpuProcess, Finding | None], SortValue | None]


@dataclass(frozen=True, slots=True)
class Column:
    """One column: how to show a process in it, and how to sort by it."""

    key: str
    title: str
    width: int
    cell: Cell
    style: str = "text"
    """Name of the :class:`Palette` field the cell is drawn with."""
    align_right: bool = True
    drop_order: int = 0
    """0 = never dropped; higher numbers are dropped first on narrow screens."""
    sort_value: SortKey | None = None
    descending: bool = True
    severity_styled: bool = False
    """Drawn in the colour of the row's finding's severity instead of ``style``."""
    optional: bool = False
    """Shown only while some process has something to show in it (CONTAINER)."""


def _workers_cell(proc: GpuProcess, _finding: Finding | None) -> str:
    count = len(proc.workers)
    if not count and proc.cpu_percent is None:
        # Nothing known of this process on the host (a GPU-only log): not "0 0%".
        return f"{'n/a':>8}"
    return f"{count:>2} {percent(proc.workers_cpu_percent):>5}"


def _hint_sort(_proc: GpuProcess, finding: Finding | None) -> SortValue | None:
    if finding is None:
        return None
    # Own findings before GPU-level ones of the same severity.
    return int(finding.severity) * 2 + (1 if finding.subject.pid is not None else 0)


def _container_cell(proc: GpuProcess, _finding: Finding | None) -> str:
    return visible(proc.container or "")


CONTAINER_WIDTH = 19
"""``docker <12 hex>`` whole; a longer pod name is cut with an ellipsis."""

HINT_WIDTH = 28
"""Mark, space and a label of up to ~24 cells, with room for the ``GPU:`` prefix."""

COLUMNS: tuple[Column, ...] = (
    Column("pid", "PID", 7, lambda p, _: str(p.pid), "text", True, 0, lambda p, _: p.pid, False),
    Column("user", "USER", 9, lambda p, _: visible(p.user or UNKNOWN)[:9], "muted", False, 3),
    Column(
        "container",
        "CONTAINER",
        CONTAINER_WIDTH,
        _container_cell,
        "muted",
        False,
        5,
        lambda p, _: p.container,
        False,
        optional=True,
    ),
    Column(
        "gpu",
        "GPU",
        4,
        lambda p, _: str(p.gpu_index),
        "text",
        True,
        0,
        lambda p, _: p.gpu_index,
        False,
    ),
    Column(
        "vram",
        "VRAM",
        8,
        lambda p, _: human_bytes(p.vram_bytes),
        "vram",
        True,
        0,
        lambda p, _: p.vram_bytes,
    ),
    Column(
        "sm",
        "SM%",
        5,
        lambda p, _: percent(p.sm_percent),
        "sm",
        True,
        0,
        lambda p, _: p.sm_percent,
    ),
    Column(
        "cpu",
        "CPU%",
        6,
        lambda p, _: percent(p.cpu_percent),
        "cpu",
        True,
        1,
        lambda p, _: p.cpu_percent,
    ),
    Column(
        "workers",
        "WORKERS",
        9,
        _workers_cell,
        "workers",
        True,
        2,
        lambda p, _: p.workers_cpu_percent,
    ),
    Column(
        "rss",
        "RSS",
        8,
        lambda p, _: human_bytes(p.rss_bytes),
        "muted",
        True,
        4,
        lambda p, _: p.rss_bytes,
    ),
    Column(
        "hint",
        "HINT",
        HINT_WIDTH,
        lambda _, f: hint_text(f),
        "text",
        False,
        0,
        _hint_sort,
        severity_styled=True,
    ),
)
COLUMN_INDEX: Mapping[str, int] = {c.key: i for i, c in enumerate(COLUMNS)}
"""Each column's position in :data:`COLUMNS` (and in a row's cells) by its ``key``."""

MIG_GPU_COLUMN = dataclasses.replace(COLUMNS[COLUMN_INDEX["gpu"]], title="GPU/MIG", width=10)
"""The GPU column while any process runs on a MIG instance: ``0/1g.10gb``."""


def mig_gpu_cell(proc: GpuProcess, label: str | None) -> str:
    """The GPU cell of a process on a MIG instance: its GPU and the instance's profile
    (its GPU instance id when the profile is unknown)."""
    if proc.mig_instance is None:
        return str(proc.gpu_index)
    return f"{proc.gpu_index}/{label or f'GI{proc.mig_instance[0]}'}"


COMMAND_MIN_WIDTH = 20
"""The command keeps this much while USER or RSS can still be dropped instead ..."""
COMMAND_SQUEEZED_WIDTH = 10
"""... and shrinks to this before CPU% or WORKERS go."""
SQUEEZE_BELOW_DROP_ORDER = 3
"""Columns with a lower ``drop_order`` are kept at the cost of the command's width."""

SORT_KEYS: tuple[str, ...] = ("hint", "gpu", "vram", "sm", "cpu", "workers", "rss", "pid")
"""What ``s`` cycles through, in order; the first is the default: worst first (critical,
warning, info, then the rest, each in GPU order) -- the promise is "which process is in
trouble", and on a busy node the troubled rows must not start off screen."""

COLUMN_BY_KEY: Mapping[str, Column] = {c.key: c for c in COLUMNS}
"""Each column by its ``key`` (what ``s`` cycles through names, and what a click on a
sortable title -- CONTAINER too, which ``s`` skips -- sorts by)."""


def sort_processes(
    processes: Sequence[GpuProcess],
    key: str,
    hints: Hints | None = None,
    job_first: bool = False,
    reverse: bool = False,
) -> list[GpuProcess]:
    """Processes ordered by column ``key``; unknown values always sort last.

    ``reverse`` (``r``) turns the column's own order round, ties included; unknowns
    stay last.
    Ties fall back to (GPU, PID) so the order never shuffles between ticks.
    ``job_first``: the attached job's processes (``in_job``) come before the
    others, each group in that order.
    """
    column = COLUMN_BY_KEY[key]
    get = column.sort_value
    assert get is not None
    shown = hints or {}
    known: list[tuple[SortValue, GpuProcess]] = []
    unknown: list[GpuProcess] = []
    for proc in processes:
        value = get(proc, shown.get(proc.key))
        if value is None:
            unknown.append(proc)
        else:
            known.append((value, proc))
    known.sort(key=lambda item: (item[1].gpu_index, item[1].pid))
    known.sort(key=lambda item: item[0], reverse=column.descending)
    if reverse:
        # The whole order turned round, ties too: with every hint a warning, reversing
        # only the values would change nothing on screen (issue 44).
        known.reverse()
    unknown.sort(key=lambda proc: (proc.gpu_index, proc.pid))
    ordered = [proc for _, proc in known] + unknown
    if job_first:
        ordered.sort(key=lambda proc: proc.in_job is not True)  # stable: keeps the order
    return ordered


def visible_columns(width: int, mig: bool = False, containers: bool = False) -> list[Column]:
    """The columns that fit in ``width`` cells with room left for the command.

    CONTAINER, USER and RSS give way while the command has under
    ``COMMAND_MIN_WIDTH`` cells; CPU% and WORKERS only once it would have under
    ``COMMAND_SQUEEZED_WIDTH``; PID, GPU, VRAM, SM% and HINT always stay.
    ``mig``: a process runs on a MIG instance, and the GPU column names it.
    ``containers``: a process runs in a container or job (CONTAINER is shown).
    """
    columns = [
        MIG_GPU_COLUMN if mig and c.key == "gpu" else c
        for c in COLUMNS
        if containers or not c.optional
    ]
    while True:
        droppable = [c for c in columns if c.drop_order > 0]
        if not droppable:
            break
        first_to_go = max(droppable, key=lambda c: c.drop_order)
        needed = (
            COMMAND_MIN_WIDTH
            if first_to_go.drop_order >= SQUEEZE_BELOW_DROP_ORDER
            else COMMAND_SQUEEZED_WIDTH
        )
        used = sum(c.width + 1 for c in columns) + 1
        if width - used >= needed:
            break
        columns.remove(first_to_go)
    return columns


def aligned_cell(text: str, column: Column) -> str:
    """The cell padded (or cut, with an ellipsis) to exactly the column's width."""
    text = fit_text(text, column.width)
    pad = " " * (column.width - cell_len(text))
    return pad + text if column.align_right else text + pad


_INTERPRETERS = re.compile(r"^(?:python[\d.]*|pypy[\d.]*|ruby|node|perl|bash|sh|java)$")


def without_arguments(command: str) -> str:
    """A command line without its options (``a``): the program's name, and for an
    interpreter the script or ``-m`` module it runs -- ``python train.py`` for
    ``/opt/conda/bin/python train.py --lr 3e-4 --batch-size 64``."""
    words = command.split()
    if not words:
        return command
    program = words[0].rsplit("/", 1)[-1]
    kept = [program]
    if _INTERPRETERS.match(program):
        rest = iter(words[1:])
        for word in rest:
            if word == "-m":
                kept += [word, next(rest, "")]
                break
            if not word.startswith("-"):
                kept.append(word.rsplit("/", 1)[-1])
                break
    return " ".join(w for w in kept if w)
