"""``gputop-hints report FILE``: a post-mortem of a recording (or an imported log).

Everything is computed in one streaming pass in constant memory:

* **statistics** per GPU -- mean, p50 and p95 of SM % and memory-access % (from
  fixed 0.5-point histograms: exact to within 0.5 points, rounded down), VRAM
  used (mean %, exact peak), PCIe rx/tx (mean, p95 from log-spaced bins 2 %
  wide, exact peak);
* **hints "as if live"**: the real :class:`~gputop_hints.hints.engine.HintEngine`
  with its time-based hysteresis, fed with full snapshots. On a long recording
  of a big machine it runs every ``k``-th tick (the *hint stride*, see
  :func:`choose_hint_stride`) on a history holding the ticks its window needs;
  each evaluation credits its visible findings with the ticks since the
  previous evaluation, so time-in-finding is exact at stride 1 and within
  ``k`` ticks per episode otherwise;
* **data quality**: gaps, coarse sampling, malformed lines, missing metrics,
  and which rules could not be evaluated for lack of a metric.

The JSON form (``Report.to_json``) is documented in ``docs/recording.md``.
No Textual here.
"""

from __future__ import annotations

import math
import shutil
import textwrap
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gputop_hints import __version__
from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Finding, Severity
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.history import DEFAULT_WINDOW_S, History
from gputop_hints.model import Snapshot
from gputop_hints.recording.format import (
    G_INDEX,
    G_MEM,
    G_POWER,
    G_RX,
    G_SAMPLES,
    G_SM,
    G_TEMPERATURE,
    G_THROTTLE,
    G_TX,
    G_VRAM_USED,
)
from gputop_hints.sources.files.recording import LazyTick, RecordingStream, count_ticks
from gputop_hints.sources.files.stream import (
    METRIC_HOST_CPU,
    METRIC_MEMORY_ACCESS,
    METRIC_PCIE,
    METRIC_POWER,
    METRIC_PROCESSES,
    METRIC_SM,
    METRIC_SUBSECOND,
    METRIC_TEMPERATURE,
    METRIC_THROTTLE,
    METRIC_VRAM,
    SnapshotStream,
    StreamInfo,
)
from gputop_hints.units import human_bytes, human_rate

REPORT_SCHEMA_VERSION = 1

EXIT_OK = 0
EXIT_FINDINGS = 1
"""``--fail-on`` matched: a finding of that severity or worse was shown at some time."""

RULE_NEEDS: dict[str, tuple[str, ...]] = {
    "overlap-explained": (METRIC_SM, METRIC_MEMORY_ACCESS),
    "input-starved": (METRIC_SM, METRIC_PROCESSES, METRIC_HOST_CPU),
    "small-batch": (METRIC_SM, METRIC_VRAM, METRIC_PROCESSES, METRIC_HOST_CPU),
    "pcie-thrash": (METRIC_PCIE, METRIC_SM, METRIC_PROCESSES),
    "memory-bound": (METRIC_SM, METRIC_MEMORY_ACCESS),
    "idle-holding-vram": (METRIC_SM, METRIC_PROCESSES),
    "vram-near-limit": (METRIC_VRAM,),
    "compute-bound": (METRIC_SM,),
    "throttled": (METRIC_THROTTLE, METRIC_SM),
    "straggler": (METRIC_SM, METRIC_PROCESSES),
    "low-utilization": (METRIC_SM,),
}
"""The metrics each rule reads; a rule whose metric a file lacks is "not evaluated"."""

HINT_BUDGET = 50_000
"""Auto stride: about this many (GPU + process) evaluations in all -- ~680 engine
runs (one every ~2 min) on a 24 h 8-GPU, 64-process recording, which keeps that
report near 12 s on 2 cores; every tick on files under ~11 min at that size or
~4.6 h on one GPU with a few processes."""

GAP_FACTOR = 2.0
"""A spacing between ticks over this many intervals is a gap."""
COARSE_INTERVAL_S = 2.0
"""Sampling coarser than this (without sub-second samples) cannot see input stalls."""


# --- constant-memory statistics ----------------------------------------------------


class _BinnedStats:
    """Count, mean and peak of a quantity, and quantiles from bins (subclasses bin)."""

    __slots__ = ("_peak", "count", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self._peak = -math.inf

    @property
    def peak(self) -> float | None:
        return self._peak if self.count else None

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        raise NotImplementedError

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "mean": self.mean,
            "p50": self.quantile(0.5),
            "p95": self.quantile(0.95),
            "max": self.peak,
            "samples": self.count,
        }


class PercentStats(_BinnedStats):
    """Mean, peak and quantiles of a 0-100 quantity, from 0.5-point bins."""

    __slots__ = ("bins",)

    def __init__(self) -> None:
        super().__init__()
        self.bins = [0] * 201

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        if value > self._peak:
            self._peak = value
        i = int(value * 2.0)
        self.bins[0 if i < 0 else 200 if i > 200 else i] += 1

    def quantile(self, q: float) -> float | None:
        """Lower edge of the bin holding the q-quantile (within 0.5 points)."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for i, n in enumerate(self.bins):
            seen += n
            if seen >= rank:
                return i / 2.0
        return 100.0


_LOG_RATIO = math.log(1.02)
_INV_LOG_RATIO = 1.0 / _LOG_RATIO


class RateStats(_BinnedStats):
    """Mean, peak and quantiles of a non-negative rate (bytes/s), from 2 %-wide log bins."""

    __slots__ = ("bins",)

    def __init__(self) -> None:
        super().__init__()
        self.bins: dict[int, int] = {}

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        if value > self._peak:
            self._peak = value
        i = -1 if value < 1.0 else int(math.log(value) * _INV_LOG_RATIO)
        bins = self.bins
        bins[i] = bins.get(i, 0) + 1

    def quantile(self, q: float) -> float | None:
        """Lower edge of the bin holding the q-quantile (within 2 %; 0 below 1 B/s)."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for i in sorted(self.bins):
            seen += self.bins[i]
            if seen >= rank:
                return 0.0 if i < 0 else math.exp(i * _LOG_RATIO)
        return self.peak


@dataclass
class GpuStats:
    index: int
    name: str | None = None
    vram_total_bytes: int | None = None
    ticks: int = 0
    sm: PercentStats = field(default_factory=PercentStats)
    memory_access: PercentStats = field(default_factory=PercentStats)
    vram_percent: PercentStats = field(default_factory=PercentStats)
    vram_peak_bytes: int | None = None
    pcie_rx: RateStats = field(default_factory=RateStats)
    pcie_tx: RateStats = field(default_factory=RateStats)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "ticks": self.ticks,
            "sm_percent": self.sm.to_dict(),
            "memory_access_percent": self.memory_access.to_dict(),
            "vram_used_percent": self.vram_percent.to_dict(),
            "vram_peak_bytes": self.vram_peak_bytes,
            "vram_total_bytes": self.vram_total_bytes,
            "pcie_rx_bytes_per_s": self.pcie_rx.to_dict(),
            "pcie_tx_bytes_per_s": self.pcie_tx.to_dict(),
        }


@dataclass
class FindingTime:
    """How long one finding (rule + subject) was shown over the recording."""

    finding: Finding
    """The finding as first shown at its worst severity: its evidence and advice."""
    seconds: float = 0.0
    first_seen: float = 0.0
    last_seen: float = 0.0
    episodes: int = 0
    worst: Severity = Severity.INFO


# --- the report ------------------------------------------------------------------------


@dataclass
class Report:
    """A post-mortem of one recording: statistics, time in each finding, data quality."""

    info: StreamInfo
    samples: int
    start: float | None
    end: float | None
    interval_s: float | None
    gpus: list[GpuStats]
    findings: list[FindingTime]
    rule_seconds: dict[str, float]
    """Seconds with at least one subject of the rule shown."""
    not_evaluated: dict[str, list[str]]
    """Rule -> the metrics it needs that the file lacks."""
    missing: list[str]
    notes: list[str]
    hint_stride: int
    hint_evaluations: int
    gaps: int = 0
    gap_seconds: float = 0.0
    longest_gap_s: float = 0.0
    elapsed_s: float = 0.0

    @property
    def duration_s(self) -> float:
        if self.start is None or self.end is None:
            return 0.0
        return self.end - self.start + (self.interval_s or 0.0)

    @property
    def observed_s(self) -> float:
        """Sampled time: ticks x interval (what time-in-finding percentages refer to)."""
        return self.samples * (self.interval_s or 0.0)

    def worst_severity(self) -> Severity | None:
        return max((f.worst for f in self.findings), default=None)

    def exit_code(self, fail_on: str | None) -> int:
        """0, or 1 when ``fail_on`` ("warning"/"critical") was reached by a shown finding."""
        if fail_on is None:
            return EXIT_OK
        try:
            level = Severity[fail_on.upper()]
        except KeyError:
            raise ValueError(f"fail_on must be 'warning' or 'critical', got {fail_on!r}") from None
        worst = self.worst_severity()
        return EXIT_FINDINGS if worst is not None and worst >= level else EXIT_OK

    # -- JSON -------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        observed = self.observed_s
        worst = self.worst_severity()
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "generator": f"gputop-hints {__version__}",
            "file": {
                "path": self.info.path,
                "format": self.info.format,
                "detail": self.info.detail,
                "hostname": self.info.hostname,
                "bad_lines": self.info.bad_lines,
                "first_bad_line": self.info.first_bad_line,
                "first_bad_reason": self.info.first_bad_reason,
            },
            "sampling": {
                "start": self.start,
                "end": self.end,
                "duration_s": self.duration_s,
                "samples": self.samples,
                "interval_s": self.interval_s,
                "gaps": self.gaps,
                "gap_seconds": self.gap_seconds,
                "longest_gap_s": self.longest_gap_s,
            },
            "gpus": [g.to_dict() for g in self.gpus],
            "hints": {
                "stride_ticks": self.hint_stride,
                "evaluations": self.hint_evaluations,
                "rules": {
                    rule: {"seconds": s, "percent": _share(s, observed)}
                    for rule, s in sorted(self.rule_seconds.items())
                },
                "not_evaluated": [
                    {"rule": rule, "missing": metrics}
                    for rule, metrics in sorted(self.not_evaluated.items())
                ],
            },
            "findings": [
                {
                    **ft.finding.to_dict(),
                    "worst_severity": ft.worst.label,
                    "seconds": ft.seconds,
                    "percent": _share(ft.seconds, observed),
                    "first_seen": ft.first_seen,
                    "last_seen": ft.last_seen,
                    "episodes": ft.episodes,
                }
                for ft in self.findings
            ],
            "missing": self.missing,
            "notes": self.notes,
            "worst_severity": None if worst is None else worst.label,
        }

    # -- text -------------------------------------------------------------------

    def to_text(self, width: int | None = None, top: int = 10) -> str:
        """A readable post-mortem (plain text, no colour)."""
        width = width or min(max(shutil.get_terminal_size((100, 24)).columns, 60), 160)
        out: list[str] = []
        info = self.info
        out.append(f"gputop-hints {__version__} report -- {info.path}")
        host = info.hostname or "unknown host"
        if self.samples:
            assert self.start is not None and self.end is not None
            out.append(
                f"{host}: {_stamp(self.start)} -> {_stamp(self.end)} "
                f"({_duration(self.duration_s)}), {self.samples} samples every "
                f"{self.interval_s or 0:g} s"
            )
        else:
            out.append(f"{host}: no samples")
        out.append("")
        if self.gpus:
            out.append(
                f"{'GPU':>3}  {'SM % mean/p50/p95':>18}  {'mem % mean/p50/p95':>19}  "
                f"{'VRAM peak':>17}  {'PCIe rx mean/p95/max':>30}  {'PCIe tx mean/max':>20}"
            )
            for g in self.gpus:
                vram = human_bytes(g.vram_peak_bytes)
                if g.vram_peak_bytes is not None and g.vram_total_bytes:
                    vram += f" ({g.vram_peak_bytes / g.vram_total_bytes * 100:.0f}%)"
                out.append(
                    f"{g.index:>3}  {_triple(g.sm):>18}  {_triple(g.memory_access):>19}  "
                    f"{vram:>17}  "
                    f"{_rates(g.pcie_rx.mean, g.pcie_rx.quantile(0.95), g.pcie_rx.peak):>30}  "
                    f"{_rates(g.pcie_tx.mean, g.pcie_tx.peak):>20}"
                    + (f"  {g.name}" if g.name else "")
                )
            out.append("")
        observed = self.observed_s
        if self.rule_seconds:
            out.append("Time in each finding (any subject):")
            for rule, s in sorted(self.rule_seconds.items(), key=lambda kv: -kv[1]):
                out.append(f"  {rule:<20} {_duration(s):>10}  {_pct(_share(s, observed))}")
            out.append("")
        shown = self.findings[:top]
        if shown:
            more = len(self.findings) - len(shown)
            out.append(
                "Top findings (worst first, then longest)"
                + (f"; {more} more in --json" if more > 0 else "")
                + ":"
            )
            for ft in shown:
                out.extend(_finding_block(ft, observed, width))
            out.append("")
        elif self.samples:
            out.append("No findings were shown at any time.")
            out.append("")
        if self.not_evaluated:
            for rule, metrics in sorted(self.not_evaluated.items()):
                out.append(f"not evaluated: {rule} (no {', '.join(metrics)} in this file)")
            out.append("")
        if self.notes:
            out.append("Data quality:")
            out.extend(f"  - {n}" for n in self.notes)
        return "\n".join(out).rstrip("\n") + "\n"


def _finding_block(ft: FindingTime, observed: float, width: int) -> list[str]:
    f = ft.finding
    mark = {Severity.INFO: "i", Severity.WARNING: "!", Severity.CRITICAL: "!!"}[ft.worst]
    who = (
        f"pid {f.subject.pid} on GPU {f.subject.gpu_index}"
        if f.subject.pid is not None
        else (f"GPU {f.subject.gpu_index}")
    )
    lines = [
        f"  [{mark}] {f.rule_label} -- {who}: {_duration(ft.seconds)} "
        f"({_pct(_share(ft.seconds, observed))}) in {ft.episodes} episode(s), "
        f"{_stamp(ft.first_seen)} -> {_stamp(ft.last_seen)}",
        *_wrap(f.summary, width, "        "),
    ]
    for e in f.evidence:
        lines.extend(_wrap(e.describe(), width, "        evidence: ", "                  "))
    for a in f.advice:
        lines.extend(_wrap(a, width, "        advice:   ", "                  "))
    if f.anchor:
        lines.append(f"        more:     docs/hints.md#{f.anchor}")
    return lines


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "~"


def _wrap(text: str, width: int, first: str, rest: str | None = None) -> list[str]:
    """Word-wrap ``text`` to ``width`` (a report is read in full: nothing is cut off)."""
    return textwrap.wrap(
        text,
        max(width, len(first) + 20),
        initial_indent=first,
        subsequent_indent=first if rest is None else rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _share(seconds: float, observed: float) -> float | None:
    return seconds / observed * 100.0 if observed > 0 else None


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:5.1f} %"


def _triple(s: PercentStats) -> str:
    if not s.count:
        return "n/a"
    mean, p50, p95 = s.mean, s.quantile(0.5), s.quantile(0.95)
    assert mean is not None and p50 is not None and p95 is not None
    return f"{mean:.0f}/{p50:.0f}/{p95:.0f}"


def _rates(*values: float | None) -> str:
    if all(v is None for v in values):
        return "n/a"
    return "/".join(human_rate(v) for v in values)


def _stamp(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


# --- building it -------------------------------------------------------------------------


def choose_hint_stride(ticks: int, entities: int, budget: int = HINT_BUDGET) -> int:
    """Evaluate the hints every k-th tick so that ticks / k * entities stays near ``budget``."""
    if ticks <= 0:
        return 1
    return max(1, math.ceil(ticks * max(1, entities) / budget))


@dataclass
class _Tick:
    """What the report needs of one tick: time, GPU columns, and maybe the snapshot."""

    timestamp: float
    gpus: list[Any]
    lazy: LazyTick | None = None
    snapshot: Snapshot | None = None

    def full(self) -> Snapshot | None:
        if self.snapshot is None and self.lazy is not None:
            self.snapshot = self.lazy.snapshot()
        return self.snapshot


def _gpu_row(g: Any) -> list[Any]:
    flat: list[float] = []
    for s in g.sm_samples:
        flat.extend((s.timestamp, s.percent))
    return [
        g.index,
        g.sm_percent,
        g.memory_access_percent,
        g.vram_used_bytes,
        g.pcie_rx_bytes_per_s,
        g.pcie_tx_bytes_per_s,
        g.temperature_c,
        g.power_watts,
        g.sm_clock_mhz,
        None if g.throttle_reasons is None else list(g.throttle_reasons),
        flat,
    ]


def _ticks_of(stream: SnapshotStream) -> Iterator[_Tick]:
    if isinstance(stream, RecordingStream):
        for lazy in stream.lazy_ticks():
            yield _Tick(lazy.timestamp, lazy.gpus, lazy=lazy)
        return
    for snap in stream:
        yield _Tick(snap.timestamp, [_gpu_row(g) for g in snap.gpus], snapshot=snap)


def build_report(
    stream: SnapshotStream,
    thresholds: Thresholds | None = None,
    *,
    hint_stride: int | None = None,
) -> Report:
    """Read ``stream`` once and build its post-mortem.

    ``hint_stride`` = k evaluates the hints every k-th tick (1: every tick, as
    live). None picks it: for a recording file, :func:`choose_hint_stride` on a
    fast count of its ticks; for other streams (imported logs), every tick.
    """
    started = time.perf_counter()
    thresholds = thresholds or Thresholds.defaults()
    info = stream.info
    stride = hint_stride
    if stride is None:
        stride = 1
        if isinstance(stream, RecordingStream) and stream.header:
            n = count_ticks(stream.path)
            first_procs = 0
            for first in _first_ticks(stream):
                first_procs = len(first.processes) + len(first.gpus)
            stride = choose_hint_stride(n, first_procs + 1)
    if stride < 1:
        raise ValueError("hint_stride must be >= 1")

    listed: Any = info.header.get("gpus")
    header_gpus = {
        int(g["index"]): g
        for g in (listed if isinstance(listed, list) else ())
        if isinstance(g, dict)
    }
    interval = info.interval_s
    # Exactly the ticks a Window reads (round(window_s / interval)): older ones in
    # the history are from the previous burst and no rule looks at them.
    window_ticks = max(1, round(thresholds.general.window_s / (interval or 1.0)))
    burst_from = max(0, stride - window_ticks)
    engine = HintEngine(thresholds)
    history: History | None = None

    gpus: dict[int, GpuStats] = {}
    seen = {
        m: False
        for m in (
            METRIC_SM,
            METRIC_MEMORY_ACCESS,
            METRIC_VRAM,
            METRIC_PCIE,
            METRIC_THROTTLE,
            METRIC_POWER,
            METRIC_TEMPERATURE,
            METRIC_SUBSECOND,
            METRIC_PROCESSES,
            METRIC_HOST_CPU,
        )
    }
    full_seen = 0
    samples = 0
    start = end = None
    last_ts: float | None = None
    gaps = 0
    gap_seconds = 0.0
    longest_gap = 0.0
    backwards = 0
    times: dict[tuple[str, Any], FindingTime] = {}
    rule_seconds: dict[str, float] = {}
    visible_before: set[tuple[str, Any]] = set()
    evaluations = 0
    last_eval = -1
    i = -1
    for i, tick in enumerate(_ticks_of(stream)):
        ts = tick.timestamp
        samples += 1
        if start is None:
            start = ts
        end = ts if end is None or ts > end else end
        if interval is None and last_ts is not None and ts > last_ts:
            interval = ts - last_ts
        if last_ts is not None:
            dt = ts - last_ts
            if dt < 0:
                backwards += 1
            elif interval and dt > GAP_FACTOR * interval:
                gaps += 1
                gap_seconds += dt - interval
                longest_gap = max(longest_gap, dt)
        last_ts = ts
        try:
            for g in tick.gpus:
                _add_gpu(gpus, header_gpus, g, seen)
        except (IndexError, TypeError, ValueError):
            pass  # a malformed GPU column: the rest of the tick still counts

        if i % stride < burst_from:
            continue
        snap = tick.full()
        if snap is None:
            continue
        full_seen += 1
        if snap.processes:
            seen[METRIC_PROCESSES] = True
        if any(v is not None for v in snap.host.cpu_percent_per_core):
            seen[METRIC_HOST_CPU] = True
        if history is None or snap.interval_s != history.interval_s:
            history = History(window_s=DEFAULT_WINDOW_S, interval_s=snap.interval_s)
        history.append(snap)
        if i % stride != stride - 1:
            continue
        visible = engine.update(history)
        evaluations += 1
        credit = (i - last_eval) * snap.interval_s
        last_eval = i
        now_keys: set[tuple[str, Any]] = set()
        rules_now: set[str] = set()
        for f in visible:
            now_keys.add(f.key)
            rules_now.add(f.rule)
            ft = times.get(f.key)
            if ft is None:
                ft = times[f.key] = FindingTime(f, first_seen=snap.timestamp, worst=f.severity)
            if f.severity > ft.worst:
                ft.worst = f.severity
                ft.finding = f
            ft.seconds += credit
            ft.last_seen = snap.timestamp
            if f.key not in visible_before:
                ft.episodes += 1
        for rule in rules_now:
            rule_seconds[rule] = rule_seconds.get(rule, 0.0) + credit
        visible_before = now_keys

    missing = set(info.missing)
    if samples:
        missing |= {m for m, ok in seen.items() if not ok and (m not in _FULL_ONLY or full_seen)}
    not_evaluated = {
        rule: [m for m in needs if m in missing]
        for rule, needs in RULE_NEEDS.items()
        if any(m in missing for m in needs)
    }
    findings = sorted(times.values(), key=lambda ft: (-ft.worst, -ft.seconds, ft.first_seen))
    report = Report(
        info=info,
        samples=samples,
        start=start,
        end=end,
        interval_s=interval,
        gpus=[gpus[k] for k in sorted(gpus)],
        findings=findings,
        rule_seconds=rule_seconds,
        not_evaluated=not_evaluated if samples else {},
        missing=sorted(missing),
        notes=[],
        hint_stride=stride,
        hint_evaluations=evaluations,
        gaps=gaps,
        gap_seconds=gap_seconds,
        longest_gap_s=longest_gap,
    )
    report.notes = _notes(report, seen, backwards, getattr(stream, "truncated", False))
    report.elapsed_s = time.perf_counter() - started
    return report


_FULL_ONLY = (METRIC_PROCESSES, METRIC_HOST_CPU)
"""Metrics seen only in fully decoded ticks (the GPU columns are read on every tick)."""


def _first_ticks(stream: RecordingStream) -> Iterable[Snapshot]:
    for lazy in stream.lazy_ticks():
        snap = lazy.snapshot()
        if snap is not None:
            yield snap
            return


def _add_gpu(
    gpus: dict[int, GpuStats],
    header_gpus: dict[int, Any],
    g: list[Any],
    seen: dict[str, bool],
) -> None:
    index = g[G_INDEX]
    st = gpus.get(index)
    if st is None:
        static = header_gpus.get(index, {})
        st = gpus[index] = GpuStats(int(index), static.get("name"), static.get("vram_total_bytes"))
    st.ticks += 1
    sm = g[G_SM]
    if sm is not None:
        st.sm.add(sm)
        seen[METRIC_SM] = True
    mem = g[G_MEM]
    if mem is not None:
        st.memory_access.add(mem)
        seen[METRIC_MEMORY_ACCESS] = True
    used = g[G_VRAM_USED]
    if used is not None:
        seen[METRIC_VRAM] = True
        if st.vram_peak_bytes is None or used > st.vram_peak_bytes:
            st.vram_peak_bytes = used
        if st.vram_total_bytes:
            st.vram_percent.add(used / st.vram_total_bytes * 100.0)
    rx, tx = g[G_RX], g[G_TX]
    if rx is not None:
        st.pcie_rx.add(rx)
        seen[METRIC_PCIE] = True
    if tx is not None:
        st.pcie_tx.add(tx)
        seen[METRIC_PCIE] = True
    if g[G_THROTTLE] is not None:
        seen[METRIC_THROTTLE] = True
    if g[G_POWER] is not None:
        seen[METRIC_POWER] = True
    if g[G_TEMPERATURE] is not None:
        seen[METRIC_TEMPERATURE] = True
    if g[G_SAMPLES]:
        seen[METRIC_SUBSECOND] = True


def _notes(report: Report, seen: dict[str, bool], backwards: int, truncated: bool) -> list[str]:
    notes: list[str] = []
    info = report.info
    if not report.samples:
        notes.append(
            "the file holds no samples"
            + (f" ({info.detail})" if info.detail else "")
            + ": nothing to report."
        )
    interval = report.interval_s
    if interval and interval > COARSE_INTERVAL_S and not seen[METRIC_SUBSECOND]:
        notes.append(
            f"1 sample per {interval:g} s: too coarse to see input stalls (idle gaps last "
            "well under a second; input-starved needs ~1 s sampling or NVML's sub-second "
            "samples)."
        )
    if interval and interval * 2 > 6.0 + 1e-9:
        notes.append(
            f"with a {interval:g} s interval the hints' window holds fewer than 3 samples: "
            "their conclusions are weak."
        )
    if report.gaps:
        notes.append(
            f"{report.gaps} gap(s) in the sampling, {_duration(report.gap_seconds)} in all, "
            f"the longest {_duration(report.longest_gap_s)} (recorder paused or stopped?)."
        )
    if backwards:
        notes.append(f"{backwards} tick(s) went back in time (clock change or concatenated files).")
    if info.bad_lines:
        notes.append(
            f"{info.bad_lines} malformed line(s) skipped, the first at line "
            f"{info.first_bad_line}: {info.first_bad_reason}."
        )
    if truncated:
        notes.append(
            "the file ends mid-line: the recorder was killed while writing (last tick lost)."
        )
    notes.extend(
        f"no {metric} in this file: it is absent from the statistics, not zero."
        for metric in report.missing
    )
    if report.hint_stride > 1:
        notes.append(
            f"hints evaluated every {report.hint_stride} ticks ({report.hint_evaluations} "
            "evaluations) to keep the report fast: time in each finding is counted in steps "
            f"of {report.hint_stride} ticks, and an episode shorter than that may be missed."
        )
    return notes


def report_file(
    path: str,
    thresholds: Thresholds | None = None,
    *,
    hint_stride: int | None = None,
) -> Report:
    """Open a recording and build its report (closes the file)."""
    from gputop_hints.sources.files.recording import open_recording

    stream = open_recording(path)
    try:
        return build_report(stream, thresholds, hint_stride=hint_stride)
    finally:
        stream.close()
