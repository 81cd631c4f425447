"""The recording format: its version, its field names and column order, and the
encoding of a :class:`~gputop_hints.model.Snapshot` into lines and back.

Writer and reader both build on this module, so the two cannot drift apart; it
depends only on the model. ``docs/recording.md`` documents the format and its
compatibility promise.

A recording is JSON Lines, one line per event:

* line 1, the **header**: an object with ``"format": "gputop-hints-recording"``,
  ``schema_version``, host and GPU facts, the sampling interval and
  ``tick_columns`` (the column order of tick lines, so a file describes itself);
* **static records**: objects with a ``"type"`` (``meta``, ``gpu``, ``process``,
  ``worker``), written only when something first appears or changes;
* **tick lines**: JSON *arrays* with the per-tick values in the documented
  column order.

Floats are written with ``repr`` precision, so decoding gives back the very
snapshot that was encoded; non-finite floats become ``None`` (unknown), as in
:func:`~gputop_hints.model.snapshot_to_dict`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from gputop_hints import __version__
from gputop_hints.model import (
    PROFILING_FIELDS,
    GpuProcess,
    GpuSample,
    HostSample,
    Launcher,
    MigInstance,
    Snapshot,
    UtilizationSample,
    WorkerProcess,
    known_frameworks,
)

FORMAT = "gputop-hints-recording"
SCHEMA_VERSION = 1
"""Bumped on any incompatible change; readers accept every version up to their own."""

# Column order of tick lines (documented in the header as ``tick_columns``).
TICK_COLUMNS: dict[str, list[str]] = {
    "tick": ["timestamp", "sample_duration_s", "gpus", "host", "processes", "launchers"],
    "host": ["iowait_percent", "memory_used_bytes", "load_average", "cpu_percent_per_core"],
    "gpu": [
        "index",
        "sm_percent",
        "memory_access_percent",
        "vram_used_bytes",
        "pcie_rx_bytes_per_s",
        "pcie_tx_bytes_per_s",
        "temperature_c",
        "power_watts",
        "sm_clock_mhz",
        "throttle_reasons",
        "sm_samples",
        "lost",
        "not_answering_s",
        "profiling",
        "mig_instances",
    ],
    "process": [
        "pid",
        "gpu_index",
        "vram_bytes",
        "sm_percent",
        "memory_access_percent",
        "cpu_percent",
        "rss_bytes",
        "state",
        "workers",
    ],
    "worker": ["pid", "cpu_percent", "rss_bytes", "state"],
    "mig_instance": ["gpu_instance_id", "compute_instance_id", "vram_used_bytes", "sm_percent",
                     "sm_active_percent"],
    "launcher": ["pid", "cpu_percent"],
}
"""The GPUs come before the host so a reader can decode just them (the report's
fast path). ``sm_samples`` is flat: ``[t0, percent0, t1, percent1, ...]``; ``workers`` likewise
holds four values per worker in the ``worker`` column order. ``lost`` (``true``) is
written only for a GPU NVML says is lost: healthy GPUs' arrays end at ``sm_samples``.
``not_answering_s`` (seconds, a number) likewise only for a GPU whose NVML call had
not returned by the tick's deadline, after a ``false`` in ``lost``: a reader that
predates it reads that GPU's tick as all-unknown, which is what it was. ``profiling``
(DCGM/GPM ratios as percentages, in :data:`PROFILING_FIELDS` order) only for a source
that profiles, after ``false`` and ``null``: older readers ignore it. ``mig_instances``
(five values per instance, in the ``mig_instance`` column order) only for a GPU with MIG
instances, after ``lost``, ``not_answering_s`` and ``profiling`` (``null`` when it has
none); each instance's profile, total memory and UUID are in the GPU's record. The tick's
``launchers`` (two values per launcher, in the ``launcher`` column order; the rest of
each in its ``launcher`` record) only when the tick has launchers."""

# Column positions, for readers that work on the arrays directly (the report).
T_TIMESTAMP, T_DURATION, T_GPUS, T_HOST, T_PROCESSES, T_LAUNCHERS = range(6)
H_IOWAIT, H_MEMORY_USED, H_LOAD, H_CORES = range(4)
(
    G_INDEX,
    G_SM,
    G_MEM,
    G_VRAM_USED,
    G_RX,
    G_TX,
    G_TEMPERATURE,
    G_POWER,
    G_SM_CLOCK,
    G_THROTTLE,
    G_SAMPLES,
    G_LOST,
    G_NOT_ANSWERING,
    G_PROFILING,
    G_MIG,
) = range(15)
P_PID, P_GPU, P_VRAM, P_SM, P_MEM, P_CPU, P_RSS, P_STATE, P_WORKERS = range(9)

GPU_STATIC_FIELDS = (
    "name",
    "uuid",
    "vram_total_bytes",
    "pcie_generation",
    "pcie_width",
    "power_limit_watts",
    "max_sm_clock_mhz",
    "default_power_limit_watts",
    "profiling_unavailable",
    "mig_mode",
    "node",
)
"""Compared each tick to tell a changed GPU; its ``mig_instances`` record entry (the
instances' unchanging facts) is compared too, when it has instances."""
PROCESS_STATIC_FIELDS = ("user", "name", "command", "create_time", "launcher_pid", "mig_instance")
"""Compared each tick to tell a changed process (``mig_instance`` kept as a tuple in
the writer's copy, a list in the file); its ``frameworks`` are read once, when
it is first seen, and never change for one (pid, create_time)."""
META_FIELDS = (
    "interval_s",
    "source",
    "source_detail",
    "driver_version",
    "cuda_driver_version",
    "gpu_unavailable_reason",
    "labels",
    "hostname",
    "allowed_cores",
    "memory_total_bytes",
)


def _num(value: Any) -> Any:
    """``value``, except that a NaN or infinite float becomes None: JSON has neither,
    and unknown is what they mean."""
    if value.__class__ is float and not math.isfinite(value):
        return None
    return value


# --- encoding ---------------------------------------------------------------------------


def meta_of(snapshot: Snapshot) -> dict[str, Any]:
    """The facts of a snapshot that rarely change (a ``meta`` record, without its type)."""
    host = snapshot.host
    return {
        "interval_s": snapshot.interval_s,
        "source": snapshot.source,
        "source_detail": snapshot.source_detail,
        "driver_version": snapshot.driver_version,
        "cuda_driver_version": snapshot.cuda_driver_version,
        "gpu_unavailable_reason": snapshot.gpu_unavailable_reason,
        "labels": list(snapshot.labels),
        "hostname": host.hostname,
        "allowed_cores": list(host.allowed_cores),
        "memory_total_bytes": host.memory_total_bytes,
    }


def gpu_static(gpu: GpuSample) -> dict[str, Any]:
    """A GPU's unchanging facts (a ``gpu`` record, without its type)."""
    return {
        "index": gpu.index,
        "name": gpu.name,
        "uuid": gpu.uuid,
        "vram_total_bytes": gpu.vram_total_bytes,
        "pcie_generation": gpu.pcie_generation,
        "pcie_width": gpu.pcie_width,
        "power_limit_watts": _num(gpu.power_limit_watts),
        "max_sm_clock_mhz": gpu.max_sm_clock_mhz,
        "default_power_limit_watts": _num(gpu.default_power_limit_watts),
        "profiling_unavailable": gpu.profiling_unavailable,
        "mig_mode": gpu.mig_mode,
        "mig_instances": mig_static(gpu),
        "node": gpu.node,
    }


def mig_static(gpu: GpuSample) -> list[dict[str, Any]]:
    """The unchanging facts of a GPU's MIG instances (its record's ``mig_instances``)."""
    return [
        {
            "gpu_instance_id": m.gpu_instance_id,
            "compute_instance_id": m.compute_instance_id,
            "profile": m.profile,
            "vram_total_bytes": m.vram_total_bytes,
            "uuid": m.uuid,
        }
        for m in gpu.mig_instances
    ]


LAUNCHER_STATIC_FIELDS = ("kind", "user", "name", "command")
"""A launcher's unchanging facts (its ``launcher`` record); its CPU is per tick."""


def launcher_static(launcher: Launcher) -> dict[str, Any]:
    """A launcher's unchanging facts (a ``launcher`` record, without its type)."""
    return {
        "pid": launcher.pid,
        "kind": launcher.kind,
        "user": launcher.user,
        "name": launcher.name,
        "command": launcher.command,
    }


def process_static(proc: GpuProcess) -> dict[str, Any]:
    """A GPU process's unchanging facts (a ``process`` record, without its type)."""
    return {
        "pid": proc.pid,
        "gpu_index": proc.gpu_index,
        "user": proc.user,
        "name": proc.name,
        "command": proc.command,
        "create_time": _num(proc.create_time),
        "frameworks": list(proc.frameworks),
        "container": proc.container,
        "launcher_pid": proc.launcher_pid,
        "mig_instance": proc.mig_instance,
    }


def header_for(snapshot: Snapshot, *, created: float | None = None) -> dict[str, Any]:
    """The header line describing a recording whose first tick is ``snapshot``."""
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "generator": f"gputop-hints {__version__}",
        "created": time.time() if created is None else created,
        **meta_of(snapshot),
        "core_count": snapshot.host.core_count,
        "gpus": [gpu_static(g) for g in snapshot.gpus],
        "tick_columns": TICK_COLUMNS,
    }


def encode_gpu(gpu: GpuSample) -> list[Any]:
    """A GPU's per-tick values in the ``gpu`` column order (the report reads the same
    columns from any stream, recorded or imported)."""
    samples: list[float] = []
    for s in gpu.sm_samples:
        samples.append(_num(s.timestamp))
        samples.append(_num(s.percent))
    values = [
        gpu.index,
        _num(gpu.sm_percent),
        _num(gpu.memory_access_percent),
        gpu.vram_used_bytes,
        _num(gpu.pcie_rx_bytes_per_s),
        _num(gpu.pcie_tx_bytes_per_s),
        _num(gpu.temperature_c),
        _num(gpu.power_watts),
        gpu.sm_clock_mhz,
        None if gpu.throttle_reasons is None else list(gpu.throttle_reasons),
        samples,
    ]
    if gpu.mig_instances:  # the last trailing column: every one before it, placeholders too
        mig: list[Any] = []
        for m in gpu.mig_instances:
            mig.extend(
                (
                    m.gpu_instance_id,
                    m.compute_instance_id,
                    m.vram_used_bytes,
                    _num(m.sm_percent),
                    _num(m.sm_active_percent),
                )
            )
        profiling = [_num(getattr(gpu, name)) for name in PROFILING_FIELDS]
        values.extend(
            (
                gpu.lost,
                _num(gpu.not_answering_s),
                profiling if any(value is not None for value in profiling) else None,
                mig,
            )
        )
    elif gpu.lost:  # a trailing column: older readers ignore it, healthy ticks stay as they were
        values.append(True)
    elif gpu.not_answering_s is not None:  # likewise, one further along
        values.extend((False, _num(gpu.not_answering_s)))
    else:
        profiling = [_num(getattr(gpu, name)) for name in PROFILING_FIELDS]
        if any(value is not None for value in profiling):  # and one further still
            values.extend((False, None, profiling))
    return values


def _encode_process(proc: GpuProcess) -> list[Any]:
    workers: list[Any] = []
    for w in proc.workers:
        workers.extend((w.pid, _num(w.cpu_percent), w.rss_bytes, w.state))
    return [
        proc.pid,
        proc.gpu_index,
        proc.vram_bytes,
        _num(proc.sm_percent),
        _num(proc.memory_access_percent),
        _num(proc.cpu_percent),
        proc.rss_bytes,
        proc.state,
        workers,
    ]


def encode_tick(snapshot: Snapshot) -> list[Any]:
    """A snapshot's per-tick values: the array of one tick line."""
    host = snapshot.host
    la = host.load_average
    tick = [
        snapshot.timestamp,
        _num(snapshot.sample_duration_s),
        [encode_gpu(g) for g in snapshot.gpus],
        [
            _num(host.iowait_percent),
            host.memory_used_bytes,
            None if la is None else [_num(v) for v in la],
            [_num(v) for v in host.cpu_percent_per_core],
        ],
        [_encode_process(p) for p in snapshot.processes],
    ]
    if snapshot.launchers:  # a trailing column: older readers ignore it
        launchers: list[Any] = []
        for launcher in snapshot.launchers:
            launchers.extend((launcher.pid, _num(launcher.cpu_percent)))
        tick.append(launchers)
    return tick


STACK = "stack"
"""The type of a ``stack`` line: a py-spy reading of one process (issue 45), written when
the recorder sampled it -- ``{"type": "stack", "taken_at": T, **StackReading.to_dict()}``
(``pid``, ``samples``, ``reason``, ``notes``, ``categories``, ``workers``; docs/json.md).
``taken_at`` is when the sampling ended, on the ticks' clock. A reader that predates it
skips it as a record of a type it does not know (docs/recording.md)."""


def stack_record(reading: Mapping[str, Any], taken_at: float) -> dict[str, Any]:
    """A ``stack`` line's object for ``reading`` (a ``StackReading.to_dict()``)."""
    return {"type": STACK, "taken_at": _num(taken_at), **reading}


# --- decoding ---------------------------------------------------------------------------


def valid_tick(value: Any) -> bool:
    """Whether a decoded JSON value has the outer shape of a tick line."""
    return (
        isinstance(value, list)
        and len(value) >= 5
        and isinstance(value[T_TIMESTAMP], int | float)
        and isinstance(value[T_HOST], list)
        and len(value[T_HOST]) >= 4
        and isinstance(value[T_GPUS], list)
        and isinstance(value[T_PROCESSES], list)
    )


_NO_RECORD: Mapping[str, Any] = {}
_NO_LAUNCHERS: Mapping[int, Mapping[str, Any]] = {}


def _fields_in_order(cls: type, names: tuple[str, ...]) -> None:
    """Fail unless ``names`` are ``cls``'s fields in declaration order. The decoders below
    build their samples positionally (a 30-field GpuSample takes ~1.7 us that way against
    ~2.9 us by keyword, and a recording decodes thousands a second), so a field added or
    moved in the model must fail here, at import, not shift every value by one."""
    declared = tuple(f.name for f in fields(cls))
    if declared != names:
        raise TypeError(f"{cls.__name__} fields changed: decoders expect {names}, got {declared}")


_fields_in_order(
    GpuSample,
    (
        "index", "name", "uuid", "sm_percent", "memory_access_percent", "vram_used_bytes",
        "vram_total_bytes", "pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s", "pcie_generation",
        "pcie_width", "temperature_c", "power_watts", "power_limit_watts",
        "default_power_limit_watts", "sm_clock_mhz", "max_sm_clock_mhz", "throttle_reasons",
        "sm_samples", "lost", "not_answering_s", "sm_active_percent", "sm_occupancy_percent",
        "tensor_active_percent", "dram_active_percent", "profiling_unavailable", "node",
        "implausible", "mig_mode", "mig_instances",
    ),
)  # fmt: skip
_fields_in_order(
    GpuProcess,
    (
        "pid", "gpu_index", "vram_bytes", "sm_percent", "memory_access_percent", "cpu_percent",
        "workers", "rss_bytes", "state", "user", "name", "command", "create_time", "in_job",
        "container", "frameworks", "launcher_pid", "mig_instance",
        # not recorded (left at None by the decoder): the parent of a zombie, issue 48
        "parent_pid", "parent_name", "parent_state",
    ),
)  # fmt: skip


def decode_gpu(g: list[Any], static: Mapping[str, Any]) -> GpuSample:
    """A GPU's per-tick columns back into a GpuSample, with its static record (built in
    field order, see :func:`_fields_in_order`; ``implausible`` is never recorded)."""
    throttle = g[G_THROTTLE]
    active, occupancy, tensor, dram = profiling_columns(g)
    get = static.get
    return GpuSample(
        g[G_INDEX],
        get("name"),
        get("uuid"),
        g[G_SM],
        g[G_MEM],
        g[G_VRAM_USED],
        get("vram_total_bytes"),
        g[G_RX],
        g[G_TX],
        get("pcie_generation"),
        get("pcie_width"),
        g[G_TEMPERATURE],
        g[G_POWER],
        get("power_limit_watts"),
        get("default_power_limit_watts"),
        g[G_SM_CLOCK],
        get("max_sm_clock_mhz"),
        None if throttle is None else tuple(throttle),
        _utilization_samples(g[G_SAMPLES]),
        len(g) > G_LOST and g[G_LOST] is True,
        _not_answering(g),
        active,
        occupancy,
        tensor,
        dram,
        get("profiling_unavailable"),
        get("node"),
        (),
        get("mig_mode") is True,
        _mig_instances(g, static) if len(g) > G_MIG else (),
    )


def _known_number(value: Any) -> Any:
    return value if value.__class__ in (int, float) else None


def _mig_instances(g: list[Any], static: Mapping[str, Any]) -> tuple[MigInstance, ...]:
    """The ``mig_instances`` column (five values an instance) as MigInstances, each with
    its profile, total memory and UUID from the GPU's record; a malformed column reads as
    no instances, a value of the wrong type as unknown."""
    flat = g[G_MIG]
    if flat.__class__ is not list or not flat or len(flat) % 5:
        return ()
    facts: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    recorded = static.get("mig_instances")
    if recorded.__class__ is list:
        for entry in recorded:
            if entry.__class__ is dict:
                facts[(entry.get("gpu_instance_id"), entry.get("compute_instance_id"))] = entry
    out = []
    for i in range(0, len(flat), 5):
        gi, ci, used, sm, active = flat[i : i + 5]
        if gi.__class__ is not int or ci.__class__ is not int:
            continue
        fact = facts.get((gi, ci), _NO_RECORD)
        profile, total, uuid = fact.get("profile"), fact.get("vram_total_bytes"), fact.get("uuid")
        out.append(
            MigInstance(
                gpu_instance_id=gi,
                compute_instance_id=ci,
                profile=profile if profile.__class__ is str else None,
                vram_used_bytes=used if used.__class__ is int else None,
                vram_total_bytes=total if total.__class__ is int else None,
                sm_percent=_known_number(sm),
                sm_active_percent=_known_number(active),
                uuid=uuid if uuid.__class__ is str else None,
            )
        )
    return tuple(out)


def _utilization_samples(flat: list[Any]) -> tuple[UtilizationSample, ...]:
    """The flat ``sm_samples`` column (``[t0, percent0, t1, percent1, ...]``) as samples."""
    if len(flat) % 2:
        raise IndexError("sm_samples holds an odd number of values")
    return tuple(map(UtilizationSample, flat[0::2], flat[1::2]))


_Profiling = tuple[float | None, float | None, float | None, float | None]
_NO_PROFILING: tuple[None, None, None, None] = (None, None, None, None)


def profiling_columns(g: list[Any]) -> _Profiling:
    """The ``profiling`` column, in :data:`PROFILING_FIELDS` order: numbers 0-100 or
    None each; an absent or malformed column is all unknown."""
    if len(g) <= G_PROFILING:
        return _NO_PROFILING
    values = g[G_PROFILING]
    if values.__class__ is not list or len(values) != len(PROFILING_FIELDS):
        return _NO_PROFILING
    a, o, t, d = (
        float(x) if x.__class__ in (int, float) and 0 <= x <= 100 else None for x in values
    )
    return a, o, t, d


def _not_answering(g: list[Any]) -> float | None:
    """The ``not_answering_s`` column: a finite, non-negative number, else None."""
    if len(g) <= G_NOT_ANSWERING:
        return None
    value = g[G_NOT_ANSWERING]
    if value.__class__ not in (int, float) or not 0 <= value < float("inf"):
        return None
    return float(value)


_NO_WORKER: tuple[None, None] = (None, None)
"""A worker without a ``worker`` record: name and command line unknown."""


_ProcessStatic = tuple[
    str | None,
    str | None,
    str,
    float | None,
    tuple[str, ...],
    str | None,
    int | None,
    tuple[int, int] | None,
]
_PROCESS_STATIC: dict[int, tuple[Mapping[str, Any], _ProcessStatic]] = {}
"""A process record's fields as :class:`GpuProcess` takes them, by the record's id (the
record itself kept alongside, so an id reused after it is gone never matches): the
records are replaced, never changed in place, and each is read once per tick."""
_PROCESS_STATIC_MAX = 4096


def _process_static(static: Mapping[str, Any]) -> _ProcessStatic:
    hit = _PROCESS_STATIC.get(id(static))
    if hit is not None and hit[0] is static:
        return hit[1]
    values = (
        static.get("user"),
        static.get("name"),
        static.get("command") or "",
        static.get("create_time"),
        known_frameworks(static.get("frameworks")),
        static.get("container"),
        static.get("launcher_pid"),
        _mig_key(static.get("mig_instance")),
    )
    if len(_PROCESS_STATIC) >= _PROCESS_STATIC_MAX:
        _PROCESS_STATIC.clear()
    _PROCESS_STATIC[id(static)] = (static, values)
    return values


def _mig_key(value: Any) -> tuple[int, int] | None:
    """A process record's ``mig_instance`` (``[gpu instance id, compute instance id]``)."""
    if value.__class__ is list and len(value) == 2 and _types_are_int(value):
        return (value[0], value[1])
    return None


def _types_are_int(values: list[Any]) -> bool:
    return all(v.__class__ is int for v in values)


def _decode_workers(
    wf: list[Any], worker_names: Mapping[int, tuple[str | None, str | None]]
) -> tuple[WorkerProcess, ...]:
    """The flat ``workers`` column (four values a worker) as WorkerProcesses."""
    if not wf:
        return ()
    if len(wf) % 4:
        raise IndexError("workers holds a partial worker")
    get = worker_names.get
    pids = wf[0::4]
    known = [get(pid, _NO_WORKER) for pid in pids]
    return tuple(
        map(
            WorkerProcess,
            pids,
            wf[1::4],
            wf[2::4],
            wf[3::4],
            [k[0] for k in known],
            [k[1] for k in known],
        )
    )


def _decode_process(
    p: list[Any],
    static: Mapping[str, Any],
    worker_names: Mapping[int, tuple[str | None, str | None]],
) -> GpuProcess:
    user, name, command, create_time, frameworks, container, launcher_pid, mig = (
        _process_static(static)
    )
    return GpuProcess(  # in field order, see _fields_in_order; in_job is never recorded
        p[P_PID],
        p[P_GPU],
        p[P_VRAM],
        p[P_SM],
        p[P_MEM],
        p[P_CPU],
        _decode_workers(p[P_WORKERS], worker_names),
        p[P_RSS],
        p[P_STATE],
        user,
        name,
        command,
        create_time,
        None,
        container,
        frameworks,
        launcher_pid,
        mig,
    )


def _decode_launchers(
    tick: list[Any], launchers: Mapping[int, Mapping[str, Any]]
) -> tuple[Launcher, ...]:
    """The tick's ``launchers`` column (pid, CPU % each) with their ``launcher`` records;
    a launcher without a record (a damaged file) is left out, its ranks shown at the top."""
    if len(tick) <= T_LAUNCHERS:
        return ()
    flat = tick[T_LAUNCHERS]
    if flat.__class__ is not list or len(flat) % 2:
        return ()
    out = []
    for pid, cpu in zip(flat[0::2], flat[1::2], strict=True):
        record = launchers.get(pid) if pid.__class__ is int else None
        if record is None:
            continue
        out.append(
            Launcher(
                pid=pid,
                kind=record.get("kind") or "",
                user=record.get("user"),
                name=record.get("name"),
                command=record.get("command") or "",
                cpu_percent=_known_number(cpu),
            )
        )
    return tuple(out)


def decode_tick(
    tick: list[Any],
    meta: Mapping[str, Any],
    gpus: Mapping[int, Mapping[str, Any]],
    processes: Mapping[tuple[int, int], Mapping[str, Any]],
    worker_names: Mapping[int, tuple[str | None, str | None]],
    launchers: Mapping[int, Mapping[str, Any]] = _NO_LAUNCHERS,
) -> Snapshot:
    """Rebuild the Snapshot of a tick line from the static records in force for it.

    Raises IndexError, KeyError, TypeError or ValueError for a line of the wrong shape.
    """
    h = tick[T_HOST]
    la = h[H_LOAD]
    host = HostSample(
        hostname=meta.get("hostname") or "",
        cpu_percent_per_core=tuple(h[H_CORES]),
        allowed_cores=tuple(meta.get("allowed_cores") or ()),
        iowait_percent=h[H_IOWAIT],
        memory_used_bytes=h[H_MEMORY_USED],
        memory_total_bytes=meta.get("memory_total_bytes"),
        load_average=None if la is None else (la[0], la[1], la[2]),
    )
    return Snapshot(
        timestamp=tick[T_TIMESTAMP],
        interval_s=meta.get("interval_s") or 1.0,
        host=host,
        gpus=tuple(decode_gpu(g, gpus.get(g[G_INDEX], _NO_RECORD)) for g in tick[T_GPUS]),
        processes=tuple(
            _decode_process(p, processes.get((p[P_PID], p[P_GPU]), _NO_RECORD), worker_names)
            for p in tick[T_PROCESSES]
        ),
        source=meta.get("source") or "live",
        source_detail=meta.get("source_detail") or "",
        driver_version=meta.get("driver_version"),
        cuda_driver_version=meta.get("cuda_driver_version"),
        gpu_unavailable_reason=meta.get("gpu_unavailable_reason"),
        sample_duration_s=tick[T_DURATION],
        labels=tuple(meta.get("labels") or ()),
        launchers=_decode_launchers(tick, launchers),
    )
