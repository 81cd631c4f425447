"""``gputop-hints report FILE``: a post-mortem of a recording or a log.

The report itself is :mod:`gputop_hints.outputs.report`; this module reads the
arguments, opens FILE and prints the text or JSON. With ``--prometheus URL --job
ID`` the input is a multi-node job read back from Prometheus instead
(:mod:`gputop_hints.sources.prometheus`), and the report adds its nodes
(:mod:`gputop_hints.outputs.job_report`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gputop_hints.cli.args import (
    EXIT_USAGE,
    add_cost_arg,
    add_input_args,
    duration,
    positive,
    usage_error,
)
from gputop_hints.cli.inputs import input_errors, open_input
from gputop_hints.cli.progress import ReadProgress


def build_report_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints report",
        description="Summarise a recording or a GPU log: per-GPU statistics, time spent in "
        "each hint with evidence and advice, and what the data cannot show.",
    )
    add_input_args(parser, files_optional=True)
    job = parser.add_argument_group(
        "a multi-node job from Prometheus (instead of FILE; docs/cluster.md)"
    )
    job.add_argument(
        "--prometheus",
        metavar="URL",
        help="Prometheus's base URL; credentials from GPUTOP_HINTS_PROMETHEUS_TOKEN, or "
        "GPUTOP_HINTS_PROMETHEUS_USER and _PASSWORD, never the command line",
    )
    job.add_argument("--job", metavar="ID", help="the job whose GPUs to read (its job label)")
    job.add_argument(
        "--since",
        type=duration,
        default=3600.0,
        metavar="DUR",
        help="how far back from now (e.g. 30m, 2h, 1d; default 1h)",
    )
    job.add_argument(
        "--step",
        type=positive,
        metavar="S",
        help="seconds between the points read (default: the range / 2000, at least 15 s; "
        "no finer than the exporters are scraped)",
    )
    job.add_argument(
        "--nodes",
        metavar="A,B",
        help="the job's nodes, where no series carries its job label (default: from "
        "scontrol, when SLURM knows the job)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON document instead of text")
    add_cost_arg(parser)
    parser.add_argument(
        "--fail-on",
        choices=("warning", "critical"),
        help="exit 1 if any finding of this severity or worse was active (SLURM epilog, CI)",
    )
    return parser


def report_main(argv: Sequence[str]) -> int:
    """Print the report of FILE; exit 1 when ``--fail-on`` was reached, 2 on bad input."""
    parser = build_report_parser()
    args = parser.parse_args(argv)
    if args.prometheus is not None or args.job is not None:
        if args.file:
            parser.error("give FILE or --prometheus URL --job ID, not both")
        if args.prometheus is None or args.job is None:
            parser.error("--prometheus URL and --job ID go together")
        return _job_report(args)
    if not args.file:
        parser.error("give FILE (a recording or a GPU log), or --prometheus URL --job ID")
    from gputop_hints.hints.config import load
    from gputop_hints.outputs.report import build_report, report_json_text, report_text

    try:
        thresholds = load(args.config)
        stream = open_input(args)
    except input_errors() as exc:
        return usage_error(exc)
    try:
        with ReadProgress(args.file, sys.stderr):
            report = build_report(stream, thresholds)
    finally:
        stream.close()
    rate = args.cost_per_gpu_hour
    sys.stdout.write(
        report_json_text(report, rate) if args.json else report_text(report, cost_per_gpu_hour=rate)
    )
    sys.stdout.flush()
    reason = report.fail_reason(args.fail_on)
    if reason is not None:
        print(f"gputop-hints report: {reason}", file=sys.stderr)
    return report.exit_code(args.fail_on)


DEFAULT_POINTS = 2000
"""Points per series a job report reads by default (--step: the range over this)."""
MIN_STEP_S = 15.0
"""Prometheus's default scrape interval: finer points would repeat the same sample."""


def _job_report(args: argparse.Namespace) -> int:
    """``report --prometheus URL --job ID``: the job read back from Prometheus."""
    import json
    import time

    from gputop_hints.hints.config import load
    from gputop_hints.outputs.job_report import (
        JobSection,
        job_section_json,
        job_section_text,
        node_rows,
        uneven_nodes,
    )
    from gputop_hints.outputs.report import build_report, report_json, report_text
    from gputop_hints.sources.prometheus import (
        JobQuery,
        PrometheusClient,
        PrometheusError,
        PrometheusJobStream,
        node_findings,
        node_links,
        nodes_of_job,
    )
    from gputop_hints.sources.prometheus.job import check_job

    try:
        thresholds = load(args.config)
        client = PrometheusClient(args.prometheus)
        job = check_job(args.job)
    except input_errors() as exc:
        return usage_error(exc)
    end = time.time()
    start = end - args.since
    step = args.step or max(MIN_STEP_S, args.since / DEFAULT_POINTS)
    nodes = tuple(n for n in (args.nodes or "").split(",") if n)
    query = JobQuery(job, start, end, step, nodes)
    try:
        try:
            stream = PrometheusJobStream(client, query)
        except PrometheusError:
            found = () if nodes else nodes_of_job(job)
            if not found:
                raise
            query = JobQuery(job, start, end, step, found)  # SLURM named its nodes
            stream = PrometheusJobStream(client, query)
        report = build_report(stream, thresholds)
        findings = node_findings(client, query)
        links = node_links(client, stream.nodes, query.end)
    except PrometheusError as exc:
        print(f"gputop-hints report: {exc}", file=sys.stderr)
        return EXIT_USAGE
    gpus_of = {n: stream.gpus_of(n) for n in stream.nodes}
    rows = node_rows(
        report, stream.sources, gpus_of, stream.power_means(), links, stream.pcie_links()
    )
    uneven = uneven_nodes(rows, thresholds.uneven_nodes)
    missing = tuple(n for n in query.nodes if n not in stream.sources)
    section = JobSection(
        job, client.url, rows, uneven, tuple(findings), missing, tuple(stream.quiet_nodes())
    )
    if args.json:
        doc = report_json(report, args.cost_per_gpu_hour) | {"job": job_section_json(section)}
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        text = report_text(report, cost_per_gpu_hour=args.cost_per_gpu_hour)
        sys.stdout.write(job_section_text(section) + "\n" + text)
    sys.stdout.flush()
    # Uneven nodes are a warning (the uneven-nodes rule's level): they meet --fail-on
    # warning, never --fail-on critical.
    uneven_fails = args.fail_on == "warning" and bool(section.uneven)
    if uneven_fails and report.exit_code(args.fail_on) == 0:
        print(
            f"gputop-hints report: --fail-on warning: met by uneven nodes ({section.uneven[0]})",
            file=sys.stderr,
        )
    return report.exit_code(args.fail_on) or (1 if uneven_fails else 0)
