"""Reading GPU series back from Prometheus: a multi-node job as one snapshot stream.

:mod:`.client` speaks Prometheus's HTTP API; :mod:`.job` finds a job's GPUs in
the series of ``gputop-hints export``, dcgm-exporter or jobstats, and turns them
into snapshots (docs/cluster.md, "The multi-node job view").
"""

from gputop_hints.sources.prometheus.client import PrometheusClient, PrometheusError
from gputop_hints.sources.prometheus.job import (
    JobQuery,
    NodeFinding,
    NodeGap,
    PrometheusJobStream,
    node_findings,
    node_links,
    nodes_of_job,
)

__all__ = [
    "JobQuery",
    "NodeFinding",
    "NodeGap",
    "PrometheusClient",
    "PrometheusError",
    "PrometheusJobStream",
    "node_findings",
    "node_links",
    "nodes_of_job",
]
