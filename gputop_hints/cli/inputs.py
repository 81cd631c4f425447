"""What the command line opens: a live or demo source, or a file as a snapshot
stream; and whether the terminal can show the monitor.

Sources and importers are imported only when opened, so ``--help`` and
``--version`` stay fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gputop_hints.model import JobInfo
    from gputop_hints.sources import Source
    from gputop_hints.streams import SnapshotStream


def open_source(args: argparse.Namespace) -> Source:
    """The demo (``--demo``) or this machine's GPUs, as the source arguments say.

    Raises ``SourceUnavailable`` (e.g. ``--require-gpu`` without NVML) or
    ``ValueError`` (an unknown demo scenario).
    """
    if getattr(args, "prometheus", None) is not None:
        from gputop_hints.sources.prometheus.live import PrometheusSource

        return PrometheusSource(args.prometheus, args.job, interval_s=args.interval)
    if args.demo is not None:
        from gputop_hints.sources.demo import DEFAULT_SCENARIO, DemoSource

        return DemoSource(
            args.demo or DEFAULT_SCENARIO,
            gpus=args.gpus,
            processes=args.processes,
            seed=args.seed,
            interval_s=args.interval,
            job=_demo_job(args),
        )
    from gputop_hints.sources.live.source import LiveSource

    return LiveSource(
        args.interval,
        require_gpu=args.require_gpu,
        job=args.job,
        all_processes=args.all,
        only_visible=getattr(args, "only_visible", False),
    )


def _demo_job(args: argparse.Namespace) -> JobInfo | None:
    """The SLURM job the demo runs in, if any: the header shows it, the GPUs stay simulated."""
    from gputop_hints.sources.live.slurm import detect_job

    context = detect_job(job_id=args.job)
    if context is None:
        return None
    return context.info(filtered=False)


def print_scenarios() -> None:
    """``--list-scenarios``: every demo scenario, the default marked."""
    from gputop_hints.sources.demo import DEFAULT_SCENARIO, list_scenarios

    scenarios = list_scenarios()
    width = max(len(s.name) for s in scenarios)
    print("Demo scenarios (gputop-hints --demo NAME):")
    for s in scenarios:
        mark = " (default)" if s.name == DEFAULT_SCENARIO else ""
        print(f"  {s.name:<{width}}  {s.description}{mark}")


def open_input(args: argparse.Namespace) -> SnapshotStream:
    """FILE (or a GPU log and a per-process log) as one snapshot stream, each
    format detected unless ``--format`` says."""
    from pathlib import Path

    from gputop_hints.sources.files import open_streams, parse_mapping
    from gputop_hints.streams import EmptyStream, require_regular_file

    # A folder (an MLflow run) is judged by open_streams.
    if all(not Path(path).is_dir() and require_regular_file(path) == 0 for path in args.file):
        # A recorder killed before its first tick leaves 0 bytes: no samples, not an
        # error (docs/recording.md), so a job epilog does not fail on it.
        return EmptyStream(str(args.file[0]))
    mapping = parse_mapping(args.map) if args.map else None
    return open_streams(args.file, format=args.format, interval_s=args.interval, mapping=mapping)


def input_errors() -> tuple[type[BaseException], ...]:
    """What opening FILE or its config can raise that is the user's to fix (exit 2)."""
    from gputop_hints.hints.config import ConfigError
    from gputop_hints.streams import UnrecognisedFormat

    return (UnrecognisedFormat, ConfigError, ValueError, OSError)


def terminal_unusable() -> str | None:
    """Why a full-screen UI cannot run here, or None when it can."""
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        return "standard input/output is not a terminal"
    if os.environ.get("TERM", "") in ("dumb", "unknown"):
        return f"TERM={os.environ.get('TERM')} cannot draw a full-screen interface"
    return None
