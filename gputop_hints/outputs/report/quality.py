"""The report's data-quality notes: what the file cannot show, and why.

Each note names a limit of the data -- sampling too coarse to see input stalls,
a window too short for firm conclusions, gaps, time running backwards,
malformed or cut-off lines, metrics the file lacks, hints evaluated on a stride
-- so a reader does not mistake an absence of evidence for a healthy job.
No Textual here.
"""

from __future__ import annotations

from gputop_hints.hints.rules.signals import LEVEL_SAMPLES
from gputop_hints.outputs.report.model import Report
from gputop_hints.units import duration_text

GAP_FACTOR = 2.0
"""A spacing between ticks over this many intervals is a gap."""
AVERAGING_FORMATS = frozenset({"wandb", "mlflow"})
"""Logs whose readings are means over the logging interval: the Python system monitor
that wrote ``wandb-events.jsonl`` logged the mean of 15 samples 2 s apart, MLflow's
logs the mean of the samples it took since the last one (``aggregate_metrics``).
nvidia-smi's readings are the GPU's own last sample period (up to ~1 s). (W&B's run
files of newer versions are left out: their monitor is another program.)"""
COARSE_INTERVAL_S = 2.0
"""Sampling coarser than this (without sub-second samples) cannot see input stalls."""


def quality_notes(report: Report, *, subsecond: bool, backwards: int, truncated: bool) -> list[str]:
    """The notes for ``report``: ``subsecond`` says the file has NVML's sub-second
    samples, ``backwards`` counts ticks that went back in time, ``truncated`` says
    the file ends mid-line."""
    notes: list[str] = []
    info = report.info
    if not report.samples:
        notes.append(
            "the file holds no samples"
            + (f" ({info.detail})" if info.detail else "")
            + ": nothing to report."
        )
    interval = report.interval_s
    if interval and interval > COARSE_INTERVAL_S and not subsecond:
        notes.append(
            f"1 sample per {interval:g} s: too coarse to see input stalls (idle gaps last "
            "well under a second; input-starved needs ~1 s sampling or NVML's sub-second "
            "samples)."
        )
    if interval and interval * 2 > 6.0 + 1e-9:
        what = (
            "the mean of the samples its tool took over that time"
            if info.format in AVERAGING_FORMATS
            else "the GPU's last ~1 s"
        )
        notes.append(
            f"one reading per {interval:g} s is the log's resolution, not missing data: each "
            f"is {what}, so levels are judged over "
            f"{duration_text(LEVEL_SAMPLES * interval)} ({LEVEL_SAMPLES} readings) and "
            "'steady' over 6; gaps, sawtooth and their causes are below this resolution."
        )
    if report.gaps:
        notes.append(
            f"{report.gaps} gap(s) in the sampling, {duration_text(report.gap_seconds)} in all, "
            f"the longest {duration_text(report.longest_gap_s)} (recorder paused or stopped?)."
        )
    if backwards:
        notes.append(f"{backwards} tick(s) went back in time (clock change or concatenated files).")
    inferred = info.header.get("inferred_columns")
    if isinstance(inferred, dict) and inferred:
        notes.append(
            "no header row: columns read by their values as "
            + ", ".join(f"{column} {name}" for column, name in inferred.items())
            + " (if one is wrong, name them with --map, docs/import.md)."
        )
    counters = report.counters
    polls = info.header.get("polls")
    if isinstance(polls, dict):
        gpus = polls.get("gpus")
        notes.append(
            "no index column: GPUs assigned by position within each poll (nvidia-smi prints "
            f"them in index order), {gpus} rows per poll, poll period "
            f"{polls.get('period_s'):g} s."
        )
        short = counters.found.get("short_polls", 0)
        long = counters.found.get("long_polls", 0)
        if short:
            notes.append(
                f"{short} short poll(s) (fewer than {gpus} rows: a GPU's query failed or the "
                "log was cut) dropped: without an index column the missing GPU cannot be told."
            )
        if long:
            notes.append(f"{long} poll(s) of more than {gpus} rows dropped.")
    if counters.bad_lines:
        notes.append(
            f"{counters.bad_lines} malformed line(s) skipped, the first at line "
            f"{counters.first_bad_line}: {counters.first_bad_reason}."
        )
    cut = counters.found.get("stream_cut")
    if isinstance(cut, str):
        notes.append(f"{cut}.")
    elif truncated:
        notes.append(
            "the file ends mid-line: the recorder was killed while writing (last tick lost)."
        )
    notes.extend(
        f"no {metric} in this file: it is absent from the statistics, not zero."
        for metric in report.missing
    )
    if report.hint_stride > 1:
        k = report.hint_stride
        step = f"{k} ticks"
        if report.interval_s:
            step += f" ({duration_text(k * report.interval_s)} of log time)"
        notes.append(
            f"hints evaluated every {step}, {report.hint_evaluations} evaluations: at most "
            "once a second of log time (the cadence the rules are stated at) and few enough "
            "to keep the report fast; time in each finding is counted in steps of "
            f"{k} ticks, and an episode shorter than that may be missed."
        )
    return notes
