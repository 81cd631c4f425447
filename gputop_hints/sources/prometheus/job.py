"""A multi-node job's GPUs, read back from Prometheus as one stream of snapshots.

The job's GPUs are found by the job label each node exporter puts on its series,
in this order of preference per node (the first that has the node wins, and the
stream says which source each node's numbers come from):

* ``gputop-hints export``: ``gputop_hints_gpu_*{slurm_job="ID"}`` (before issue 46
  ``job``, which Prometheus keeps as ``exported_job``; labels ``host``, ``gpu``);
* NVIDIA dcgm-exporter with its HPC job mapping (``--hpc-job-mapping-dir``):
  ``DCGM_FI_DEV_*{hpc_job="ID"}`` (labels ``Hostname``, ``gpu``; VRAM in MiB,
  ``DCGM_FI_PROF_*`` as ratios 0-1);
* nvitop-exporter: ``gpu_utilization_Percentage`` and friends (labels ``hostname``,
  ``index``); it carries no job label, so only the job's named nodes are read;
* Princeton's jobstats GPU exporter: ``nvidia_gpu_duty_cycle`` and friends, joined
  on ``nvidia_gpu_jobId == ID`` by ``instance`` and ``minor_number``.

When no series carries the job, the job's nodes can be named instead (``nodes``,
e.g. from ``scontrol show hostnames``): then every GPU of those nodes is read.

Each GPU of the job becomes one GPU of the snapshots, numbered in (node, GPU) order
and named ``<node> GPU <n>``; the report and the hints then see the whole job as
one machine, so a rank that holds the others back shows as the straggler across
nodes, as it does within one. Processes and host CPU are not read (they differ
per node): the stream says so, and the rules that need them are "not evaluated".
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from gputop_hints.model import (
    METRIC_HOST_CPU,
    METRIC_PROCESSES,
    METRIC_SUBSECOND,
    METRIC_THROTTLE,
    GpuSample,
    HostSample,
    ReportedFinding,
    Snapshot,
    pcie_link_bytes_per_s,
    record,
)
from gputop_hints.sources.dcgm_fields import DCGM_FIELDS, MIB, with_totals
from gputop_hints.sources.prometheus.client import PrometheusClient, PrometheusError, Series
from gputop_hints.streams import ReadCounters, StreamInfo


@dataclass(frozen=True)
class Exporter:
    """How one kind of node exporter names a GPU's numbers."""

    name: str
    host_label: str
    gpu_label: str
    fields: Mapping[str, tuple[str, float]]
    """GpuSample field (or ``VRAM_FREE``, dcgm_fields) -> (metric name, scale to its unit)."""
    job_selectors: tuple[str, ...]
    """The label matchers that pick a job's series, with ``{job}``; any of them."""
    join: str = ""
    """PromQL appended to every query (a join that restricts it to the job), with ``{job}``."""
    uuid_label: str = ""

    def by_name(self) -> dict[str, tuple[str, float]]:
        """metric name -> (field, scale): how a series of its answer is read."""
        return {metric: (f, scale) for f, (metric, scale) in self.fields.items()}

    def node_of(self, labels: Mapping[str, str]) -> str:
        node = labels.get(self.host_label, "")
        # jobstats labels by instance "host:port": the node is the host part.
        return node.rsplit(":", 1)[0] if self.host_label == "instance" else node


def _ours(name: str) -> str:
    return "gputop_hints_gpu_" + name


OURS = Exporter(
    name="gputop-hints export",
    host_label="host",
    gpu_label="gpu",
    uuid_label="uuid",
    # slurm_job since issue 46; before, "job", which Prometheus renames to
    # "exported_job" (the scrape job's own label wins) unless the scrape config says
    # honor_labels: any of them is the job.
    job_selectors=('slurm_job="{job}"', 'job="{job}"', 'exported_job="{job}"'),
    fields={
        "sm_percent": (_ours("utilization_percent"), 1.0),
        "memory_access_percent": (_ours("memory_access_percent"), 1.0),
        "vram_used_bytes": (_ours("vram_used_bytes"), 1.0),
        "vram_total_bytes": (_ours("vram_total_bytes"), 1.0),
        "pcie_rx_bytes_per_s": (_ours("pcie_rx_bytes_per_second"), 1.0),
        "pcie_tx_bytes_per_s": (_ours("pcie_tx_bytes_per_second"), 1.0),
        "power_watts": (_ours("power_watts"), 1.0),
        "power_limit_watts": (_ours("power_limit_watts"), 1.0),
        "sm_clock_mhz": (_ours("sm_clock_hertz"), 1e-6),
        "pcie_generation": (_ours("pcie_link_generation"), 1.0),
        "pcie_width": (_ours("pcie_link_width"), 1.0),
        "temperature_c": (_ours("temperature_celsius"), 1.0),
        "sm_active_percent": (_ours("sm_active_percent"), 1.0),
        "sm_occupancy_percent": (_ours("sm_occupancy_percent"), 1.0),
        "tensor_active_percent": (_ours("tensor_active_percent"), 1.0),
        "dram_active_percent": (_ours("dram_active_percent"), 1.0),
    },
)
DCGM = Exporter(
    name="dcgm-exporter",
    host_label="Hostname",
    gpu_label="gpu",
    uuid_label="UUID",
    job_selectors=('hpc_job="{job}"',),
    fields=DCGM_FIELDS,
)
NVITOP = Exporter(
    # nvitop-exporter (nvitop 1.x): prometheus_client gauges whose unit is appended to
    # the name; labels hostname, index, devicename, uuid -- no job label, so its nodes
    # are read only by name (--nodes, or scontrol).
    name="nvitop-exporter",
    host_label="hostname",
    gpu_label="index",
    uuid_label="uuid",
    job_selectors=(),
    fields={
        "sm_percent": ("gpu_utilization_Percentage", 1.0),
        "memory_access_percent": ("gpu_memory_utilization_Percentage", 1.0),
        "vram_used_bytes": ("gpu_memory_used_MiB", MIB),
        "vram_total_bytes": ("gpu_memory_total_MiB", MIB),
        "pcie_rx_bytes_per_s": ("gpu_pcie_rx_throughput_MiBps", MIB),
        "pcie_tx_bytes_per_s": ("gpu_pcie_tx_throughput_MiBps", MIB),
        "power_watts": ("gpu_power_usage_W", 1.0),
        "power_limit_watts": ("gpu_power_limit_W", 1.0),
        "sm_clock_mhz": ("gpu_clock_sm_MHz", 1.0),
        "temperature_c": ("gpu_temperature_C", 1.0),
    },
)
JOBSTATS = Exporter(
    name="jobstats nvidia_gpu exporter",
    host_label="instance",
    gpu_label="minor_number",
    uuid_label="uuid",
    job_selectors=(),
    join=" and on(instance, minor_number) (nvidia_gpu_jobId == {job})",
    fields={
        "sm_percent": ("nvidia_gpu_duty_cycle", 1.0),
        "vram_used_bytes": ("nvidia_gpu_memory_used_bytes", 1.0),
        "vram_total_bytes": ("nvidia_gpu_memory_total_bytes", 1.0),
        "power_watts": ("nvidia_gpu_power_usage_milliwatts", 1e-3),
        "temperature_c": ("nvidia_gpu_temperature_celsius", 1.0),
    },
)
EXPORTERS = (OURS, DCGM, NVITOP, JOBSTATS)
"""In order of preference for a node that more than one of them covers."""

INT_FIELDS = frozenset(
    {"vram_used_bytes", "vram_total_bytes", "sm_clock_mhz", "pcie_generation", "pcie_width"}
)


def _regex(names: Sequence[str]) -> str:
    """A PromQL (RE2) alternation of the literal names, quoted for a label matcher."""
    return "|".join(re.escape(n).replace("\\", "\\\\") for n in names)


def exporter_query(exporter: Exporter, job: str, nodes: Sequence[str]) -> str | None:
    """The one query that reads every field of ``exporter`` for the job's GPUs (a name
    matcher over its metrics; a union where it has several job labels; its join), or
    None where it cannot find the job. The same query serves an instant read (a
    monitor tick) and a range read (the report)."""
    sels = selectors(exporter, job, nodes)
    if not sels:
        return None
    names = "|".join(sorted(metric for metric, _ in exporter.fields.values()))
    matcher = f'__name__=~"{names}"'
    # Each selector is "{matchers}" (or "" for a join): the name matcher goes inside.
    union = " or ".join("{" + matcher + ("," + s[1:-1] if s else "") + "}" for s in sels)
    if exporter.join and not nodes:  # by node: every GPU of the node, no join
        return f"({union}){exporter.join.format(job=promql_string(job))}"
    return union


def selectors(exporter: Exporter, job: str, nodes: Sequence[str]) -> tuple[str, ...]:
    """The series selectors of the job's GPUs for ``exporter`` (any of them): by its
    job label, or by node name where ``nodes`` are given; ("",) for one that finds
    the job by a join, () for one that cannot find it."""
    if nodes:
        pattern = _regex(nodes)
        if exporter.host_label == "instance":
            return (f'{{instance=~"({pattern})(:[0-9]+)?"}}',)
        return (f'{{{exporter.host_label}=~"{pattern}"}}',)
    if exporter.job_selectors:
        return tuple("{" + m.format(job=promql_string(job)) + "}" for m in exporter.job_selectors)
    return ("",) if exporter.join else ()


def promql_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def check_job(job: str) -> str:
    """A job id as given on the command line; ValueError if it could not be one."""
    if not re.fullmatch(r"[0-9A-Za-z_.\-]+", job or ""):
        raise ValueError(f"--job {job!r}: a job id is letters, digits, '_', '.' and '-'")
    return job


@dataclass
class _Gpu:
    node: str
    gpu: str
    exporter: Exporter
    uuid: str | None = None
    values: dict[str, dict[float, float]] = field(default_factory=dict)
    """field -> time -> value."""


QUIET_SHARE = 0.1
"""A node missing from more than this share of the job's points is named as quiet."""


@dataclass(frozen=True)
class NodeGap:
    """A node with no data at some of the job's points (:meth:`PrometheusJobStream.quiet_nodes`)."""

    node: str
    missing: int
    points: int
    """The job's points in the range (times any node has data)."""
    last: float
    """Its last point with data."""
    end: float
    """The job's last point."""


@dataclass(frozen=True)
class JobQuery:
    """What to read: a job (by label, or by its nodes) over a time range."""

    job: str
    start: float
    end: float
    step_s: float
    nodes: tuple[str, ...] = ()


class PrometheusJobStream:
    """The job's GPUs over the range, tick by tick (a :class:`SnapshotStream`).

    All queries are made when it is opened (one range query per kind of exporter): a
    job with no series, or a Prometheus that does not answer, fails there with a
    :class:`PrometheusError`, before anything is printed."""

    def __init__(self, client: PrometheusClient, query: JobQuery) -> None:
        self.client = client
        self.query = query
        self._gpus = self._read()
        if not self._gpus:
            raise PrometheusError(self._nothing_found())
        self._times = sorted({t for g in self._gpus for vs in g.values.values() for t in vs})
        by_node: dict[str, str] = {}
        for g in self._gpus:
            by_node.setdefault(g.node, g.exporter.name)
        self.sources = by_node
        """node -> the exporter its numbers come from."""
        read = {f for g in self._gpus for f, vs in g.values.items() if vs}
        missing = [METRIC_PROCESSES, METRIC_HOST_CPU, METRIC_SUBSECOND, METRIC_THROTTLE]
        if not read & {"pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s"}:
            missing.append("pcie")
        if "power_watts" not in read:
            missing.append("power")
        if "memory_access_percent" not in read:
            missing.append("memory_access_percent")
        nodes = sorted(by_node)
        sources = "; ".join(
            f"{name}: {', '.join(n for n in nodes if by_node[n] == name)}"
            for name in dict.fromkeys(by_node[n] for n in nodes)
        )
        self.info = StreamInfo(
            path=f"{client.url} job {query.job}",
            format="prometheus",
            interval_s=query.step_s,
            hostname=f"job {query.job} ({len(nodes)} nodes)",
            gpu_count=len(self._gpus),
            missing=tuple(missing),
            detail=f"job {query.job} on {len(nodes)} node(s), {len(self._gpus)} GPU(s), "
            f"every {query.step_s:g} s, from {sources}",
            header={"job": query.job, "nodes": nodes, "sources": dict(by_node)},
        )
        self.counters = ReadCounters()
        self.counters.saw_gpus(len(self._gpus))

    @property
    def nodes(self) -> list[str]:
        return sorted(self.sources)

    def power_means(self) -> dict[int, float]:
        """Mean power draw of each GPU (by index in the snapshots) over the range."""
        out = {}
        for i, g in enumerate(self._gpus):
            points = g.values.get("power_watts")
            if points:
                out[i] = sum(points.values()) / len(points)
        return out

    def pcie_links(self) -> dict[int, float]:
        """Each GPU's slowest PCIe link (one direction, bytes/s) over the range, by index
        in the snapshots: a link that trained down at any time counts."""
        out = {}
        for i, g in enumerate(self._gpus):
            gens, widths = g.values.get("pcie_generation", {}), g.values.get("pcie_width", {})
            speeds = [
                s
                for t in gens
                if t in widths
                and (s := pcie_link_bytes_per_s(round(gens[t]), round(widths[t]))) is not None
            ]
            if speeds:
                out[i] = min(speeds)
        return out

    def quiet_nodes(self) -> list[NodeGap]:
        """The nodes missing from more than :data:`QUIET_SHARE` of the points the job
        has (at least 2), in node order: a node that stopped answering, or whose
        exporter or scrape failed at times. Its means are over the points it has, so
        the report says so beside them."""
        out = []
        for node in self.nodes:
            have = {t for g in self._gpus if g.node == node for vs in g.values.values() for t in vs}
            missing = len(self._times) - len(have)
            if missing >= 2 and missing > QUIET_SHARE * len(self._times):
                out.append(NodeGap(node, missing, len(self._times), max(have), self._times[-1]))
        return out

    def gpus_of(self, node: str) -> list[tuple[int, str]]:
        """The node's GPUs: (index in the snapshots, the node's own GPU number)."""
        return [(i, g.gpu) for i, g in enumerate(self._gpus) if g.node == node]

    def _read(self) -> list[_Gpu]:
        q = self.query
        gpus: dict[tuple[str, str], _Gpu] = {}
        for exporter in EXPORTERS:
            expr = exporter_query(exporter, q.job, q.nodes)
            if expr is None:
                continue
            covered = {node for node, _ in gpus}
            names = exporter.by_name()
            for series in self.client.query_range(expr, q.start, q.end, q.step_s):
                read = names.get(series.labels.get("__name__", ""))
                if read is not None:
                    self._take(series, exporter, *read, covered, gpus)
        return [gpus[k] for k in sorted(gpus, key=gpu_order)]

    @staticmethod
    def _take(
        series: Series,
        exporter: Exporter,
        name: str,
        scale: float,
        covered: set[str],
        gpus: dict[tuple[str, str], _Gpu],
    ) -> None:
        node = exporter.node_of(series.labels)
        gpu = series.labels.get(exporter.gpu_label, "")
        if not node or not gpu or node in covered or not series.points:
            return  # a node another exporter already gives is read from that one
        g = gpus.get((node, gpu))
        if g is None:
            g = gpus[(node, gpu)] = _Gpu(node, gpu, exporter)
        if g.exporter is not exporter:
            return
        g.uuid = g.uuid or series.labels.get(exporter.uuid_label) or None
        g.values.setdefault(name, {}).update((t, v * scale) for t, v in series.points)

    def _nothing_found(self) -> str:
        q = self.query
        where = (
            f"on the nodes {', '.join(q.nodes)}"
            if q.nodes
            else "with a job label (gputop_hints_gpu_utilization_percent{slurm_job=...}, "
            "DCGM_FI_DEV_GPU_UTIL{hpc_job=...}, nvidia_gpu_jobId)"
        )
        return (
            f"Prometheus at {self.client.url} has no GPU series of job {q.job} {where} "
            f"between the range's start and end: is an exporter scraped on the job's nodes, "
            "and is the range (--since) when the job ran?"
        )

    def __iter__(self) -> Iterator[Snapshot]:
        host = HostSample(
            hostname=f"job {self.query.job}", cpu_percent_per_core=(), allowed_cores=()
        )
        for t in self._times:
            gpus = []
            for index, g in enumerate(self._gpus):
                now = {f: v for f, points in g.values.items() if (v := points.get(t)) is not None}
                gpus.append(gpu_sample(index, g.node, g.gpu, g.uuid, now))
            yield Snapshot(
                timestamp=t,
                interval_s=self.query.step_s,
                host=host,
                gpus=tuple(gpus),
                source="prometheus",
                source_detail=self.info.detail,
            )

    def close(self) -> None:
        """Nothing stays open: every answer was read when the stream was opened."""


def gpu_sample(
    index: int, node: str, gpu: str, uuid: str | None, values: dict[str, float]
) -> GpuSample:
    """GPU ``gpu`` of ``node`` at one time, as the ``index``-th GPU of the job's view."""
    fields = {k: round(v) if k in INT_FIELDS else v for k, v in with_totals(values).items()}
    return GpuSample(index=index, name=f"{node} GPU {gpu}", uuid=uuid, node=node, **fields)  # type: ignore[arg-type]


def gpu_order(key: tuple[str, str]) -> tuple[str, int, str]:
    node, gpu = key
    return (node, int(gpu) if gpu.isdigit() else 1 << 30, gpu)


def nodes_of_job(job: str) -> tuple[str, ...]:
    """The job's nodes from SLURM (``scontrol show job`` then ``show hostnames``); ()
    where SLURM is not here or does not know the job."""
    import shutil
    import subprocess

    if shutil.which("scontrol") is None:
        return ()
    try:
        shown = subprocess.run(
            ["scontrol", "show", "job", "-o", job],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        match = re.search(r"\bNodeList=(\S+)", shown.stdout)
        if shown.returncode != 0 or match is None or match.group(1) in ("(null)", ""):
            return ()
        names = subprocess.run(
            ["scontrol", "show", "hostnames", match.group(1)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(n for n in names.stdout.split() if n)


@record
class NodeFinding(ReportedFinding):
    """A finding a node's own ``gputop-hints export`` reported in the range: the labels
    the live view reads (:class:`ReportedFinding`) and how it held over the range."""

    seconds: float = 0.0
    """How long it was active in the range (points seen x step)."""
    first: float = 0.0
    last: float = 0.0


FindingLabels = tuple[str, str, str, str, str, str]
"""(node, rule, subtype, severity, gpu, pid): a ``gputop_hints_finding`` series' labels,
in :class:`ReportedFinding`'s field order."""


def finding_labels(labels: Mapping[str, str]) -> FindingLabels:
    """A finding series' labels as :class:`ReportedFinding`'s first fields ("" where one
    is missing)."""
    get = labels.get
    return (
        get("host", ""),
        get("rule", ""),
        get("subtype", ""),
        get("severity", ""),
        get("gpu", ""),
        get("pid", ""),
    )


LINK_QUERIES = (
    # node_exporter: Ethernet links (ethtool speed, bytes/s); virtual ones left out.
    'max by (instance) (node_network_speed_bytes{device!~"lo|docker.*|veth.*|br-.*|virbr.*"})',
    # node_exporter: InfiniBand ports (the rate the port trained at, bytes/s).
    "max by (instance) (node_infiniband_rate_bytes_per_second)",
)
"""The fastest network link of each node, where node_exporter is scraped."""


def _host_of(instance: str) -> str:
    """``gpu01.cluster:9100`` -> ``gpu01.cluster``."""
    return instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance


def node_links(client: PrometheusClient, nodes: Sequence[str], at: float) -> dict[str, float]:
    """Each node's fastest network link (bytes/s) from node_exporter at ``at``; nodes it
    does not cover are left out. A node matches an instance by name, or by the short
    name of a fully qualified one (``gpu01`` for ``gpu01.cluster:9100``)."""
    fastest: dict[str, float] = {}
    for query in LINK_QUERIES:
        for series in client.query(query, at=at):
            host = _host_of(series.labels.get("instance", ""))
            node = next((n for n in nodes if host == n or host.startswith(n + ".")), None)
            if node is None or not series.points:
                continue
            speed = series.points[-1][1]
            if speed > 0:
                fastest[node] = max(fastest.get(node, 0.0), speed)
    return fastest


def node_findings(client: PrometheusClient, query: JobQuery) -> list[NodeFinding]:
    """The findings ``gputop-hints export`` on the job's nodes reported in the range,
    worst first, then longest ([] where no node runs it)."""
    sels = selectors(OURS, query.job, query.nodes)
    union = " or ".join(f"(gputop_hints_finding{s})" for s in sels)
    out = []
    for series in client.query_range(union, query.start, query.end, query.step_s):
        if not series.points:
            continue
        out.append(
            NodeFinding(
                *finding_labels(series.labels),
                seconds=len(series.points) * query.step_s,
                first=series.points[0][0],
                last=series.points[-1][0],
            )
        )
    return sorted(out, key=_finding_order)


def _finding_order(f: NodeFinding) -> tuple[int, float, str, str, str, str]:
    return (_SEVERITY_ORDER.get(f.severity, 3), -f.seconds, f.node, f.rule, f.gpu, f.pid)


_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


FINDING = "gputop_hints_finding"
FINDING_START = "gputop_hints_finding_start_time_seconds"


def active_findings_query(job: str, nodes: Sequence[str]) -> str:
    """The one instant query for the findings the job's nodes report now: each active
    finding's ``gputop_hints_finding`` series and its start time, by the job label the
    GPU series are read by (or by node name where ``nodes`` are given)."""
    matcher = f'__name__=~"{FINDING}|{FINDING_START}"'
    return " or ".join("{" + matcher + "," + s[1:-1] + "}" for s in selectors(OURS, job, nodes))


def active_findings(
    client: PrometheusClient, job: str, nodes: Sequence[str], at: float
) -> tuple[ReportedFinding, ...]:
    """The findings ``gputop-hints export`` on the job's nodes reports at ``at`` (one
    instant query), worst first (:func:`reported_findings`); () where no node runs it
    or none has a finding. A :class:`PrometheusError` where Prometheus does not answer."""
    return reported_findings(client.query(active_findings_query(job, nodes), at=at))


def reported_findings(answer: Sequence[Series]) -> tuple[ReportedFinding, ...]:
    """An answer of :func:`active_findings_query` as findings: one per active
    ``gputop_hints_finding`` series, with the start time its twin series carries,
    worst first, then the longest held, then by node, GPU and process."""
    since: dict[FindingLabels, float] = {}
    active: dict[FindingLabels, None] = {}
    for series in answer:
        if not series.points:
            continue
        key = finding_labels(series.labels)
        name = series.labels.get("__name__", "")
        if name == FINDING and series.points[-1][1] > 0:
            active[key] = None
        elif name == FINDING_START:
            since[key] = series.points[-1][1]
    found = [ReportedFinding(*key, since=since.get(key)) for key in active]
    return tuple(sorted(found, key=_reported_order))


def _reported_order(f: ReportedFinding) -> tuple[int, float, str, int, str, int, str]:
    return (
        _SEVERITY_ORDER.get(f.severity, 3),
        f.since if f.since is not None else float("inf"),
        f.node,
        int(f.gpu) if f.gpu.isdigit() else -1,
        f.gpu,
        int(f.pid) if f.pid.isdigit() else -1,
        f.rule,
    )
