"""A multi-node job, live from Prometheus: ``gputop-hints --prometheus URL --job ID``.

Each tick asks Prometheus for the latest value of every GPU series of the job --
one instant query per kind of exporter (``{__name__=~"gputop_hints_gpu_.+",
job="ID"}`` and its dcgm-exporter and jobstats equivalents, :mod:`.job`) -- and
turns the answer into a :class:`Snapshot` of all the job's GPUs, numbered in
(node, GPU) order and named ``<node> GPU <n>``, as the job report does. The
monitor then shows the job as one machine: every GPU with its sparklines, and the
GPU-level hints across nodes. A value is as fresh as the last scrape (Prometheus
keeps a series' latest sample for up to 5 minutes), so a tick faster than the
scrape interval repeats it: ``--interval`` at the scrape interval is enough.

Prometheus going away mid-run is not a crash: the tick has no GPUs and says why
(``gpu_unavailable_reason``), and the next tick tries again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence

from gputop_hints.model import GpuSample, HostSample, Snapshot
from gputop_hints.sources import SourceUnavailable
from gputop_hints.sources.prometheus.client import PrometheusClient, PrometheusError, Series
from gputop_hints.sources.prometheus.job import (
    DCGM,
    EXPORTERS,
    INT_FIELDS,
    MIB,
    Exporter,
    check_job,
    gpu_order,
    nodes_of_job,
    promql_string,
    selectors,
)

_SIMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)\{sel\}$")


def _by_name(exporter: Exporter) -> dict[str, tuple[str, float]]:
    """metric name -> (GpuSample field, scale), for the fields read from one series."""
    out = {}
    for name, (template, scale) in exporter.fields.items():
        m = _SIMPLE.match(template)
        if m is not None:
            out[m.group(1)] = (name, scale)
    return out


def _prefix(exporter: Exporter) -> str:
    """A regex matching every metric name the exporter's fields read."""
    names = {m.group(1) for t, _ in exporter.fields.values() if (m := _SIMPLE.match(t))}
    if exporter is DCGM:
        names.add("DCGM_FI_DEV_FB_FREE")
    return "|".join(sorted(names))


def instant_queries(exporter: Exporter, job: str, nodes: Sequence[str]) -> list[str]:
    """The one query a tick makes for ``exporter`` (a union where it has several job
    labels); [] where it cannot find the job."""
    name = f'__name__=~"{_prefix(exporter)}"'
    sels = selectors(exporter, job, nodes)
    if not sels:
        return []
    join = exporter.join.format(job=promql_string(job)) if exporter.join and not nodes else ""
    # Each selector is "{matchers}" (or "" for a join): the name matcher goes inside.
    parts = ["{" + name + ("," + s[1:-1] if s else "") + "}" for s in sels]
    union = " or ".join(parts)
    return [f"({union}){join}" if join else union]


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
                "(gputop_hints_gpu_*{job=...}, DCGM_FI_DEV_*{hpc_job=...}, nvidia_gpu_jobId): "
                "is the job running, and is an exporter scraped on its nodes?"
            )
        self._first: dict[tuple[str, str], dict[str, float]] | None = first

    @property
    def sources(self) -> Mapping[str, str]:
        """node -> the exporter its numbers come from."""
        return {node: e.name for node, e in sorted(self._exporter_of_node.items())}

    def _read(self) -> dict[tuple[str, str], dict[str, float]]:
        """(node, gpu) -> field -> value, now."""
        values: dict[tuple[str, str], dict[str, float]] = {}
        fb_free: dict[tuple[str, str], float] = {}
        for exporter in EXPORTERS:
            names = _by_name(exporter)
            for query in instant_queries(exporter, self.job, self.nodes):
                for series in self.client.query(query):
                    self._take(series, exporter, names, values, fb_free)
        for key, free in fb_free.items():
            used = values.get(key, {}).get("vram_used_bytes")
            if used is not None:
                values[key]["vram_total_bytes"] = used + free * MIB
        return values

    def _take(
        self,
        series: Series,
        exporter: Exporter,
        names: Mapping[str, tuple[str, float]],
        values: dict[tuple[str, str], dict[str, float]],
        fb_free: dict[tuple[str, str], float],
    ) -> None:
        node = exporter.node_of(series.labels)
        gpu = series.labels.get(exporter.gpu_label, "")
        if not node or not gpu or not series.points:
            return
        owner = self._exporter_of_node.setdefault(node, exporter)
        if owner is not exporter:
            return  # the node is read from the exporter found first for it
        value = series.points[-1][1]
        metric = series.labels.get("__name__", "")
        if metric == "DCGM_FI_DEV_FB_FREE":
            fb_free[(node, gpu)] = value
            return
        field = names.get(metric)
        if field is not None:
            values.setdefault((node, gpu), {})[field[0]] = value * field[1]

    def sample(self) -> Snapshot:
        now = time.time()
        host = HostSample(
            hostname=f"job {self.job}", cpu_percent_per_core=(), allowed_cores=()
        )
        reason = None
        if self._first is not None:
            values, self._first = self._first, None
        else:
            try:
                values = self._read()
            except PrometheusError as exc:
                values, reason = {}, str(exc)
        for key in sorted(values, key=gpu_order):
            if key not in self._index:
                self._index[key] = len(self._index)
        gpus = []
        if reason is None:
            for (node, gpu), index in sorted(self._index.items(), key=lambda kv: kv[1]):
                fields = values.get((node, gpu), {})
                clean = {k: round(v) if k in INT_FIELDS else v for k, v in fields.items()}
                name = f"{node} GPU {gpu}"
                gpus.append(GpuSample(index=index, name=name, node=node, **clean))  # type: ignore[arg-type]
        detail = "; ".join(f"{n}: {s}" for n, s in self.sources.items())
        return Snapshot(
            timestamp=now,
            interval_s=self.interval_s,
            host=host,
            gpus=tuple(gpus),
            source="prometheus",
            source_detail=f"Prometheus {self.client.url}, job {self.job} ({detail})",
            gpu_unavailable_reason=reason,
        )

    def close(self) -> None:
        """Nothing is held between queries."""
