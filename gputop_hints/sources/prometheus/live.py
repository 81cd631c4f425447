"""A multi-node job, live from Prometheus: ``gputop-hints --prometheus URL --job ID``.

Each tick asks Prometheus for the latest value of every GPU series of the job --
one instant query per kind of exporter (:func:`.job.exporter_query`, the query the
report reads a range with: ``{__name__=~"gputop_hints_gpu_...", slurm_job="ID"}`` and its
dcgm-exporter, nvitop-exporter and jobstats equivalents) -- and
turns the answer into a :class:`Snapshot` of all the job's GPUs, numbered in
(node, GPU) order and named ``<node> GPU <n>``, as the job report does. The
monitor then shows the job as one machine: every GPU with its sparklines, and the
GPU-level hints across nodes. A value is as fresh as the last scrape (Prometheus
keeps a series' latest sample for up to 5 minutes), so a tick faster than the
scrape interval repeats it: ``--interval`` at the scrape interval is enough.

The same tick reads the findings each node's own ``gputop-hints export`` reports now
(one more instant query, :func:`.job.active_findings`: ``gputop_hints_finding`` and its
start time, by the same job label) onto :attr:`Snapshot.node_findings`: the *why*
behind a slow node, which its host data shows and the job-wide GPU series do not.
Nodes read from another exporter report none.

Prometheus going away mid-run is not a crash: the tick has no GPUs and says why
(``gpu_unavailable_reason``), and the next tick tries again.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence

from gputop_hints.model import HostSample, ReportedFinding, Snapshot
from gputop_hints.sources import SourceUnavailable
from gputop_hints.sources.prometheus.client import PrometheusClient, PrometheusError, Series
from gputop_hints.sources.prometheus.job import (
    EXPORTERS,
    Exporter,
    active_findings,
    check_job,
    exporter_query,
    gpu_order,
    gpu_sample,
    nodes_of_job,
)


class PrometheusSource:
    """The job's GPUs, tick by tick, from Prometheus (see the module docstring)."""

    kind = "prometheus"
    simulated = False

    def __init__(
        self,
        url: str,
        job: str,
        interval_s: float = 5.0,
        nodes: Sequence[str] = (),
        client: PrometheusClient | None = None,
    ) -> None:
        try:
            self.client = client or PrometheusClient(url)
            self.job = check_job(job)
        except ValueError as exc:
            raise SourceUnavailable(str(exc)) from None
        self.interval_s = interval_s
        self.nodes: tuple[str, ...] = tuple(nodes)
        self._index: dict[tuple[str, str], int] = {}
        self._exporter_of_node: dict[str, Exporter] = {}
        try:
            first = self._read()
            if not first and not self.nodes:
                self.nodes = nodes_of_job(self.job)
                first = self._read() if self.nodes else {}
        except PrometheusError as exc:
            raise SourceUnavailable(str(exc)) from None
        if not first:
            raise SourceUnavailable(
                f"Prometheus at {self.client.url} has no GPU series of job {self.job} now "
                "(gputop_hints_gpu_*{slurm_job=...}, DCGM_FI_DEV_*{hpc_job=...}, "
                "nvidia_gpu_jobId): "
                "is the job running, and is an exporter scraped on its nodes?"
            )
        self._first: dict[tuple[str, str], dict[str, float]] | None = first
        self._last_seen: dict[str, float] = {}
        """node -> the last tick it had series."""
        self._down_since: float | None = None
        """When Prometheus stopped answering (None while it answers)."""

    @property
    def sources(self) -> Mapping[str, str]:
        """node -> the exporter its numbers come from."""
        return {node: e.name for node, e in sorted(self._exporter_of_node.items())}

    def _read(self) -> dict[tuple[str, str], dict[str, float]]:
        """(node, gpu) -> field -> value, now."""
        values: dict[tuple[str, str], dict[str, float]] = {}
        for exporter in EXPORTERS:
            query = exporter_query(exporter, self.job, self.nodes)
            if query is None:
                continue
            names = exporter.by_name()
            for series in self.client.query(query):
                self._take(series, exporter, names, values)
        return values

    def _take(
        self,
        series: Series,
        exporter: Exporter,
        names: Mapping[str, tuple[str, float]],
        values: dict[tuple[str, str], dict[str, float]],
    ) -> None:
        node = exporter.node_of(series.labels)
        gpu = series.labels.get(exporter.gpu_label, "")
        read = names.get(series.labels.get("__name__", ""))
        if not node or not gpu or not series.points or read is None:
            return
        owner = self._exporter_of_node.setdefault(node, exporter)
        if owner is not exporter:
            return  # the node is read from the exporter found first for it
        field, scale = read
        values.setdefault((node, gpu), {})[field] = series.points[-1][1] * scale

    def sample(self) -> Snapshot:
        now = time.time()
        host = HostSample(hostname=f"job {self.job}", cpu_percent_per_core=(), allowed_cores=())
        reason = None
        findings: tuple[ReportedFinding, ...] = ()
        try:
            if self._first is not None:
                values, self._first = self._first, None
            else:
                values = self._read()
            findings = active_findings(self.client, self.job, self.nodes, now)
            self._down_since = None
        except PrometheusError as exc:
            if self._down_since is None:
                self._down_since = now
            since = time.strftime("%H:%M:%S", time.localtime(self._down_since))
            values = {}
            reason = (
                f"Prometheus at {self.client.url} stopped answering at {since} ({exc}); "
                "asking again each tick"
            )
        for key in sorted(values, key=gpu_order):
            if key not in self._index:
                self._index[key] = len(self._index)
        gpus = []
        quiet = self._quiet_nodes(values, now) if reason is None else {}
        if reason is None:
            for (node, gpu), index in sorted(self._index.items(), key=lambda kv: kv[1]):
                g = gpu_sample(index, node, gpu, None, dict(values.get((node, gpu), {})))
                if node in quiet:
                    g = dataclasses.replace(g, name=f"{g.name}: no data since {quiet[node]}")
                gpus.append(g)
        detail = "; ".join(f"{n}: {s}" for n, s in self.sources.items())
        detail += "".join(f"; no data from {n} since {t}" for n, t in quiet.items())
        return Snapshot(
            timestamp=now,
            interval_s=self.interval_s,
            host=host,
            gpus=tuple(gpus),
            source="prometheus",
            source_detail=f"Prometheus {self.client.url}, job {self.job} ({detail})",
            gpu_unavailable_reason=reason,
            node_findings=findings,
        )

    def _quiet_nodes(
        self, values: Mapping[tuple[str, str], Mapping[str, float]], now: float
    ) -> dict[str, str]:
        """The nodes seen before with no series now (their exporter stopped answering,
        and Prometheus marked its series stale) -> since when, as ``14:02:10``."""
        have = {node for node, _gpu in values}
        for node in have:
            self._last_seen[node] = now
        out = {}
        for node in sorted({node for node, _gpu in self._index} - have):
            since = self._last_seen.get(node, now)
            out[node] = time.strftime("%H:%M:%S", time.localtime(since))
        return out

    def close(self) -> None:
        """Nothing is held between queries."""
