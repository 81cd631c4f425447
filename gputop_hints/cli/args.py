"""What the subcommands share on their command lines: argument types that say
what was wrong, the argument groups several commands take, and the exit codes.

Kept light (no sources, no Textual): every ``gputop-hints`` run imports it.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable

from gputop_hints.sampling.sampler import DEFAULT_INTERVAL_S, MAX_INTERVAL_S, MIN_INTERVAL_S

EXIT_OK = 0
EXIT_USAGE = 2
"""A usage error: bad arguments, a broken config, a file that cannot be read."""


def usage_error(exc: BaseException) -> int:
    """Say what was wrong with the input (file, line, key where known); return 2.
    Every problem of a config file is listed, one a line, as a compiler does."""
    for problem in getattr(exc, "all", None) or (exc,):
        print(f"gputop-hints: {problem}", file=sys.stderr)
    return EXIT_USAGE


# --- argument types ----------------------------------------------------------------------


def interval(text: str) -> float:
    """Seconds between samples, within what the sampler allows."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"{value:g} s is outside the allowed range {MIN_INTERVAL_S:g}-{MAX_INTERVAL_S:g} s"
        )
    return value


def positive(text: str) -> float:
    """A finite number above zero (a duration, a window).

    ``float`` also reads "nan" and "inf"; neither is a number of seconds, and
    both used to reach the samplers' arithmetic and end in a traceback.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value:g}")
    return value


def count(low: int, high: int) -> Callable[[str], int]:
    """A whole number from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}-{high}")
        return value

    return parse


def at_least(low: int) -> Callable[[str], int]:
    """A whole number of ``low`` or more (a size, a count without an upper bound)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration(text: str) -> float:
    """A span of time as people write it: ``90s``, ``30m``, ``2h``, ``1d`` or seconds."""
    body = text.strip().lower()
    scale = _DURATION_UNITS.get(body[-1:]) if body else None
    number = body[:-1] if scale is not None else body
    try:
        value = float(number) * (scale or 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration (e.g. 90s, 30m, 2h, 1d)"
        ) from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be more than 0")
    return value


def slurm_job_id(text: str) -> str:
    """A SLURM job id for ``--job``, checked here so that no other form reaches a subprocess."""
    # Imported here: only runs given --job pay for the SLURM helpers.
    from gputop_hints.sources.live.slurm.parse import BadJobId, parse_job_id

    try:
        return parse_job_id(text)
    except BadJobId as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_RANGE = f"{MIN_INTERVAL_S:g}-{MAX_INTERVAL_S:g}"
INTERVAL_HELP = f"seconds between samples ({_RANGE}, default {DEFAULT_INTERVAL_S:g})"


# --- argument groups ---------------------------------------------------------------------


def add_source_args(parser: argparse.ArgumentParser) -> None:
    """What to watch: this machine (live), a SLURM job on it, or the demo."""
    src = parser.add_argument_group("what to watch")
    src.add_argument(
        "--demo",
        nargs="?",
        const="",
        metavar="SCENARIO",
        help="simulated training jobs instead of this machine's GPUs "
        "(default scenario: mixed; see --list-scenarios)",
    )
    src.add_argument(
        "--list-scenarios", action="store_true", help="list the demo scenarios and exit"
    )
    src.add_argument(
        "--gpus", type=count(1, 8), metavar="N", help="demo: number of simulated GPUs (1-8)"
    )
    src.add_argument(
        "--processes",
        type=count(1, 256),
        metavar="N",
        help="demo: number of simulated GPU processes",
    )
    src.add_argument("--seed", type=int, default=0, help="demo: random seed (default 0)")
    src.add_argument(
        "--prometheus",
        metavar="URL",
        help="watch job --job ID on all its nodes, read from this Prometheus (the series of "
        "gputop-hints export, dcgm-exporter or jobstats; docs/cluster.md); credentials from "
        "GPUTOP_HINTS_PROMETHEUS_TOKEN or _USER/_PASSWORD",
    )
    src.add_argument(
        "--job",
        type=slurm_job_id,
        metavar="ID",
        help="attach to SLURM job ID (1234, 1234_7, 1234+1) from outside it (e.g. a login "
        "shell on the node); inside a job (srun --jobid=ID --overlap) it is found by itself",
    )
    src.add_argument(
        "--all",
        action="store_true",
        help="inside a job, show every GPU process on the node, the job's marked",
    )
    src.add_argument(
        "--only-visible",
        action="store_true",
        help="only the GPUs this shell's CUDA_VISIBLE_DEVICES names (ordinals, UUIDs or MIG "
        "ids, read as CUDA does), and their processes",
    )
    src.add_argument(
        "--require-gpu",
        action="store_true",
        help="exit with status 2 instead of starting CPU-only when NVML cannot be loaded",
    )


def check_source_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse demo-only options without ``--demo``, and ``--prometheus`` without ``--job``
    or with ``--demo`` (exits 2 with argparse's message)."""
    if getattr(args, "prometheus", None) is not None:
        if args.demo is not None:
            parser.error("--prometheus and --demo are two different sources: give one")
        if args.job is None:
            parser.error("--prometheus URL needs --job ID (the job to watch on its nodes)")
    if args.demo is None and (args.gpus is not None or args.processes is not None):
        parser.error("--gpus and --processes only apply to --demo")


def add_config_arg(parser: argparse.ArgumentParser) -> None:
    """``--config PATH``: the thresholds YAML."""
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="thresholds YAML (default: $GPUTOP_HINTS_CONFIG, then "
        "$XDG_CONFIG_HOME/gputop-hints/config.yaml, then built-in; see "
        "'gputop-hints config --print-defaults')",
    )


def add_cost_arg(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--cost-per-gpu-hour RATE``: money beside the GPU-time lost (docs/hints.md)."""
    parser.add_argument(
        "--cost-per-gpu-hour",
        type=positive,
        metavar="RATE",
        help="what a GPU-hour costs (any currency): the GPU-time lost under the findings is "
        "also given in money (docs/hints.md#what-a-finding-costs)",
    )


def add_look_args(group: argparse._ArgumentGroup) -> None:
    """How the monitor looks: theme and colour."""
    group.add_argument(
        "--theme",
        default="dark",
        metavar="NAME",
        help="colour theme: dark (default), light, high-contrast, monochrome, or a user theme",
    )
    group.add_argument(
        "--no-color",
        action="store_true",
        help="no colours (also when the NO_COLOR environment variable is set)",
    )


def add_input_args(parser: argparse.ArgumentParser, files_optional: bool = False) -> None:
    """How to read FILE: recordings are recognised by content; logs may need hints.
    ``files_optional``: FILE may be left out (another input is given instead)."""
    from gputop_hints.sources.files import FORMATS

    parser.add_argument(
        "file",
        metavar="FILE",
        nargs="*" if files_optional else "+",
        help="a 'gputop-hints record' file (.jsonl or .jsonl.gz), or a log: plain nvidia-smi "
        "tables appended to a file (also a captured 'watch nvidia-smi'), nvidia-smi -q, "
        "--query-gpu CSV (also under 'date' lines), dmon, pmon, --query-compute-apps CSV, "
        "dcgmi dmon, gpustat, W&B (wandb-events.jsonl or run-ID.wandb), an MLflow run "
        "folder, a CSV with metric columns (one GPU a row or GPUs side by side, as "
        "Lightning's metrics.csv), or a training log with GPU readings in its lines; gzip, "
        "xz and bzip2 are read as they are; a GPU log and a per-process log of the same run "
        "(two FILEs) are merged by time and GPU (docs/import.md)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        help="skip detection and read FILE as this format",
    )
    parser.add_argument(
        "--interval",
        type=positive,
        metavar="S",
        help="seconds between samples, for logs without timestamps",
    )
    parser.add_argument(
        "--map",
        metavar="SPEC",
        help="which CSV column is which metric, e.g. "
        "'sm=gpu_util,vram_used=mem_used_mb,vram_total=mem_total_mb,time=ts' (docs/import.md)",
    )
    add_config_arg(parser)
