"""Every format the importers read, in detection order, and :func:`open_stream`.

One :class:`~.spec.FormatSpec` per format, from the ``SPEC`` at the end of each
reader module. Everything that lists formats is derived from :data:`ALL_FORMATS`:
the ``--format`` names, the labels, the per-process formats ``open_streams``
pairs with a GPU log, and the "Tried:" list of :class:`UnrecognisedFormat`.
Adding a format: docs/import.md, "Adding a format".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from gputop_hints.sources.files import (
    aligned_table,
    dcgm_exporter,
    dcgmi,
    dmon,
    generic_csv,
    generic_jsonl,
    gpustat,
    gputil,
    kv_lines,
    mlflow,
    nvitop_once,
    nvsmi_apps,
    nvsmi_csv,
    nvsmi_query,
    nvsmi_table,
    nvsmi_watch,
    nvsmi_xml,
    pmon,
    recording_format,
    wandb,
    wandb_run,
)
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._date_blocks import find_date_blocks
from gputop_hints.sources.files._prefix import LineView, find_prefix
from gputop_hints.sources.files._text import Head
from gputop_hints.sources.files.mapping import normalise
from gputop_hints.sources.files.spec import FormatSpec, matched
from gputop_hints.streams import SnapshotStream, UnrecognisedFormat

ALL_FORMATS: tuple[FormatSpec, ...] = (
    recording_format.SPEC,
    wandb.SPEC,
    wandb_run.SPEC,
    mlflow.SPEC,
    dmon.SPEC,
    nvsmi_table.SPEC,
    nvsmi_watch.SPEC,
    nvitop_once.SPEC,
    nvsmi_query.SPEC,
    nvsmi_xml.SPEC,
    pmon.SPEC,
    nvsmi_apps.SPEC,
    dcgmi.SPEC,
    dcgm_exporter.SPEC,
    gpustat.SPEC,
    generic_jsonl.SPEC,
    nvsmi_csv.SPEC,
    gputil.SPEC,
    generic_csv.SPEC,
    aligned_table.SPEC,
    kv_lines.SPEC,
)
"""The order content sniffing tries them: the stricter shapes before the looser."""

BY_ID: dict[str, FormatSpec] = {spec.id: spec for spec in ALL_FORMATS}
FORMATS: tuple[str, ...] = tuple(BY_ID)
"""Format names for ``format=`` / ``--format``, in detection order."""
LABELS: dict[str, str] = {spec.id: spec.label for spec in ALL_FORMATS}
PROCESS_FORMATS: frozenset[str] = frozenset(s.id for s in ALL_FORMATS if s.per_process)
"""Per-process logs: read together with a GPU log of the same run by ``open_streams``."""


def open_stream(
    path: str | Path,
    *,
    format: str | None = None,
    interval_s: float | None = None,
    mapping: Mapping[str, str] | None = None,
) -> SnapshotStream:
    """Open a log as a :class:`SnapshotStream`, recognising its format by content.

    ``format`` forces one of :data:`FORMATS`; ``interval_s`` sets the sampling
    interval (needed when the file has no timestamps; overrides the measured one
    otherwise); ``mapping`` is the parsed ``--map`` (see
    :func:`~gputop_hints.sources.files.mapping.parse_mapping`). Raises
    :class:`UnrecognisedFormat` listing every format tried and why each said no,
    :class:`MappingError` for a malformed mapping, ``OSError`` when the file
    cannot be opened."""
    p = Path(path)
    if format is not None and format not in BY_ID:
        raise UnrecognisedFormat(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    normalise(mapping)  # fail early on unknown keys
    if p.is_dir():
        return _open_folder(p, format, interval_s, mapping)
    head = Head(p)
    candidates = ALL_FORMATS if format is None else (BY_ID[format],)
    # Binary first: a head of NULs alone (a sparse file) has no nonblank line either.
    binary = head.looks_binary()
    # The one binary format read: W&B's run file, known by its header's magic bytes.
    if binary is not None and not (wandb_run.SPEC in candidates and wandb_run.has_file_header(p)):
        raise UnrecognisedFormat(
            f"{p}: not a text log ({binary}); tried "
            + ", ".join(spec.id for spec in candidates)
            + ": none reads binary data"
        )
    if not head.nonblank:
        why = "empty file" if head.size == 0 else "no text in the file"
        if head.cut is not None:
            why = f"{head.cut.removesuffix(': read up to there')}, before any whole text"
        raise UnrecognisedFormat(f"{p}: {why}")
    # A prefix on every line first: a generic reader would take the stamped lines
    # as they are (a CSV header whose first column is "Jan 15 10:00:00 timestamp").
    reasons: list[str] = []
    prefix = find_prefix(head.lines)
    if prefix is not None:
        stream = _open_under(prefix, p, head, candidates, interval_s, mapping)
        if stream is not None:
            return stream
        reasons.append(f"(each of them first without the {prefix.label} on every line)")
    for spec in candidates:
        plan = spec.sniff(head, mapping)
        if matched(plan):
            return spec.open(p, plan, interval_s, mapping)
        reasons.append(f"{spec.id}: {plan}")
    # Last, rows under date lines ('date; nvidia-smi --query-gpu=...' in a loop): read
    # as is first, as a table log with date lines between its tables reads.
    blocks = find_date_blocks(head.lines)
    if blocks is not None:
        timed: list[str] = []
        stream = _open_under(blocks, p, head, candidates, interval_s, mapping, timed)
        if stream is not None:
            return stream
        reasons.append(f"then each with the rows timed by the {blocks.label}:")
        reasons += [f"  {why}" for why in timed if why not in reasons]
    raise UnrecognisedFormat(f"{p}: not a format we know. Tried:\n  " + "\n  ".join(reasons))


def _open_folder(
    path: Path,
    format: str | None,
    interval_s: float | None,
    mapping: Mapping[str, str] | None,
) -> SnapshotStream:
    """A folder given instead of a file: read by a format kept as a folder of files
    (an MLflow run), else refused saying which folders are read."""
    candidates = [
        spec
        for spec in (ALL_FORMATS if format is None else (BY_ID[format],))
        if spec.sniff_folder is not None
    ]
    reasons: list[str] = []
    for spec in candidates:
        assert spec.sniff_folder is not None
        plan = spec.sniff_folder(path, mapping)
        if matched(plan):
            return spec.open(path, plan, interval_s, mapping)
        reasons.append(f"{spec.id}: {plan}")
    if not reasons:
        reasons.append(f"{format}: reads a file, not a folder")
    raise UnrecognisedFormat(
        f"{path}: a directory, not a file; give a log or recording file, or a folder "
        "that one of these reads:\n  " + "\n  ".join(reasons)
    )


NO_PREFIX = frozenset(
    {recording_format.FORMAT, nvsmi_watch.FORMAT, kv_lines.FORMAT, wandb_run.FORMAT}
)
"""Formats never written through a line-prefixing pipe: our recording (its own
writer), a terminal capture (``watch`` draws a screen, not lines); log lines
with readings, whose reader takes each line's time from its own stamp; and W&B's
binary run file."""


def _open_under(
    prefix: LineView,
    path: Path,
    head: Head,
    candidates: tuple[FormatSpec, ...],
    interval_s: float | None,
    mapping: Mapping[str, str] | None,
    reasons: list[str] | None = None,
) -> SnapshotStream | None:
    """The stream of a log whose every line carries ``prefix``, read without it; None
    when no format reads it so either."""
    stripped = head.stripped(prefix)
    for spec in candidates:
        if spec.id in NO_PREFIX:
            continue
        plan = spec.sniff(stripped, mapping)
        if not matched(plan):
            if reasons is not None:
                reasons.append(f"{spec.id}: {plan}")
            continue
        stream = spec.open(path, plan, interval_s, mapping)
        if not isinstance(stream, ImportedStream):
            stream.close()
            continue
        stream.line_prefix = prefix
        stream.info = dataclasses.replace(
            stream.info,
            detail=f"{stream.info.detail}; {prefix.label}: {prefix.note}",
        )
        return stream
    return None
