"""Logs people already have, as snapshot streams: :func:`open_stream`.

Formats, in the order content sniffing tries them (the file extension is never
trusted; gzip is recognised by its magic bytes and decompressed on the fly):

1. ``recording``        -- our own JSON Lines (``gputop-hints record``), read by
   :mod:`gputop_hints.recording`;
2. ``wandb``            -- W&B ``wandb-events.jsonl`` system metrics;
3. ``nvidia-smi-dmon``  -- ``nvidia-smi dmon`` (any ``-s``, ``-o DT``);
4. ``nvidia-smi-csv``   -- ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``;
5. ``csv``              -- a hand-made CSV whose header names the metrics.

Files are read lazily, line by line, so memory stays flat for multi-GB logs.
See docs/import.md for what each format gives and lacks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from gputop_hints.model import Snapshot
from gputop_hints.sources.files import (
    _csvio,
    dcgmi,
    dmon,
    generic_csv,
    gpustat,
    nvsmi_apps,
    nvsmi_csv,
    nvsmi_query,
    nvsmi_table,
    nvsmi_watch,
    pmon,
    wandb,
)
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._interval import choose_interval as _interval
from gputop_hints.sources.files._table import Assembler, missing_for, probe_interval
from gputop_hints.sources.files._text import Head, TextSource
from gputop_hints.sources.files.mapping import (
    MappingError,
    constant_size,
    normalise,
    parse_mapping,
)
from gputop_hints.sources.files.merge import open_streams
from gputop_hints.sources.files.stream import (
    SnapshotStream,
    StreamInfo,
    UnrecognisedFormat,
)

__all__ = [
    "FORMATS",
    "MappingError",
    "UnrecognisedFormat",
    "open_stream",
    "open_streams",
    "parse_mapping",
]

RECORDING = "recording"
RECORDING_FORMAT_TAG = "gputop-hints-recording"

FORMATS: tuple[str, ...] = (
    RECORDING,
    wandb.FORMAT,
    dmon.FORMAT,
    nvsmi_table.FORMAT,
    nvsmi_watch.FORMAT,
    nvsmi_query.FORMAT,
    pmon.FORMAT,
    nvsmi_apps.FORMAT,
    dcgmi.FORMAT,
    gpustat.FORMAT,
    nvsmi_csv.FORMAT,
    generic_csv.FORMAT,
)
"""Format names for ``format=`` / ``--format``, in detection order."""

_LABELS = {
    RECORDING: "recording",
    wandb.FORMAT: "W&B system metrics",
    dmon.FORMAT: "nvidia-smi dmon",
    nvsmi_table.FORMAT: nvsmi_table.LABEL,
    nvsmi_watch.FORMAT: nvsmi_watch.LABEL,
    nvsmi_query.FORMAT: nvsmi_query.LABEL,
    pmon.FORMAT: pmon.LABEL,
    nvsmi_apps.FORMAT: nvsmi_apps.LABEL,
    dcgmi.FORMAT: dcgmi.LABEL,
    gpustat.FORMAT: gpustat.LABEL,
    nvsmi_csv.FORMAT: "nvidia-smi CSV",
    generic_csv.FORMAT: "CSV",
}


def _sniff_recording(head: Head) -> str | None:
    """None when the head is our recording, else why not.

    Asks :func:`gputop_hints.recording.looks_like_recording` when that module is
    installed; checks the header line itself otherwise."""
    try:
        from gputop_hints.sources.files.recording import looks_like_recording
    except ImportError:
        pass
    else:
        with open(head.path, "rb") as f:
            first = f.read(4096)
        if looks_like_recording(first):
            return None
        return f'first line is not a {{"format": "{RECORDING_FORMAT_TAG}"}} header'
    lines = head.nonblank
    if not lines:
        return "empty file"
    try:
        first = json.loads(lines[0])
    except (ValueError, RecursionError):
        return "first line is not JSON"
    if not isinstance(first, dict) or first.get("format") != RECORDING_FORMAT_TAG:
        return f'first line is not a {{"format": "{RECORDING_FORMAT_TAG}"}} header'
    return None


def _open_recording(path: Path) -> SnapshotStream:
    try:
        from gputop_hints.sources.files.recording import open_recording
    except ImportError as exc:
        raise UnrecognisedFormat(
            f"{path}: a gputop-hints recording, but this installation cannot read "
            f"recordings (gputop_hints.recording is missing: {exc})"
        ) from exc
    return open_recording(path)


def _vram_constant(mapping: Mapping[str, str] | None) -> int | None:
    spec = normalise(mapping).get("vram_total")
    return None if spec is None else constant_size(spec)


def _table_stream(
    path: Path,
    fmt: str,
    plan: _csvio.CsvPlan | dmon.DmonPlan,
    interval_s: float | None,
    mapping: Mapping[str, str] | None,
) -> ImportedStream:
    label = _LABELS[fmt]
    notes: list[str] = []
    if isinstance(plan, _csvio.CsvPlan):
        shape = "with header" if plan.header is not None else "without header"
        if fmt == nvsmi_csv.FORMAT:
            shape += " and units" if plan.units else ""
        notes.append(f"{label} {shape}, {plan.ncols} column(s)")
    else:
        notes.append(f"{label} with columns {' '.join(plan.names)}")
        if mapping:
            notes.append("--map is not used for dmon (its header names every column)")
    notes += plan.notes if isinstance(plan, _csvio.CsvPlan) else []
    roles = [c.role for c in plan.columns]
    timed = "time" in roles
    vram_total = _vram_constant(mapping)
    if vram_total is not None:
        roles.append("vram_total")
        notes.append(f"VRAM total {vram_total} bytes (given)")
    interval = _interval(probe_interval(plan.rows), interval_s, notes, timed)
    keys = {r.key for r in plan.rows}
    gpu_count = max(1, len(keys)) if plan.rows else None
    if "pcie_gen" in roles and "pcie_rx" not in roles:
        notes.append("PCIe link generation/width known, throughput not")
    info = StreamInfo(
        path=str(path),
        format=fmt,
        interval_s=interval,
        hostname=None,
        gpu_count=gpu_count,
        missing=missing_for(roles),
        detail="; ".join(notes),
        header={"columns": {c.label: c.role for c in plan.columns}},
    )
    detail = f"{label}: {path.name}"

    def reader(source: TextSource) -> Iterator[Snapshot]:
        assembler = Assembler(info, interval, "unknown", detail)
        if isinstance(plan, dmon.DmonPlan):
            return dmon.read(source, plan, info, assembler)
        return _csvio.read_rows(
            source,
            plan,
            info,
            assembler,
            vram_total=vram_total,
            reheader=nvsmi_csv.nvsmi_reheader if fmt == nvsmi_csv.FORMAT else None,
        )

    return ImportedStream(path, info, reader)


def _wandb_stream(
    path: Path,
    plan: wandb.WandbPlan,
    interval_s: float | None,
    mapping: Mapping[str, str] | None,
) -> ImportedStream:
    notes = [f"W&B system metrics, {plan.gpu_count} GPU(s)"]
    vram_total = _vram_constant(mapping)
    interval = _interval(wandb.plan_interval(plan), interval_s, notes, bool(plan.times))
    if "memoryAllocated" in plan.keys and "memoryAllocatedBytes" not in plan.keys:
        if vram_total is None:
            notes.append(
                "VRAM only as a share (memoryAllocated %): bytes unknown, see "
                "header['vram_allocated_percent']; give --map vram_total=SIZE for bytes"
            )
        else:
            notes.append(f"VRAM bytes from memoryAllocated % of {vram_total} bytes (given)")
    if not plan.per_core:
        notes.append(
            "host CPU per core unknown (system.cpu is one number: see header['system_cpu_percent'])"
        )
    info = StreamInfo(
        path=str(path),
        format=wandb.FORMAT,
        interval_s=interval,
        hostname=None,
        gpu_count=plan.gpu_count,
        missing=wandb.missing(plan, vram_total is not None),
        detail="; ".join(notes),
        header={},
    )
    detail = f"{_LABELS[wandb.FORMAT]}: {path.name}"

    def reader(source: TextSource) -> Iterator[Snapshot]:
        return wandb.read(source, info, interval, detail, vram_total)

    return ImportedStream(path, info, reader)


Sniffer = Callable[[Head, Mapping[str, str] | None], object]
Opener = Callable[[Path, Any, float | None, Mapping[str, str] | None], SnapshotStream]

_TEXT_FORMATS: dict[str, tuple[Sniffer, type, Opener]] = {
    nvsmi_table.FORMAT: (nvsmi_table.sniff, nvsmi_table.TablePlan, nvsmi_table.open_table),
    nvsmi_watch.FORMAT: (nvsmi_watch.sniff, nvsmi_watch.WatchPlan, nvsmi_watch.open_watch),
    nvsmi_query.FORMAT: (nvsmi_query.sniff, nvsmi_query.QueryPlan, nvsmi_query.open_query),
    pmon.FORMAT: (pmon.sniff, pmon.PmonPlan, pmon.open_pmon),
    nvsmi_apps.FORMAT: (nvsmi_apps.sniff, nvsmi_apps.AppsPlan, nvsmi_apps.open_apps),
    dcgmi.FORMAT: (dcgmi.sniff, dcgmi.DcgmiPlan, dcgmi.open_dcgmi),
    gpustat.FORMAT: (gpustat.sniff, gpustat.GpustatPlan, gpustat.open_gpustat),
}
"""Formats that build their own stream: sniff -> plan (of this type) or why not -> open."""


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
    if format is not None and format not in FORMATS:
        raise UnrecognisedFormat(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    normalise(mapping)  # fail early on unknown keys
    head = Head(p)
    candidates = FORMATS if format is None else (format,)
    reasons: list[str] = []
    if not head.nonblank:
        why = "empty file" if head.size == 0 else "no text in the file"
        raise UnrecognisedFormat(f"{p}: {why}")
    binary = head.looks_binary()
    if binary is not None:
        raise UnrecognisedFormat(
            f"{p}: not a text log ({binary}); tried "
            + ", ".join(candidates)
            + ": none reads binary data"
        )
    for fmt in candidates:
        if fmt == RECORDING:
            not_ours = _sniff_recording(head)
            if not_ours is None:
                return _open_recording(p)
            reasons.append(f"{fmt}: {not_ours}")
            continue
        if fmt == wandb.FORMAT:
            wplan = wandb.sniff(head, mapping)
            if isinstance(wplan, wandb.WandbPlan):
                return _wandb_stream(p, wplan, interval_s, mapping)
            reasons.append(f"{fmt}: {wplan}")
            continue
        if fmt in _TEXT_FORMATS:
            sniff, plan_type, opener = _TEXT_FORMATS[fmt]
            found = sniff(head, mapping)
            if isinstance(found, plan_type):
                return opener(p, found, interval_s, mapping)
            reasons.append(f"{fmt}: {found}")
            continue
        sniffer: Sniffer = {
            dmon.FORMAT: dmon.sniff,
            nvsmi_csv.FORMAT: nvsmi_csv.sniff,
            generic_csv.FORMAT: generic_csv.sniff,
        }[fmt]
        plan = sniffer(head, mapping)
        if isinstance(plan, _csvio.CsvPlan | dmon.DmonPlan):
            return _table_stream(p, fmt, plan, interval_s, mapping)
        reasons.append(f"{fmt}: {plan}")
    raise UnrecognisedFormat(f"{p}: not a format we know. Tried:\n  " + "\n  ".join(reasons))
