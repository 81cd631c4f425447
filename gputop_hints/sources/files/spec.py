"""What the registry knows of a log format: :class:`FormatSpec`.

Every reader module ends with ``SPEC = FormatSpec(...)``;
:mod:`~gputop_hints.sources.files.registry` lists them in detection order and
:func:`~gputop_hints.sources.files.registry.open_stream` tries each in turn:
``sniff`` looks at the head of the file and says why not (a string) or hands
back a plan (anything else), which ``open`` turns into the stream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop_hints.sources.files._text import Head
from gputop_hints.streams import (
    ALL_METRICS,
    METRIC_MEMORY_ACCESS,
    METRIC_PCIE,
    METRIC_POWER,
    METRIC_SM,
    METRIC_TEMPERATURE,
    METRIC_VRAM,
    SnapshotStream,
)

GPU_COLUMNS = frozenset(
    {METRIC_SM, METRIC_MEMORY_ACCESS, METRIC_VRAM, METRIC_TEMPERATURE, METRIC_POWER, METRIC_PCIE}
)
"""The per-GPU metrics a tabular GPU log (a CSV, dmon, dcgmi) can carry at best."""

Sniff = Callable[[Head, Mapping[str, str] | None], Any]
"""(head, --map) -> a plan for ``open``, or the reason (str) the file is not this format."""
SniffFolder = Callable[[Path, Mapping[str, str] | None], Any]
"""(a folder, --map) -> a plan for ``open``, or why the folder is not this format's."""
Open = Callable[[Path, Any, float | None, Mapping[str, str] | None], SnapshotStream]
"""(path, the plan ``sniff`` made, --interval, --map) -> the stream."""


@dataclass(frozen=True)
class FormatSpec:
    """One log format the importers read."""

    id: str
    """The ``--format`` name, also ``StreamInfo.format``."""
    label: str
    """What people call it, for detail lines."""
    sniff: Sniff
    open: Open
    metrics: frozenset[str]
    """The metrics (see ALL_METRICS) a log of this format can carry at best."""
    docs: str
    """The title of its ``###`` section in docs/import.md."""
    per_process: bool = False
    """A per-process log: processes on GPUs that carry nothing else, read together
    with a GPU log of the same run by ``open_streams``."""
    sniff_folder: SniffFolder | None = None
    """For a format kept as a folder of files (an MLflow run): looks at a folder
    given instead of a file. None: the format is one file."""

    def __post_init__(self) -> None:
        unknown = self.metrics - set(ALL_METRICS)
        if unknown:
            raise ValueError(f"{self.id}: unknown metrics {sorted(unknown)}")


def matched(found: object) -> bool:
    """Whether what a sniffer returned is a plan (not the reason it said no)."""
    return not isinstance(found, str)
