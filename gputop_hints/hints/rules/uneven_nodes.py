"""uneven-nodes: in a job across nodes, one node far less busy (or holding far more or
less memory) than the others, or the one node working while the others spin.

Only where the view holds GPUs of several nodes (:attr:`GpuSample.node`: a job read
back from Prometheus, ``gputop-hints --prometheus URL --job ID`` and ``report
--prometheus``). In a synchronous data-parallel job (DDP, FSDP, DeepSpeed, Megatron's
data-parallel groups) every step ends in a collective that waits for the slowest
rank, so the ranks' GPUs run about the same kernel time per step. A node whose GPUs
run kernels less than ``busy_ratio`` of the median node's share, and at least
``busy_points`` less, waits on something of its own -- input, host CPU, storage, its
network -- while the others wait for it (spinning in NCCL, which NVML counts as busy,
or idle). The median is taken over all nodes: with one odd node of three, the median
of the *other two* would sit halfway and call a normal node odd too.

When the others *spin* (every node reads busy), utilization cannot name the node they
wait for, but power can: a spinning GPU draws near its idle power, a working one well
over half its limit (see utilization-overstated); every node busy, the median node
under ``spin_power_share`` of its limit and one at ``work_power_share`` or more: that
one is the straggler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.signals import level_window
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window, median_of
from gputop_hints.model import METRIC_SM, GpuSample
from gputop_hints.units import human_bytes

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "uneven-nodes"


@dataclass(frozen=True)
class UnevenNodes:
    """uneven-nodes' thresholds: the ``uneven_nodes:`` section of defaults.yaml."""

    busy_ratio: float = field(
        metadata=threshold(0, 1, "", "a node below this share of the median node's SM % ...")
    )
    busy_points: float = field(
        metadata=threshold(0, 100, "%", "... and at least this many points below it")
    )
    vram_share: float = field(
        metadata=threshold(0, 10, "", "a node's VRAM this far (either way) from the median's")
    )
    all_busy_percent: float = field(
        metadata=threshold(0, 100, "%", "straggler: every node busy at least this much ...")
    )
    spin_power_share: float = field(
        metadata=threshold(0, 1, "", "... the median node under this share of its power limit ...")
    )
    work_power_share: float = field(
        metadata=threshold(0, 1, "", "... and the node at or above this share: it does the work")
    )
    link_share: float = field(
        metadata=threshold(0, 1, "", "report: a node's fastest network link under this share")
    )
    hysteresis: Hysteresis


@dataclass(frozen=True)
class NodeLevel:
    """One node's GPUs over a window: their mean SM % and their VRAM in use."""

    node: str
    gpus: tuple[int, ...]
    sm_mean: float | None
    vram_bytes: int | None
    """The most any of its GPUs holds."""
    power_share: float | None = None
    """Mean power draw over the enforced limit, over its GPUs (None: not known)."""


@dataclass(frozen=True)
class Uneven:
    node: str
    what: str
    """"busy", "vram" or "straggler" (``value``/``median`` are power shares then)."""
    value: float
    median: float


def uneven(levels: Sequence[NodeLevel], c: UnevenNodes) -> list[Uneven]:
    """The nodes that differ from the median node beyond what a synchronous job
    explains (module docstring); [] with fewer than two nodes."""
    if len(levels) < 2:
        return []
    out: list[Uneven] = []
    busy = [n.sm_mean for n in levels if n.sm_mean is not None]
    held = [n.vram_bytes for n in levels if n.vram_bytes is not None]
    median_busy = median_of(busy) if len(busy) >= 2 else None
    median_held = median_of(held) if len(held) >= 2 else None
    for n in levels:
        sm = n.sm_mean
        if (
            sm is not None
            and median_busy is not None
            and sm < c.busy_ratio * median_busy
            and median_busy - sm >= c.busy_points
        ):
            out.append(Uneven(n.node, "busy", sm, median_busy))
        held_now = n.vram_bytes
        if (
            held_now is not None
            and median_held
            and abs(held_now - median_held) > c.vram_share * median_held
        ):
            out.append(Uneven(n.node, "vram", float(held_now), float(median_held)))
    out.extend(_straggler(levels, c))
    return out


def _straggler(levels: Sequence[NodeLevel], c: UnevenNodes) -> list[Uneven]:
    """Every node reads busy, most at spinning power, one at working power: the others
    spin in a collective (NCCL's kernels count as busy at near-idle power) waiting for
    it. Utilization cannot tell them apart; power can."""
    busy = [n.sm_mean for n in levels]
    shares = [n.power_share for n in levels if n.power_share is not None]
    if any(b is None or b < c.all_busy_percent for b in busy) or len(shares) < len(levels):
        return []
    median = median_of(shares)
    if median >= c.spin_power_share:
        return []
    return [
        Uneven(n.node, "straggler", n.power_share, median)
        for n in levels
        if n.power_share is not None and n.power_share >= c.work_power_share
    ]


def node_levels(
    gpus: Sequence[GpuSample],
    sm_mean: Mapping[int, float | None],
    power_mean: Mapping[int, float | None] | None = None,
) -> list[NodeLevel]:
    """Each node's level from its GPUs (those with a node), in node order."""
    by_node: dict[str, list[GpuSample]] = {}
    for g in gpus:
        if g.node is not None:
            by_node.setdefault(g.node, []).append(g)
    out = []
    for node in sorted(by_node):
        members = by_node[node]
        sms = [m for g in members if (m := sm_mean.get(g.index)) is not None]
        vram = [g.vram_used_bytes for g in members if g.vram_used_bytes is not None]
        shares = [
            p / g.power_limit_watts
            for g in members
            if power_mean is not None
            and (p := power_mean.get(g.index)) is not None
            and g.power_limit_watts
        ]
        out.append(
            NodeLevel(
                node,
                tuple(g.index for g in members),
                sum(sms) / len(sms) if sms else None,
                max(vram) if vram else None,
                sum(shares) / len(shares) if len(shares) == len(members) else None,
            )
        )
    return out


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A node far less busy than the median node, or holding far different VRAM."""
    gpus = win.latest.gpus
    if len({g.node for g in gpus if g.node is not None}) < 2:
        return []
    c = t.uneven_nodes
    level = level_window(win, t)
    levels = node_levels(
        gpus,
        {g.index: level.gpu_sm_mean(g.index) for g in gpus},
        {g.index: level.gpu_power_mean(g.index) for g in gpus},
    )
    by_node = {n.node: n for n in levels}
    return [_finding(u, index, c) for u in uneven(levels, c) for index in by_node[u.node].gpus]


def _finding(u: Uneven, index: int, c: UnevenNodes) -> Finding:
    if u.what == "straggler":
        return Finding(
            rule=ID,
            subject=Subject(index),
            severity=Severity.WARNING,
            subtype="straggler",
            label=f"{u.node}: the others wait",
            summary=(
                f"Every node reads busy, but node {u.node}'s GPUs draw {u.value * 100:.0f} % "
                f"of their power limit against a median of {u.median * 100:.0f} %: the other "
                "nodes spin in a collective (NCCL's kernels count as busy at near-idle power) "
                f"waiting for {u.node}, which does the work -- it sets the job's pace."
            ),
            advice=(
                f"Look at {u.node}: a slower GPU or lower clocks (power cap, thermals), "
                "more work on its ranks (uneven sharding, a longer sequence bucket), or "
                "its own input pipeline; gputop-hints on that node shows which.",
                "Balance the work per rank (same batch and sequence lengths on every "
                "rank), or exclude the slow node from the job.",
            ),
            evidence=(
                Evidence(
                    "node power / limit (mean)",
                    u.value * 100,
                    f">= {c.work_power_share * 100:g} (working)",
                ),
                Evidence(
                    "median node power / limit (mean)",
                    u.median * 100,
                    f"< {c.spin_power_share * 100:g} (spinning)",
                ),
            ),
        )
    if u.what == "busy":
        return Finding(
            rule=ID,
            subject=Subject(index),
            severity=Severity.WARNING,
            subtype="less-busy",
            label=f"{u.node} {u.value:.0f}% vs {u.median:.0f}%",
            summary=(
                f"Node {u.node}'s GPUs run kernels {u.value:.0f} % of the time against a "
                f"median of {u.median:.0f} % over the job's nodes: in a synchronous job "
                "the ranks are about equally busy, so this node waits on something of its "
                "own (input, host CPU, storage, its network) while the others wait for it."
            ),
            advice=(
                f"Look at {u.node} itself: gputop-hints on that node (srun --jobid=<id> "
                "--overlap -w <node> --pty gputop-hints), or its own findings "
                "(gputop_hints_finding{host=...}) name the cause.",
                "Common causes: its data on slower storage or not cached, fewer CPU "
                "cores or another job on them, a slower network link, a lower clock "
                "(power cap, thermals).",
            ),
            evidence=(
                Evidence("node SM % (mean)", u.value, f"< {c.busy_ratio:g} x the median"),
                Evidence(
                    "median node SM % (mean)",
                    u.median,
                    f"at least {c.busy_points:g} points above",
                ),
            ),
        )
    return Finding(
        rule=ID,
        subject=Subject(index),
        severity=Severity.INFO,
        subtype="memory",
        label=f"{u.node} VRAM uneven",
        summary=(
            f"Node {u.node}'s GPUs hold up to {human_bytes(u.value)} against a median of "
            f"{human_bytes(u.median)} over the job's nodes: a different batch, shard or "
            "model there, or not all its ranks running."
        ),
        advice=(
            "Data-parallel ranks hold the same model and batch: check that every rank "
            "started and uses the same batch size; pipeline stages may differ by design.",
        ),
        evidence=(
            Evidence(
                "node VRAM (most on one GPU)",
                u.value / 2**30,
                f"more than {c.vram_share * 100:g} % off the median",
                "GiB",
            ),
            Evidence("median node VRAM", u.median / 2**30, "for context", "GiB", met=None),
        ),
    )


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=UnevenNodes,
    title="Uneven nodes",
    sentence=(
        "In a job across nodes, one node's GPUs run kernels far less of the time than the "
        "others' (or hold far different memory): in a synchronous job the ranks are about "
        "equally busy, so that node waits on something of its own."
    ),
    subject="gpu",
    needs=(METRIC_SM,),
    explains_low_utilization=True,
)
