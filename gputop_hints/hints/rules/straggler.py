"""straggler: one GPU of a multi-GPU job runs kernels far less than its peers."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.collective_hang import hangs, power_share
from gputop_hints.hints.rules.shared import multi_gpu_jobs
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_SM

ID = "straggler"


@dataclass(frozen=True, slots=True)
class Straggling:
    """The rank of a multi-GPU job that sets the pace, and how it shows."""

    gpu_index: int
    pid: int
    sm_mean: float
    peers_median: float
    """The peers' median of the compared quantity: SM % (gaps) or power % of the limit (busy)."""
    peers: list[int]
    """The job's other GPUs, ascending."""
    user: str | None
    command: str
    never_waits: bool = False
    """True: found by power -- every rank reads busy, but only this one computes the whole
    time while its peers spin in the all-reduce; False: its own trace has gaps (SM below)."""
    own: float = 0.0
    """This rank's value of the compared quantity."""


def stragglers(win: Window, t: Thresholds) -> list[Straggling]:
    """Once per window; see :func:`_stragglers_uncached`."""
    return win.derived(("stragglers", id(t)), lambda: _stragglers_uncached(win, t))


def _stragglers_uncached(win: Window, t: Thresholds) -> list[Straggling]:
    """Each straggling rank of each multi-GPU job (compute-bound asks too: its peers wait).

    Two signatures (HTA's straggler analysis; NCCL spins while waiting): a rank whose
    GPU idles far more than its peers (its input or host is slow), or -- when every
    rank reads busy, because waiting ranks spin at 100 % -- the one rank drawing
    clearly more power than the rest: the only one that never waits.
    """
    c = t.straggler
    out = []
    hung = {h.proc.key for h in hangs(win, t)}
    for (user, command), ranks in multi_gpu_jobs(win, t).items():
        if any(p.key in hung for p in ranks.values()):
            continue  # a rank that stopped arriving is a hang, not a slow rank
        known = {i: m for i in ranks if (m := win.gpu_sm_mean(i)) is not None}
        for index, sm in known.items():
            peers = [m for i, m in known.items() if i != index]
            if not peers:
                continue
            median = statistics.median(peers)
            others = sorted(i for i in known if i != index)
            if median >= c.peers_sm_above_percent and sm <= median - c.below_peers_points:
                out.append(
                    Straggling(index, ranks[index].pid, sm, median, others, user, command, own=sm)
                )
        if out or not known or min(known.values()) < c.all_busy_sm_percent:
            continue
        power = {i: s for i in known if (s := power_share(win, i)) is not None}
        for index, share in power.items():
            peers = [s for i, s in power.items() if i != index]
            if len(peers) < 1:
                continue
            median = statistics.median(peers)
            if share * 100 >= median * 100 + c.power_above_peers_points:
                others = sorted(i for i in power if i != index)
                out.append(
                    Straggling(
                        index,
                        ranks[index].pid,
                        known[index],
                        median * 100,
                        others,
                        user,
                        command,
                        never_waits=True,
                        own=share * 100,
                    )
                )
    return out


def check(win: Window, t: Thresholds) -> list[Finding]:
    """The rank of a multi-GPU job that sets its pace: gaps below its peers, or never waiting."""
    c = t.straggler
    out: list[Finding] = []
    for s in stragglers(win, t):
        index, median, peers = s.gpu_index, s.peers_median, s.peers
        gpus = ", ".join(map(str, peers))
        job = f"({s.user or 'n/a'}: {s.command[:40]})"
        if s.never_waits:
            label = "straggler: never waits"
            summary = (
                f"Every rank of the job {job} reads busy, but GPU {index} draws {s.own:.0f} % of "
                f"its power limit while GPUs {gpus} draw {median:.0f} %: they spend part of each "
                "step spinning in the all-reduce (busy at low power) waiting for this rank, "
                "which never waits -- it sets the pace."
            )
            evidence: tuple[Evidence, ...] = (
                Evidence(
                    "power / limit (mean)",
                    s.own,
                    f">= peers' median + {c.power_above_peers_points:g}",
                ),
                Evidence(
                    f"peers' median power / limit (GPUs {gpus})", median, "for context", met=None
                ),
                Evidence("SM % (mean)", s.sm_mean, f">= {c.all_busy_sm_percent:g} on every rank"),
            )
            advice = (
                "This rank gets more work per step: uneven sequence lengths or sample sizes "
                "(length-grouped or bucketed batches, DistributedSampler padding) or an uneven "
                "model split.",
                "Check this rank's GPU: throttling or a slower board sets the pace just the same.",
            )
        else:
            label = f"straggler: {s.own:.0f}% vs {median:.0f}%"
            summary = (
                f"GPU {index} runs kernels {s.own:.0f} % of the time while the other "
                f"{len(peers)} GPU(s) of the same job {job} run {median:.0f} % -- mostly "
                "waiting for this rank in collectives: it holds the whole job back."
            )
            evidence = (
                Evidence("SM % (mean)", s.own, f"<= peers' median - {c.below_peers_points:g}"),
                Evidence(
                    f"peers' median SM % (GPUs {gpus})",
                    median,
                    f">= {c.peers_sm_above_percent:g}",
                ),
            )
            advice = (
                "Look at this rank's input: uneven shards or sample sizes "
                "(DistributedSampler, length-grouped batches), a slower data path, fewer "
                "loader workers or cores.",
                "Check this rank's GPU and cores: throttling, a slower PCIe link, other "
                "jobs' processes on its cores.",
            )
        out.append(
            Finding(
                rule=ID,
                subject=Subject(index, s.pid),
                severity=Severity.WARNING,
                label=label,
                summary=summary,
                advice=advice,
                evidence=evidence,
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds="straggler",
    title="Straggler",
    sentence=(
        "One rank of a multi-GPU job sets the pace: its GPU idles far more than its peers', or "
        "-- when all read busy because waiting ranks spin -- it alone draws full power."
    ),
    subject="process",
    needs=(METRIC_SM, METRIC_PROCESSES),
    explains_low_utilization=True,
)
