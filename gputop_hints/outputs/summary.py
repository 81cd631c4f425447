"""The non-interactive output: ``--once`` plain text and ``--json``.

Both are built from the same :class:`Summary`: the newest snapshot in full plus
statistics over every tick sampled (``--duration``). The JSON form is
documented in ``docs/json.md``; its ``schema_version`` changes whenever a field
is renamed or removed (adding fields does not bump it).

No Textual here: this runs in batch jobs with no terminal at all.
"""

from __future__ import annotations

import shutil
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from gputop_hints import __version__
from gputop_hints.hints.costs import CostMeter, CostTotals
from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.hints.findings import Finding
from gputop_hints.hints.phases import Verdict
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.history import GpuHistory, History, Series
from gputop_hints.model import (
    LOST_GPU_TEXT,
    GpuProcess,
    GpuSample,
    Snapshot,
    not_answering_text,
    snapshot_to_dict,
)
from gputop_hints.outputs.cost_text import cost_line
from gputop_hints.outputs.finding_text import TEXT_MARK, finding_lines, subject_text
from gputop_hints.text import visible, visible_lines
from gputop_hints.units import core_ranges, human_bytes, human_rate, percent

if TYPE_CHECKING:  # the stack readings' package: imported only where one is read
    from gputop_hints.stacks import StackReading

JSON_SCHEMA_VERSION = 1


def _stats(series: Series) -> dict[str, float | None]:
    return {"mean": series.mean(), "min": series.min(), "max": series.max()}


@dataclass(frozen=True)
class Summary:
    """Snapshots of a short sampling run, with their history for statistics."""

    snapshots: tuple[Snapshot, ...]
    history: History
    findings: tuple[Finding, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    """Each GPU's verdict over every tick sampled (hints.phases), by index."""
    costs: CostTotals | None = None
    """GPU-time and energy lost under the findings over the ticks sampled (hints.costs)."""
    cost_per_gpu_hour: float | None = None
    """``--cost-per-gpu-hour``: the lost time also in money."""
    stacks: tuple[StackReading, ...] = ()
    """py-spy readings of the warned processes (sampling.once_stacks), taken after the
    last tick; empty when none was taken."""

    @classmethod
    def of(
        cls,
        snapshots: Sequence[Snapshot],
        thresholds: Thresholds | None = None,
        context: Sequence[Snapshot] = (),
        cost_per_gpu_hour: float | None = None,
        stacks: Sequence[StackReading] = (),
    ) -> Summary:
        """Summarise ``snapshots``; ``context`` (earlier ticks) feeds the hints only.

        A one-off summary has no time to wait out the hints' hysteresis, so the
        rules are evaluated as they stand at the last tick, over every tick given.
        ``stacks``: readings taken after the last tick, given to the rules (as of the
        last tick's time) before it is evaluated.
        """
        if not snapshots:
            raise ValueError("a summary needs at least one snapshot")
        first, last = snapshots[0], snapshots[-1]
        span = max(last.timestamp - first.timestamp, last.interval_s)
        history = History(window_s=span + last.interval_s, interval_s=last.interval_s)
        history.extend(snapshots)
        seen = [*context, *snapshots]
        diagnoser = Diagnoser.one_off(seen, thresholds)
        diagnoser.feed_all(context)
        diagnoser.costs = CostMeter()  # the cost covers the ticks sampled, not the context
        diagnoser.feed_all(snapshots[:-1])
        for reading in stacks:
            diagnoser.engine.set_stacks(reading, last.timestamp)
        findings = diagnoser.feed(last)
        return cls(
            tuple(snapshots),
            history,
            findings,
            tuple(diagnoser.verdicts.all()),
            diagnoser.costs.totals(),
            cost_per_gpu_hour,
            tuple(stacks),
        )

    @property
    def latest(self) -> Snapshot:
        return self.snapshots[-1]

    @property
    def duration_s(self) -> float:
        return self.snapshots[-1].timestamp - self.snapshots[0].timestamp

    # --- JSON ---------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """One JSON document: newest values of every field, plus stats over the run."""
        snap = self.latest
        body = snapshot_to_dict(snap)
        body.pop("schema_version", None)
        host = body.pop("host")
        gpus = body.pop("gpus")
        processes = body.pop("processes")

        h = self.history
        host["core_count"] = snap.host.core_count
        host["stats"] = {
            "cpu_percent_mean_per_core": [s.mean() for s in h.cores],
            "allowed_cores_busy_percent_mean": _mean_of_allowed(h, snap.host.allowed_cores),
            "iowait_percent": _stats(h.iowait_percent),
        }
        for g, sample in zip(gpus, snap.gpus, strict=True):
            g["pcie_link_bytes_per_s"] = sample.pcie_link_bytes_per_s
            g["utilization_sum_percent"] = sample.utilization_sum_percent
            gh = h.gpus.get(sample.index)
            if gh is not None:
                g["stats"] = {
                    "sm_percent": _stats(gh.sm_percent),
                    "memory_access_percent": _stats(gh.memory_access_percent),
                    "vram_used_bytes": _stats(gh.vram_used_bytes),
                    "pcie_rx_bytes_per_s": _stats(gh.pcie_rx_bytes_per_s),
                    "pcie_tx_bytes_per_s": _stats(gh.pcie_tx_bytes_per_s),
                    "sm_samples_in_window": len(gh.sm_samples),
                }
        for p, proc in zip(processes, snap.processes, strict=True):
            p["workers_cpu_percent"] = proc.workers_cpu_percent
            ph = h.process(proc.pid, proc.gpu_index)
            if ph is not None:
                p["stats"] = {
                    "sm_percent": _stats(ph.sm_percent),
                    "cpu_percent": _stats(ph.cpu_percent),
                    "workers_cpu_percent": _stats(ph.workers_cpu_percent),
                    "busy_workers": _stats(ph.busy_workers),
                }
        return {
            "schema_version": JSON_SCHEMA_VERSION,
            "generator": f"gputop-hints {__version__}",
            "sampling": {
                "start": self.snapshots[0].timestamp,
                "end": snap.timestamp,
                "duration_s": self.duration_s,
                "samples": len(self.snapshots),
                "interval_s": snap.interval_s,
            },
            **body,
            "host": host,
            "gpus": gpus,
            "processes": processes,
            "findings": [f.to_dict() for f in self.findings],
            "verdicts": [v.to_dict() for v in self.verdicts],
            "costs": None if self.costs is None else self.costs.to_dict(self.cost_per_gpu_hour),
            "stacks": [r.to_dict() for r in self.stacks],
        }

    def to_json_text(self) -> str:
        """The JSON document as ``--json`` prints it (indented, newline-terminated)."""
        import json  # only for --json: not for the text summary

        return json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n"

    # --- text ---------------------------------------------------------------

    def to_text(self, width: int | None = None) -> str:
        """A readable plain-text report (no colour, no cursor movement)."""
        width = width or min(max(shutil.get_terminal_size((100, 24)).columns, 60), 160)
        snap = self.latest
        h = self.history
        out: list[str] = []
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snap.timestamp))
        source = snap.source.upper() + (f" ({snap.source_detail})" if snap.source_detail else "")
        out.append(
            f"gputop-hints {__version__} -- {snap.host.hostname} -- {stamp} -- source: {source}"
        )
        out.append(
            f"driver {snap.driver_version or 'n/a'}  |  {len(self.snapshots)} samples over "
            f"{self.duration_s:.1f} s every {snap.interval_s:g} s  |  values: now (mean over run)"
        )
        if snap.gpu_unavailable_reason:
            out.append("")
            out.append(f"No GPU panels: {snap.gpu_unavailable_reason}")

        out.append("")
        for gpu in snap.gpus:
            out.extend(self._gpu_lines(gpu, width))

        host = snap.host
        out.append("")
        allowed = _mean_of_allowed(h, host.allowed_cores)
        core_means = [s.mean() for s in h.cores]
        busy = [m for m in core_means if m is not None]
        out.append(
            f"CPU   {host.core_count} cores, allowed {core_ranges(host.allowed_cores)}: "
            f"allowed cores {percent(allowed)} busy, all cores "
            f"{percent(sum(busy) / len(busy) if busy else None)}  |  "
            f"iowait {percent(h.iowait_percent.mean())}  |  "
            f"mem {human_bytes(host.memory_used_bytes)}/{human_bytes(host.memory_total_bytes)}  |  "
            f"load {_load(host.load_average)}"
        )

        out.append("")
        if not snap.processes:
            out.append("No GPU processes.")
        else:
            # CONTAINER (the container, pod or batch job) only when some process is
            # in one: on a shared node or Kubernetes the PID says nothing, its cgroup does.
            names = [len(p.container) for p in snap.processes if p.container]
            cw = min(max([*names, len("CONTAINER")]), CONTAINER_TEXT_WIDTH) if names else 0
            out.append(
                f"{'PID':>7} {'USER':<9} "
                + (f"{'CONTAINER':<{cw}} " if cw else "")
                + f"{'GPU':>3} {'VRAM':>8} {'SM%':>5} {'CPU%':>5} "
                f"{'WORKERS':>11} {'RSS':>8}  COMMAND"
            )
            fixed = 7 + 1 + 9 + 1 + (cw + 1 if cw else 0) + 3 + 1 + 8 + 1 + 5 + 1 + 5
            fixed += 1 + 11 + 1 + 8 + 2
            out.extend(
                self._process_line(proc, max(width - fixed, 20), cw)
                for proc in sorted(snap.processes, key=lambda p: (p.gpu_index, p.pid))
            )
        per_process = [f for f in self.findings if f.subject.pid is not None]
        if per_process:
            out.append("")
            out.append("Hints (per process):")
            out.extend(_finding_lines(f, "  ", width, with_subject=True) for f in per_process)
        if self.stacks:
            out.append("")
            out.extend(
                textwrap.fill(
                    f"PID {r.pid}: {where_it_waits_text(r)}",
                    width,
                    initial_indent="  ",
                    subsequent_indent="      ",
                )
                for r in self.stacks
            )
        if self.costs is not None and snap.gpus:
            line = cost_line(
                self.costs,
                len(snap.gpus),
                max(self.duration_s, snap.interval_s),
                self.cost_per_gpu_hour,
            )
            out.append("")
            out.append(
                textwrap.fill(f"Cost over the sample: {line}", width, subsequent_indent="  ")
            )
        if self.findings or snap.gpus:
            out.append("")
            out.append(
                "A one-off summary shows the hints as they stand at the last tick, without "
                "waiting to confirm them; the monitor confirms each over a few seconds."
            )
        # Command lines, user, host and GPU names come from outside: no raw control
        # characters reach the terminal (gputop_hints.text).
        return visible_lines("\n".join(out) + "\n")

    def _gpu_lines(self, gpu: GpuSample, width: int) -> list[str]:
        if gpu.lost:  # not unknown values: NVML says the GPU is gone
            return [f"GPU {gpu.index}  {gpu.name or 'n/a'}  {LOST_GPU_TEXT}"]
        if gpu.not_answering_s is not None:  # an NVML call on it is stuck: no values now
            return [
                f"GPU {gpu.index}  {gpu.name or 'n/a'}  {not_answering_text(gpu.not_answering_s)}"
            ]
        gh = self.history.gpus.get(gpu.index)
        sm_mean = gh.sm_percent.mean() if gh else None
        mem_mean = gh.memory_access_percent.mean() if gh else None
        vram = f"{human_bytes(gpu.vram_used_bytes)}/{human_bytes(gpu.vram_total_bytes)}"
        frac = gpu.vram_fraction
        if frac is not None:
            vram += f" ({frac * 100:.0f}%)"
        link = gpu.pcie_link_bytes_per_s
        link_text = (
            f" of {human_rate(link)} gen{gpu.pcie_generation} x{gpu.pcie_width}"
            if link is not None
            else ""
        )
        verdict = next((v for v in self.verdicts if v.gpu_index == gpu.index), None)
        lines = [
            f"GPU {gpu.index}  {gpu.name or 'n/a'}"
            + (f"  -- {verdict.label}" if verdict is not None else ""),
            f"   SM {percent(gpu.sm_percent, width=4)} ({percent(sm_mean)})   "
            f"mem-access {percent(gpu.memory_access_percent, width=4)} ({percent(mem_mean)})   "
            f"VRAM {vram}",
            f"   PCIe rx {human_rate(gpu.pcie_rx_bytes_per_s)} tx "
            f"{human_rate(gpu.pcie_tx_bytes_per_s)}{link_text}   "
            f"temp {_num(gpu.temperature_c, 'C')}   power {_num(gpu.power_watts, 'W')}"
            f"/{_num(gpu.power_limit_watts, 'W')}   "
            f"throttle {_throttle(gpu.throttle_reasons)}",
        ]
        if gpu.profiling_known:
            lines.append(_profiling_line(gpu, gh))
        elif (reason := gpu.profiling_shown_unavailable) is not None:
            lines.append(f"   GPM n/a: {reason}")
        if verdict is not None:
            lines.append(_verdict_line(verdict, "   ", width))
        lines.extend(
            _finding_lines(f, "   ", width)
            for f in self.findings
            if f.subject.pid is None and f.subject.gpu_index == gpu.index
        )
        return lines

    def _process_line(self, proc: GpuProcess, command_width: int, container_width: int = 0) -> str:
        ph = self.history.process(proc.pid, proc.gpu_index)
        cpu_mean = ph.cpu_percent.mean() if ph else proc.cpu_percent
        workers_cpu = proc.workers_cpu_percent
        workers = f"{len(proc.workers)}/{percent(workers_cpu)}" if proc.workers else "0"
        command = proc.command or proc.name or ""
        if len(command) > command_width:
            command = command[: command_width - 1] + "~"
        container = ""
        if container_width:
            name = proc.container or ""
            if len(name) > container_width:
                name = name[: container_width - 1] + "~"
            container = f"{name:<{container_width}} "
        return (
            f"{proc.pid:>7} {(proc.user or 'n/a')[:9]:<9} {container}{proc.gpu_index:>3} "
            f"{human_bytes(proc.vram_bytes):>8} {percent(proc.sm_percent):>5} "
            f"{percent(cpu_mean):>5} {workers:>11} {human_bytes(proc.rss_bytes):>8}  {command}"
        )


CONTAINER_TEXT_WIDTH = 32
"""The widest CONTAINER cell of the text summary; a longer pod name is cut with ``~``."""


PROFILING_TEXT = (
    ("sm_active_percent", "SM active"),
    ("sm_occupancy_percent", "occupancy"),
    ("tensor_active_percent", "tensor"),
    ("dram_active_percent", "DRAM bw"),
)
"""The GPM/DCGM profiling percentages in a GPU's summary, in PROFILING_FIELDS order."""


def _profiling_line(gpu: GpuSample, gh: GpuHistory | None) -> str:
    """``GPM SM active 82% (80%) ...``: each profiling percentage now (mean over the run)."""
    parts = []
    for name, label in PROFILING_TEXT:
        series = getattr(gh, name) if gh is not None else None
        mean = series.mean() if series is not None else None
        parts.append(f"{label} {percent(getattr(gpu, name), width=4)} ({percent(mean)})")
    return "   GPM " + "   ".join(parts)


def _finding_lines(f: Finding, indent: str, width: int, with_subject: bool = False) -> str:
    """A finding as plain text: the shared rendering under a one-line headline."""
    who = f"{subject_text(f.subject)}: " if with_subject else ""
    headline = f"{indent}[{TEXT_MARK[f.severity]}] {who}{f.label}"
    return "\n".join(finding_lines(f, headline, indent=indent + "      ", width=width))


def _verdict_line(verdict: Verdict, indent: str, width: int) -> str:
    """The GPU's verdict over the sampled ticks, wrapped (docs/hints.md, "Phases")."""
    mark = "[!]" if verdict.severity == "warning" else "[i]"
    text = f"verdict {mark} {verdict.summary}"
    return "\n".join(
        textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "    ")
    )


def where_it_waits_text(reading: StackReading) -> str:
    """``Where it waits (py-spy, 10 samples): 83 % waiting for the next batch at
    Loader.next_batch (train.py:88)``, the next category after it, or why it could not
    be read. The names are the target's own: made visible (gputop_hints.text)."""
    if not reading.categories:
        why = reading.reason or "py-spy read no stack of its main thread"
        return f"Where it waits: not read -- {visible(why)}"
    from gputop_hints.stacks import WORDS

    parts = []
    for category in reading.categories[:2]:
        part = f"{category.share * 100:.0f} % {WORDS.get(category.name, category.name)}"
        if category.top_frames:
            frame = category.top_frames[0].frame
            where = f"{frame.function} ({PurePath(frame.file).name}:{frame.line})"
            part += f" at {visible(where)}"
        parts.append(part)
    return f"Where it waits (py-spy, {reading.samples} samples): " + "; ".join(parts)


def _mean_of_allowed(history: History, allowed: Sequence[int]) -> float | None:
    means = [history.cores[i].mean() for i in allowed if i < len(history.cores)]
    known = [m for m in means if m is not None]
    return sum(known) / len(known) if known else None


def _num(value: float | None, unit: str) -> str:
    return "n/a" if value is None else f"{value:.0f}{unit}"


def _load(load: tuple[float, float, float] | None) -> str:
    return "n/a" if load is None else " ".join(f"{v:.2f}" for v in load)


def _throttle(reasons: tuple[str, ...] | None) -> str:
    if reasons is None:
        return "n/a"
    return ",".join(reasons) if reasons else "none"
