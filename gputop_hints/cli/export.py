"""``gputop-hints export``: a Prometheus endpoint with what the monitor knows each tick.

It samples a source (this machine, or ``--demo``) headless, as ``record`` does,
puts every tick through the hint :class:`~gputop_hints.hints.diagnoser.Diagnoser`,
and serves the latest tick and its findings at ``/metrics`` with
``prometheus_client``'s own server (:mod:`gputop_hints.outputs.prometheus` builds
the metrics; docs/cluster.md lists them). Read-only: nothing is written, no
process is touched. It listens on 127.0.0.1 unless ``--bind`` asks for more, and
serves HTTPS with ``--tls-cert`` and ``--tls-key``.

``prometheus_client`` is the optional extra ``gputop-hints[export]``: without it
this command says so and exits 2. It runs until SIGTERM, Ctrl-C or a hang-up.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gputop_hints.cli.args import (
    EXIT_OK,
    EXIT_USAGE,
    INTERVAL_HELP,
    add_config_arg,
    add_source_args,
    at_least,
    check_source_args,
    count,
    interval,
    usage_error,
)
from gputop_hints.cli.inputs import open_source, print_scenarios
from gputop_hints.model import JobInfo
from gputop_hints.sampling.sampler import DEFAULT_INTERVAL_S

if TYPE_CHECKING:
    from gputop_hints.hints.findings import Finding
    from gputop_hints.model import Snapshot

DEFAULT_PORT = 9842
DEFAULT_BIND = "127.0.0.1"
MISSING_CLIENT = (
    "gputop-hints export: needs prometheus_client, which is not installed: install the "
    "'export' extra -- from a clone of the repository: pip install '.[export]'; from "
    "PyPI: pip install 'gputop-hints[export]'"
)


def build_export_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints export",
        description="Serve what the monitor knows -- GPU, process and host metrics and the "
        "active hints' findings -- as Prometheus metrics at http://BIND:PORT/metrics, "
        "updated every --interval, until SIGTERM, Ctrl-C or a hang-up. Read-only. "
        "Metric names and cardinality: docs/cluster.md.",
    )
    parser.add_argument(
        "--port",
        type=count(0, 65535),
        default=DEFAULT_PORT,
        metavar="N",
        help=f"TCP port to listen on (default {DEFAULT_PORT}; 0: any free port, printed on stderr)",
    )
    parser.add_argument(
        "--bind",
        default=DEFAULT_BIND,
        metavar="ADDR",
        help=f"address to listen on (default {DEFAULT_BIND}: this machine only; "
        "0.0.0.0 or a node's address lets others scrape it, and read its process names "
        "and users)",
    )
    parser.add_argument("--tls-cert", metavar="PEM", help="serve HTTPS with this certificate")
    parser.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    parser.add_argument(
        "--interval", type=interval, default=DEFAULT_INTERVAL_S, metavar="S", help=INTERVAL_HELP
    )
    parser.add_argument(
        "--max-processes",
        type=at_least(0),
        default=None,
        metavar="N",
        help="export at most N processes, the heaviest VRAM users first (default 512)",
    )
    parser.add_argument(
        "--label-host",
        metavar="NAME",
        help="the host label of every series (default: this machine's hostname; a "
        "container's own hostname is seldom the node's)",
    )
    parser.add_argument(
        "--label-job",
        metavar="ID",
        help="the slurm_job label of every GPU, process and finding series, where the exporter "
        "cannot see the job itself (outside SLURM, or a demo node of a simulated job)",
    )
    add_source_args(parser)
    add_config_arg(parser)
    return parser


def labelled(snapshot: Snapshot, host: str | None, job: str | None) -> Snapshot:
    """``snapshot`` as the collector publishes it with ``--label-host``/``--label-job``:
    the host's name replaced, and the whole node attached to job ``job``."""
    if host:
        snapshot = dataclasses.replace(
            snapshot, host=dataclasses.replace(snapshot.host, hostname=host)
        )
    if job:
        snapshot = dataclasses.replace(
            snapshot,
            job=JobInfo(job_id=job, detected_from="--label-job", filtered=False),
            processes=tuple(dataclasses.replace(p, in_job=True) for p in snapshot.processes),
        )
    return snapshot


def as_node(
    snapshot: Snapshot, findings: Sequence[Finding], host: str | None, now: float
) -> tuple[Snapshot, tuple[Finding, ...]]:
    """A simulated tick as a node's exporter serves it: stamped with the wall clock
    ``now`` (the demo's clock starts in 2023, so "minutes held" read ~1.6 million), its
    findings' start times moved by as much, and with ``--label-host`` each GPU's UUID
    made the node's own (two demo nodes of one seed are not the same GPUs)."""
    shift = now - snapshot.timestamp
    gpus = snapshot.gpus
    if host:
        gpus = tuple(dataclasses.replace(g, uuid=_node_uuid(g.uuid, host)) for g in gpus)
    moved = tuple(
        f if f.started_at is None else dataclasses.replace(f, started_at=f.started_at + shift)
        for f in findings
    )
    return dataclasses.replace(snapshot, timestamp=now, gpus=gpus), moved


def _node_uuid(uuid: str | None, host: str) -> str | None:
    if uuid is None:
        return None
    h = hashlib.sha1(f"{uuid}@{host}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def export_main(argv: Sequence[str]) -> int:
    """``gputop-hints export``: serve metrics until a signal; 2 on a usage error."""
    parser = build_export_parser()
    args = parser.parse_args(argv)
    if args.list_scenarios:
        print_scenarios()
        return EXIT_OK
    check_source_args(parser, args)
    if args.prometheus is not None:
        parser.error(
            "--prometheus reads a job back from Prometheus (for the monitor, record and "
            "report); export serves this machine or the demo"
        )
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together (HTTPS needs both)")
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        print(MISSING_CLIENT, file=sys.stderr)
        return EXIT_USAGE
    return _export(args)


def _export(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry, start_http_server

    from gputop_hints.hints.config import ConfigError, load
    from gputop_hints.hints.diagnoser import Diagnoser
    from gputop_hints.outputs.prometheus import MAX_PROCESS_SERIES, SnapshotCollector
    from gputop_hints.sampling.once import preroll
    from gputop_hints.sampling.sampler import Sampler
    from gputop_hints.sources import SourceUnavailable

    try:
        thresholds = load(args.config)
    except (ConfigError, OSError, ValueError) as exc:
        return usage_error(exc)
    try:
        source = open_source(args)
    except (SourceUnavailable, ValueError) as exc:
        return usage_error(exc)
    try:
        diagnoser = Diagnoser(thresholds, interval_s=args.interval)
        limit = MAX_PROCESS_SERIES if args.max_processes is None else args.max_processes
        collector = SnapshotCollector(max_processes=limit)
        lock = threading.Lock()

        def tick(snapshot: Snapshot) -> None:
            with lock:
                findings: Sequence[Finding] = diagnoser.feed(snapshot)
                if source.simulated:
                    snapshot, findings = as_node(snapshot, findings, args.label_host, time.time())
                collector.update(
                    labelled(snapshot, args.label_host, args.label_job), findings, diagnoser.costs
                )

        # The demo first runs past its jobs' warm-up, as --once does: the first scrape
        # shows what it simulates, not its start.
        for snapshot in preroll(source, args.interval, diagnoser.window_s):
            tick(snapshot)
        if collector.tick is None:
            tick(source.sample())
        from gputop_hints.sampling.record import stop_on_signals  # SIGTERM, SIGINT, SIGHUP

        # Handlers first: a signal as soon as "serving" is printed must stop it cleanly.
        stop = threading.Event()
        with stop_on_signals(stop):
            registry = CollectorRegistry(auto_describe=False)
            registry.register(collector)
            try:
                server, _thread = start_http_server(
                    args.port,
                    addr=args.bind,
                    registry=registry,
                    certfile=args.tls_cert,
                    keyfile=args.tls_key,
                )
            except (OSError, ValueError) as exc:
                return usage_error(
                    ValueError(f"export: cannot serve on {args.bind} port {args.port}: {exc}")
                )
            scheme = "https" if args.tls_cert else "http"
            print(
                f"gputop-hints export: serving {scheme}://{_host_text(args.bind)}:"
                f"{server.server_port}/metrics every {args.interval:g} s",
                file=sys.stderr,
                flush=True,
            )
            if args.bind not in ("127.0.0.1", "localhost", "::1") and not args.tls_cert:
                print(
                    f"gputop-hints export: note: {args.bind} without TLS: whoever reaches this "
                    "port reads the GPU processes' names and users",
                    file=sys.stderr,
                    flush=True,
                )

            def failed(exc: BaseException) -> None:
                print(f"gputop-hints export: sampling failed: {exc}", file=sys.stderr, flush=True)

            sampler = Sampler(source, args.interval, tick, on_error=failed)
            sampler.start()
            try:
                while not stop.wait(1.0):
                    pass
            finally:
                sampler.stop(wake=source.close)
                server.shutdown()
                server.server_close()
            return EXIT_OK
    finally:
        source.close()


def _host_text(bind: str) -> str:
    return f"[{bind}]" if ":" in bind else bind
