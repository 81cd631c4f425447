"""The report as a person reads it (plain text) and as a program reads it (JSON).

The JSON form is documented in ``docs/recording.md``; ``REPORT_SCHEMA_VERSION``
changes whenever a field is renamed or removed. No Textual here.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from typing import Any

from gputop_hints import __version__
from gputop_hints.hints.findings import Evidence
from gputop_hints.model import PROFILING_FIELDS
from gputop_hints.outputs.cost_text import cost_line
from gputop_hints.outputs.finding_text import TEXT_MARK, finding_lines, subject_text
from gputop_hints.outputs.report.model import FindingTime, Report
from gputop_hints.outputs.report.stats import PercentStats
from gputop_hints.stacks import WORDS, StackReading
from gputop_hints.text import visible_lines
from gputop_hints.units import duration_text, human_bytes, human_rate

REPORT_SCHEMA_VERSION = 1


# --- JSON ---------------------------------------------------------------------------


def report_json(report: Report, cost_per_gpu_hour: float | None = None) -> dict[str, Any]:
    """The report as one JSON-ready document."""
    info = report.info
    worst = report.worst_severity()
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "generator": f"gputop-hints {__version__}",
        "file": {
            "path": info.path,
            "format": info.format,
            "detail": info.detail,
            "hostname": info.hostname,
            "bad_lines": report.counters.bad_lines,
            "first_bad_line": report.counters.first_bad_line,
            "first_bad_reason": report.counters.first_bad_reason,
        },
        "sampling": {
            "start": report.start,
            "end": report.end,
            "duration_s": report.duration_s,
            "samples": report.samples,
            "interval_s": report.interval_s,
            "gaps": report.gaps,
            "gap_seconds": report.gap_seconds,
            "longest_gap_s": report.longest_gap_s,
        },
        "gpus": [g.to_dict() for g in report.gpus],
        "verdicts": [v.to_dict() for v in report.verdicts],
        "costs": report.costs().to_dict(cost_per_gpu_hour),
        "processes": [p.to_dict() for p in report.processes],
        "processes_dropped": report.processes_dropped,
        "hints": {
            "stride_ticks": report.hint_stride,
            "evaluations": report.hint_evaluations,
            "rules": {
                rule: {"seconds": s, "percent": report.share(s)}
                for rule, s in sorted(report.rule_seconds.items())
            },
            "not_evaluated": [
                {"rule": rule, "missing": metrics}
                for rule, metrics in sorted(report.not_evaluated.items())
            ],
        },
        "findings": [
            {
                **ft.finding.to_dict(),
                "worst_severity": ft.worst.label,
                "seconds": ft.seconds,
                "percent": report.share(ft.seconds),
                "first_seen": ft.first_seen,
                "last_seen": ft.last_seen,
                "episodes": ft.episodes,
                "lost_gpu_seconds": ft.lost_s,
                "lost_energy_j": ft.energy_j if ft.energy_weight > 0 else None,
                "stack": None
                if ft.stack is None
                else {"taken_at": ft.stack[0], **ft.stack[1].to_dict()},
            }
            for ft in report.findings
        ],
        "missing": report.missing,
        "notes": report.notes,
        "worst_severity": None if worst is None else worst.label,
    }


def report_json_text(report: Report, cost_per_gpu_hour: float | None = None) -> str:
    """The JSON document as ``report --json`` prints it (indented, newline-terminated)."""
    return json.dumps(report_json(report, cost_per_gpu_hour), indent=2, allow_nan=False) + "\n"


# --- text ---------------------------------------------------------------------------


def report_text(
    report: Report,
    width: int | None = None,
    top: int = 10,
    cost_per_gpu_hour: float | None = None,
) -> str:
    """A readable post-mortem (plain text, no colour); ``top`` findings in full."""
    width = width or min(max(shutil.get_terminal_size((100, 24)).columns, 60), 160)
    out = _heading(report)
    if report.samples and report.gpus:
        line = cost_line(report.costs(), len(report.gpus), report.duration_s, cost_per_gpu_hour)
        out.extend(_wrap(line, width, "", "  "))
    out.append("")
    if report.verdicts:
        out.extend(_verdict_lines(report, width))
        out.append("")
    if report.gpus:
        out.extend(_gpu_table(report))
        out.extend(_profiling_table(report))
        out.append("")
    if report.processes:
        out.extend(_process_table(report, top))
        out.append("")
    if report.rule_seconds:
        out.append("Time in each finding (any subject):")
        for rule, s in sorted(report.rule_seconds.items(), key=lambda kv: (-kv[1], kv[0])):
            out.append(f"  {rule:<20} {duration_text(s):>10}  {_pct(report.share(s))}")
        out.append("")
    shown = report.findings[:top]
    if shown:
        more = len(report.findings) - len(shown)
        out.append(
            "Top findings (worst first, then longest)"
            + (f"; {more} more in --json" if more > 0 else "")
            + ":"
        )
        origin = _elapsed_origin(report)
        for ft in shown:
            out.extend(_finding_block(ft, report.share(ft.seconds), width, origin))
        out.append("")
    elif report.samples:
        out.append("No findings were shown at any time.")
        out.append("")
    if report.not_evaluated:
        for rule, metrics in sorted(report.not_evaluated.items()):
            out.append(f"not evaluated: {rule} (no {', '.join(metrics)} in this file)")
        out.append("")
    if report.notes:
        out.append("Data quality:")
        out.extend(f"  - {n}" for n in report.notes)
    # File names, CSV headers and cells, command lines come from outside: no raw
    # control characters reach the terminal (gputop_hints.text).
    return visible_lines("\n".join(out).rstrip("\n") + "\n")


def _verdict_lines(report: Report, width: int) -> list[str]:
    """Each GPU's verdict over the whole file, first: what a person asks before the rest."""
    out = ["Verdict per GPU (over the whole file; docs/hints.md#phases-and-the-per-gpu-verdict):"]
    for v in report.verdicts:
        mark = "[!]" if v.severity == "warning" else "[i]"
        out.extend(_wrap(v.summary, width, f"  {mark} ", "      "))
    return out


def _heading(report: Report) -> list[str]:
    """What file, which host, when and how often it was sampled."""
    info = report.info
    inputs = [info.path]
    process_log = info.header.get("process_log")
    if isinstance(process_log, str):
        inputs.append(f"{process_log} (processes)")
    lines = [f"gputop-hints {__version__} report -- {' + '.join(inputs)}"]
    host = info.hostname or "unknown host"
    if report.samples:
        assert report.start is not None and report.end is not None
        origin = _elapsed_origin(report)
        lines.append(
            f"{host}: {_stamp(report.start, origin)} -> {_stamp(report.end, origin)} "
            f"({duration_text(report.duration_s)}), {report.samples} samples every "
            f"{report.interval_s or 0:g} s{_assumed(info.detail)}"
        )
    else:
        lines.append(f"{host}: no samples")
    return lines


def _no_times(detail: str) -> bool:
    """Whether the reader found no timestamps in the file (its detail says so)."""
    return "no timestamps" in detail


def _assumed(detail: str) -> str:
    """Where the interval is the readers' guess, not the file's (it has no times, or too
    few to measure): said, with what to give instead."""
    if _no_times(detail) or "interval unknown" in detail:
        return " (assumed: the file does not say; give --interval)"
    return ""


def _gpu_table(report: Report) -> list[str]:
    """One row of statistics per GPU, under a header."""
    lines = [
        f"{'GPU':>3}  {'SM % mean/p50/p95':>18}  {'mem % mean/p50/p95':>19}  "
        f"{'VRAM peak':>17}  {'PCIe rx mean/p95/max':>30}  {'PCIe tx mean/max':>20}"
    ]
    for g in report.gpus:
        vram = human_bytes(g.vram_peak_bytes)
        if g.vram_peak_bytes is not None and g.vram_total_bytes:
            vram += f" ({g.vram_peak_bytes / g.vram_total_bytes * 100:.0f}%)"
        lines.append(
            f"{g.index:>3}  {_triple(g.sm):>18}  {_triple(g.memory_access):>19}  "
            f"{vram:>17}  "
            f"{_rates(g.pcie_rx.mean, g.pcie_rx.quantile(0.95), g.pcie_rx.peak):>30}  "
            f"{_rates(g.pcie_tx.mean, g.pcie_tx.peak):>20}" + (f"  {g.name}" if g.name else "")
        )
    return lines


def _profiling_table(report: Report) -> list[str]:
    """DCGM's profiling percentages per GPU, where the input had them (dcgmi dmon)."""
    if not any(g.profiled for g in report.gpus):
        return []
    lines = [
        "",
        f"{'GPU':>3}  {'SM active mean/p95':>18}  {'occupancy mean/p95':>18}  "
        f"{'tensor mean/p95':>15}  {'DRAM active mean/p95':>20}   (DCGM profiling)"
    ]
    for g in report.gpus:
        cells = [_pair(g.profiling[name]) for name in PROFILING_FIELDS]
        lines.append(
            f"{g.index:>3}  {cells[0]:>18}  {cells[1]:>18}  {cells[2]:>15}  {cells[3]:>20}"
        )
    return lines


def _process_table(report: Report, top: int) -> list[str]:
    """The heaviest GPU processes: GPU time, memory, CPU, how long they were seen."""
    shown = report.processes[:top]
    more = len(report.processes) - len(shown) + report.processes_dropped
    read = report.hint_evaluations if report.hint_stride > 1 else report.samples
    lines = [
        f"GPU processes ({len(report.processes) + report.processes_dropped}; "
        + (f"the {len(shown)} busiest" if more > 0 else "busiest first")
        + (f", from the {read} ticks read in full" if report.hint_stride > 1 else "")
        + (f"; {more} more in --json" if more > 0 and not report.processes_dropped else "")
        + "):",
        f"{'PID':>8}  {'GPU':>3}  {'SM % mean/max':>13}  {'mem % mean':>10}  "
        f"{'CPU % mean':>10}  {'VRAM peak':>10}  {'seen':>10}  name",
    ]
    for p in shown:
        seen = p.last_seen - p.first_seen + (report.interval_s or 0.0)
        sm = "n/a" if p.sm.mean is None else f"{p.sm.mean:.0f}/{p.sm.peak:.0f}"
        mem = "n/a" if p.memory_access.mean is None else f"{p.memory_access.mean:.0f}"
        cpu = "n/a" if p.cpu.mean is None else f"{p.cpu.mean:.0f}"
        who = (p.name or "?") + (f" ({p.user})" if p.user else "")
        if p.container:
            who += f" in {p.container}"
        lines.append(
            f"{p.pid:>8}  {p.gpu_index:>3}  {sm:>13}  {mem:>10}  {cpu:>10}  "
            f"{human_bytes(p.vram_peak_bytes):>10}  {duration_text(seen):>10}  {who}"
        )
    if report.processes_dropped:
        lines.append(
            f"  ({report.processes_dropped} short-lived, light processes not kept: "
            "the table holds the heaviest 1000)"
        )
    return lines


def _pair(s: PercentStats) -> str:
    if not s.count:
        return "n/a"
    mean, p95 = s.mean, s.quantile(0.95)
    assert mean is not None and p95 is not None
    return f"{mean:.0f}/{p95:.0f}"


def _finding_block(
    ft: FindingTime, share: float | None, width: int, origin: float | None = None
) -> list[str]:
    """A finding as the report shows it: how long it held, then the shared text."""
    f = ft.finding
    headline = (
        f"  [{TEXT_MARK[ft.worst]}] {f.rule_label} -- {subject_text(f.subject)}: "
        f"{duration_text(ft.seconds)} ({_pct(share)}) in {ft.episodes} episode(s), "
        f"{_stamp(ft.first_seen, origin)} -> {_stamp(ft.last_seen, origin)}"
    )
    def over_episodes(e: Evidence) -> str | None:
        seen = ft.evidence.get(e.metric)
        if seen is None or seen.mean is None:
            return None  # never known while shown: the finding's own "n/a"
        if seen.count == 1 or e.shown(seen.low) == e.shown(seen.high):
            return e.shown(seen.mean)
        return f"mean {e.shown(seen.mean)}, range {e.shown(seen.low)}-{e.shown(seen.high)}"

    lines = finding_lines(
        f,
        headline,
        indent="        ",
        width=width,
        summary=f"as first shown: {f.summary}",
        evidence_value=over_episodes,
    )
    if ft.stack is not None:
        lines.extend(_wrap(where_it_waits(*ft.stack, origin), width, "        ", "          "))
    return lines


def where_it_waits(taken_at: float, reading: StackReading, origin: float | None = None) -> str:
    """The recorded stack reading quoted under a finding: "where it waits (py-spy, 40
    samples at 14:02:11): 83 % waiting for the next batch at Loader.next_batch
    (train.py:88)" -- the main thread's largest share and its top frame, user code first.
    The names are the target's own: report_text makes them visible (gputop_hints.text)."""
    clock = (
        time.strftime("%H:%M:%S", time.localtime(taken_at))
        if origin is None
        else _stamp(taken_at, origin)
    )
    if not reading.samples or not reading.categories:
        why = reading.reason or "no samples"
        return f"where it waits (py-spy at {clock}, pid {reading.pid}): not read -- {why}"
    top = reading.categories[0]
    text = (
        f"where it waits (py-spy, {reading.samples} samples at {clock}): "
        f"{top.share * 100:.0f} % {WORDS.get(top.name, top.name)}"
    )
    if top.top_frames:
        text += f" at {top.top_frames[0].frame.where()}"
    return text


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


RELATIVE_BEFORE_S = 315532800.0
"""Timestamps before 1980-01-01 are no wall clock (no GPU log predates CUDA): the log has
none, or an elapsed-time column, and its times are seconds since its start."""


def _elapsed_origin(report: Report) -> float | None:
    """The log's start where its times are elapsed seconds, not dates (None: dates)."""
    start = report.start
    if start is None:
        return None
    if _no_times(report.info.detail) or start < RELATIVE_BEFORE_S:
        return start
    return None


def _stamp(ts: float, origin: float | None = None) -> str:
    """A date and time, or -- in a log without a wall clock -- the time since its start."""
    if origin is None:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
    whole = max(0, round(ts - origin))
    return f"+{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"
