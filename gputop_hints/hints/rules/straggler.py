"""straggler: one GPU of a multi-GPU job runs kernels far less than its peers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.rules.signals import STEADY_GAP_SHARE, stragglers
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_SM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "straggler"


@dataclass(frozen=True)
class Straggler:
    """straggler's thresholds: the ``straggler:`` section of defaults.yaml."""

    below_peers_points: float = field(
        metadata=threshold(0, 100, "points", "SM this many points below the peers' median")
    )
    peers_sm_above_percent: float = field(
        metadata=threshold(0, 100, "%", "only when the peers are busier than this")
    )
    all_busy_sm_percent: float = field(
        metadata=threshold(0, 100, "%", "every rank at least this busy: compare power instead")
    )
    power_above_peers_points: float = field(
        metadata=threshold(0, 100, "points", "power % of limit this far above the peers' median")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """The rank of a multi-GPU job that sets its pace: gaps below its peers, or never waiting."""
    c = t.straggler
    out: list[Finding] = []
    for s in stragglers(win, t):
        index, median, peers = s.gpu_index, s.peers_median, s.peers
        gpus = ", ".join(map(str, peers))
        job = f"({s.user or 'n/a'}: {s.command[:40]})"
        if s.steady:
            label = "straggler: never waits (gaps)"
            summary = (
                f"Every other rank of the job {job} -- GPUs {gpus} -- idles in gaps a median "
                f"{median:.0f} % of the time, while GPU {index} runs without a gap ({s.own:.0f} "
                f"% in gaps, at {s.sm_mean:.0f} % SM): each step they wait at the collective "
                "for this rank, which never waits -- it sets the pace."
            )
            evidence: tuple[Evidence, ...] = (
                Evidence(
                    "time in idle gaps", s.own, f"< {STEADY_GAP_SHARE * 100:g} % (never waits)"
                ),
                Evidence(
                    f"peers' median time in idle gaps (GPUs {gpus})",
                    median,
                    f">= {t.input_starved.min_gap_fraction * 100:g} % on every peer",
                ),
                Evidence("SM % (mean)", s.sm_mean, "for context", met=None),
            )
            advice = (
                "This rank gets more work per step, or does it slower: uneven shards or "
                "sample sizes (DistributedSampler, length-grouped batches), an uneven model "
                "split, fewer loader workers or cores on its node.",
                "Check this rank's GPU: throttling or a slower board sets the pace just the same.",
            )
        elif s.never_waits:
            label = "straggler: never waits"
            summary = (
                f"Every rank of the job {job} reads busy, but GPU {index} draws {s.own:.0f} % of "
                f"its power limit while GPUs {gpus} draw {median:.0f} %: they spend part of each "
                "step spinning in the all-reduce (busy at low power) waiting for this rank, "
                "which never waits -- it sets the pace."
            )
            evidence = (
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
    thresholds_class=Straggler,
    title="Straggler",
    sentence=(
        "One rank of a multi-GPU job sets the pace: its GPU idles far more than its peers', or "
        "-- when all read busy because waiting ranks spin -- it alone draws full power."
    ),
    subject="process",
    needs=(METRIC_SM, METRIC_PROCESSES),
    explains_low_utilization=True,
)
