"""The multi-node part of ``gputop-hints report --prometheus URL --job ID``.

The job's GPUs, read back from Prometheus (:mod:`gputop_hints.sources.prometheus`),
go through the ordinary report as one machine; this adds what only a job-wide
view can say (docs/cluster.md, "The multi-node job view"):

* **Nodes**: each node, where its numbers come from, its GPUs' index in the
  report's tables, their mean utilization, power and VRAM peak.
* **Across nodes**: a node far less busy than the others, or holding a different
  amount of memory, over the whole range -- judged as the uneven-nodes rule judges
  a window (:mod:`gputop_hints.hints.rules.uneven_nodes`, docs/hints.md). Neither
  says *why*: the node's own findings do.
* **Findings the nodes reported**: what ``gputop-hints export`` on each node
  found with its host data (the cause the job-wide view cannot see).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gputop_hints.hints.rules.uneven_nodes import NodeLevel, UnevenNodes, uneven
from gputop_hints.outputs.report import Report
from gputop_hints.sources.prometheus import NodeFinding, NodeGap
from gputop_hints.text import visible_lines
from gputop_hints.units import duration_text, human_bytes


@dataclass(frozen=True)
class NodeRow:
    node: str
    source: str
    gpus: tuple[tuple[int, str], ...]
    """(index in the report's tables, the node's own GPU number)."""
    sm_mean: float | None
    power_mean: float | None
    vram_peak_bytes: int | None
    link_bytes_per_s: float | None = None
    """Its fastest network link (node_exporter), where known."""
    pcie_bytes_per_s: float | None = None
    """The slowest PCIe link of its GPUs (one direction), where known."""


@dataclass(frozen=True)
class JobSection:
    job: str
    url: str
    nodes: tuple[NodeRow, ...]
    uneven: tuple[str, ...]
    findings: tuple[NodeFinding, ...]
    missing: tuple[str, ...] = ()
    """Nodes of the job (named by --nodes or SLURM) with no GPU series in the range."""
    quiet: tuple[NodeGap, ...] = ()
    """Nodes with no data at some of the job's points (stopped, or scraped with gaps)."""


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def node_rows(
    report: Report,
    sources: Mapping[str, str],
    gpus_of: Mapping[str, Sequence[tuple[int, str]]],
    power_means: Mapping[int, float],
    links: Mapping[str, float] | None = None,
    pcie: Mapping[int, float] | None = None,
) -> tuple[NodeRow, ...]:
    """Each node's summary from the report's per-GPU statistics."""
    stats = {g.index: g for g in report.gpus}
    rows = []
    for node in sorted(sources):
        gpus = tuple(gpus_of.get(node, ()))
        sm = [m for i, _ in gpus if (m := stats[i].sm.mean) is not None] if stats else []
        power = [power_means[i] for i, _ in gpus if i in power_means]
        peaks = [p for i, _ in gpus if i in stats and (p := stats[i].vram_peak_bytes) is not None]
        lanes = [pcie[i] for i, _ in gpus if pcie is not None and i in pcie]
        rows.append(
            NodeRow(
                node=node,
                source=sources[node],
                gpus=gpus,
                sm_mean=_mean(sm),
                power_mean=_mean(power),
                vram_peak_bytes=max(peaks) if peaks else None,
                link_bytes_per_s=(links or {}).get(node),
                pcie_bytes_per_s=min(lanes) if lanes else None,
            )
        )
    return tuple(rows)


def uneven_nodes(rows: Sequence[NodeRow], c: UnevenNodes) -> tuple[str, ...]:
    """What differs between nodes over the whole range, judged as the uneven-nodes rule
    judges a window (docs/hints.md#uneven-nodes), in words for the report."""
    levels = [
        NodeLevel(r.node, tuple(i for i, _ in r.gpus), r.sm_mean, r.vram_peak_bytes) for r in rows
    ]
    out = list(slow_links(rows, c))
    for u in uneven(levels, c):
        if u.what == "busy":
            out.append(
                f"{u.node} runs kernels {u.value:.0f} % of the time against a median of "
                f"{u.median:.0f} % over the nodes: in a synchronous job the ranks are about "
                "equally busy, so this node waits on something of its own (input, host "
                "CPU, storage, network) while the others wait for it; see its own "
                "findings, or run gputop-hints on it."
            )
        else:
            out.append(
                f"{u.node} holds up to {human_bytes(u.value)} of VRAM per GPU against a "
                f"median of {human_bytes(u.median)} over the nodes: a different batch, "
                "shard or model there, or ranks not all running."
            )
    return tuple(out)


def slow_links(rows: Sequence[NodeRow], c: UnevenNodes) -> list[str]:
    """A node whose fastest network link, or whose slowest GPU's PCIe link, is under
    ``link_share`` of the median node's: every collective of a synchronous job moves the
    same bytes through each rank (through its NIC, and between the GPU and the NIC over
    PCIe unless GPUDirect bypasses it), so the slowest link paces every step -- a port
    that trained down, a fallback to Ethernet where the others use InfiniBand, a GPU
    link at Gen3 x8 after a fault."""

    def network(r: NodeRow, median: float) -> str:
        return (
            f"{r.node}'s fastest network link is {_bits(r.link_bytes_per_s or 0)} against a "
            f"median of {_bits(median)} over the nodes: every collective moves the same bytes "
            "through each rank, so this link paces every step (a port trained down, or a "
            "fallback network)."
        )

    def pcie(r: NodeRow, median: float) -> str:
        return (
            f"{r.node} has a GPU on a PCIe link of {human_bytes(r.pcie_bytes_per_s)}/s against "
            f"a median of {human_bytes(median)}/s over the nodes: the link trained down "
            "(nvidia-smi -q: 'Link Width', 'PCIe Generation'; reseat or RMA), and every "
            "copy and collective through it is slower."
        )

    return _below_median(rows, lambda r: r.link_bytes_per_s, c.link_share, network) + (
        _below_median(rows, lambda r: r.pcie_bytes_per_s, c.link_share, pcie)
    )


def _below_median(
    rows: Sequence[NodeRow],
    value: Callable[[NodeRow], float | None],
    share: float,
    text: Callable[[NodeRow, float], str],
) -> list[str]:
    """``text`` for each node whose ``value`` is under ``share`` of the nodes' median
    (of those where it is known; at least two)."""
    known = [v for r in rows if (v := value(r))]
    if len(known) < 2:
        return []
    median = statistics.median(known)
    return [text(r, median) for r in rows if (v := value(r)) and v < share * median]


def _bits(bytes_per_s: float) -> str:
    gbit = bytes_per_s * 8 / 1e9
    return f"{gbit:.0f} Gb/s" if gbit >= 1 else f"{gbit * 1000:.0f} Mb/s"


def job_section_text(section: JobSection) -> str:
    """The job part of the report, as plain text (external strings made visible)."""
    out = [f"Job {section.job}: {len(section.nodes)} node(s), from Prometheus at {section.url}"]
    out.append(
        f"  {'NODE':<24} {'GPU=report index':<24} {'SM % mean':>9} {'power W':>8} "
        f"{'VRAM peak':>10} {'net link':>9} {'PCIe link':>11}  source"
    )
    for r in section.nodes:
        gpus = ", ".join(f"{own}={i}" for i, own in r.gpus)
        sm = "n/a" if r.sm_mean is None else f"{r.sm_mean:.0f}"
        power = "n/a" if r.power_mean is None else f"{r.power_mean:.0f}"
        vram = "n/a" if r.vram_peak_bytes is None else human_bytes(r.vram_peak_bytes)
        link = "n/a" if not r.link_bytes_per_s else _bits(r.link_bytes_per_s)
        lanes = "n/a" if not r.pcie_bytes_per_s else f"{human_bytes(r.pcie_bytes_per_s)}/s"
        out.append(
            f"  {r.node:<24} {gpus:<24} {sm:>9} {power:>8} {vram:>10} {link:>9} {lanes:>11}"
            f"  {r.source}"
        )
    if section.missing:
        out.append(
            f"  no GPU series in the range for: {', '.join(section.missing)} (no exporter "
            "scraped there, or the job ran no GPU there)"
        )
    out.extend(f"  [!] {quiet_text(gap)}" for gap in section.quiet)
    out.append("")
    if section.uneven:
        out.append("Across nodes:")
        out.extend(f"  [!] {line}" for line in section.uneven)
    else:
        out.append("Across nodes: the nodes are about equally busy and hold about the same memory.")
    out.append("")
    if section.findings:
        out.append("Findings the nodes' own gputop-hints export reported (with their host data):")
        for f in section.findings:
            subject = f"GPU {f.gpu}" + (f" pid {f.pid}" if f.pid else "")
            rule = f.rule + (f"/{f.subtype}" if f.subtype else "")
            out.append(
                f"  {f.node:<24} {rule:<36} {f.severity:<8} {subject:<18} "
                f"{duration_text(f.seconds)}"
            )
    else:
        out.append(
            "Findings the nodes reported: none (no node runs gputop-hints export, or it "
            "found nothing in the range)."
        )
    return visible_lines("\n".join(out) + "\n")


def quiet_text(gap: NodeGap) -> str:
    """ "no data from node3 since 14:02:10, 9 of 13 points missing ..."."""
    share = f"{gap.missing} of {gap.points} points missing"
    if gap.last < gap.end:
        since = time.strftime("%H:%M:%S", time.localtime(gap.last))
        said = f"no data from {gap.node} since {since}, {share}"
    else:
        said = f"{gap.node} has gaps: {share}"
    return f"{said} (its exporter or its scrape failed): its figures are over the points it has."


def job_section_json(section: JobSection) -> dict[str, Any]:
    return {
        "job": section.job,
        "prometheus": section.url,
        "nodes": [
            {
                "node": r.node,
                "source": r.source,
                "gpus": [{"index": i, "gpu": own} for i, own in r.gpus],
                "sm_percent_mean": r.sm_mean,
                "power_watts_mean": r.power_mean,
                "vram_peak_bytes": r.vram_peak_bytes,
                "network_link_bytes_per_s": r.link_bytes_per_s,
                "pcie_link_bytes_per_s": r.pcie_bytes_per_s,
            }
            for r in section.nodes
        ],
        "uneven": list(section.uneven),
        "nodes_without_series": list(section.missing),
        "quiet_nodes": [
            {"node": g.node, "missing_points": g.missing, "points": g.points, "last_data": g.last}
            for g in section.quiet
        ],
        "node_findings": [
            {
                "node": f.node,
                "rule": f.rule,
                "subtype": f.subtype or None,
                "severity": f.severity,
                "gpu": f.gpu,
                "pid": f.pid or None,
                "seconds": f.seconds,
                "first": f.first,
                "last": f.last,
            }
            for f in section.findings
        ],
    }
