"""straggler: one GPU of a multi-GPU job runs kernels far less than its peers."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_SM

ID = "straggler"


def _jobs(win: Window, t: Thresholds) -> dict[tuple[str | None, str], set[int]]:
    """Multi-GPU jobs: GPUs whose significant processes share user and command line.

    DDP launchers (torchrun, mpirun, srun) start every rank with the same command.
    """
    min_vram = t.general.min_vram_gib * GIB
    jobs: dict[tuple[str | None, str], set[int]] = defaultdict(set)
    for proc in win.processes():
        if (proc.vram_bytes or 0) >= min_vram and proc.command:
            jobs[(proc.user, proc.command)].add(proc.gpu_index)
    return {k: v for k, v in jobs.items() if len(v) >= 2}


@dataclass(frozen=True, slots=True)
class Straggling:
    """One GPU of a multi-GPU job running well below its peers."""

    gpu_index: int
    sm_mean: float
    peers_median: float
    peers: list[int]
    """The job's other GPUs, ascending."""
    user: str | None
    command: str


def stragglers(win: Window, t: Thresholds) -> list[Straggling]:
    """Each straggling GPU of each multi-GPU job (compute-bound asks too: its peers wait)."""
    c = t.straggler
    out = []
    for (user, command), gpus in _jobs(win, t).items():
        known = {i: m for i in gpus if (m := win.gpu_sm_mean(i)) is not None}
        for index, sm in known.items():
            peers = [m for i, m in known.items() if i != index]
            if not peers:
                continue
            median = statistics.median(peers)
            if median >= c.peers_sm_above_percent and sm <= median - c.below_peers_points:
                others = sorted(i for i in known if i != index)
                out.append(Straggling(index, sm, median, others, user, command))
    return out


def check(win: Window, t: Thresholds) -> list[Finding]:
    """One GPU of a multi-GPU job well below its peers' median SM %."""
    c = t.straggler
    out: list[Finding] = []
    for s in stragglers(win, t):
        index, sm, median, peers = s.gpu_index, s.sm_mean, s.peers_median, s.peers
        out.append(
            Finding(
                rule=ID,
                subject=Subject(index),
                severity=Severity.WARNING,
                label=f"straggler: {sm:.0f}% vs {median:.0f}%",
                summary=(
                    f"GPU {index} runs kernels {sm:.0f} % of the time while the other "
                    f"{len(peers)} GPU(s) of the same job ({s.user or 'n/a'}: {s.command[:40]}) "
                    f"run {median:.0f} % -- mostly waiting for this rank in collectives: it "
                    "holds the whole job back."
                ),
                advice=(
                    "Look at this rank's input: uneven shards or sample sizes "
                    "(DistributedSampler, length-grouped batches), a slower data path.",
                    "Check this rank's GPU and cores: throttling, a slower PCIe link, other "
                    "jobs' processes on its cores.",
                ),
                evidence=(
                    Evidence("SM % (mean)", sm, f"<= peers' median - {c.below_peers_points:g}"),
                    Evidence(
                        f"peers' median SM % (GPUs {', '.join(map(str, peers))})",
                        median,
                        f">= {c.peers_sm_above_percent:g}",
                    ),
                ),
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds="straggler",
    title="Straggler",
    sentence=(
        "One GPU of a multi-GPU job runs kernels far less than its peers, which wait for it "
        "in collectives: that rank sets the pace of the whole job."
    ),
    subject="gpu",
    needs=(METRIC_SM, METRIC_PROCESSES),
    explains_low_utilization=True,
)
