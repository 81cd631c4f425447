"""collective-hang: GPUs read ~100 % busy at near-idle power -- ranks spinning in a collective.

NVML's utilization is the share of time *any* kernel runs (NVML,
``nvmlUtilization_t``). NCCL's all-reduce is a kernel that spins on the GPU until
every peer has arrived, so a rank waiting for a peer that never comes reads
100 % for as long as it waits, while the SMs do no arithmetic and the board
draws little more than its idle power. Dense compute at 100 % draws well over
half of the power limit; a datacenter board idles at 10-20 % of it (A100
50-70 W of 400 W, H100 70-120 W of 700 W). So 100 % utilization below
``power_share_below`` of the limit, held for a minute or more, is spinning,
not work (issue 10 class 6; NCCL troubleshooting guide).

The rank to look at is the one NOT in the collective: in a multi-GPU job whose
other ranks spin, the rank whose GPU runs nothing (its process stopped
arriving: a dead loader, an exception in a thread, a deadlock). When every rank
on this node spins, the missing peer is elsewhere (another node), and each
spinning rank gets the finding.

Where the GPU gives GPM's SM activity (Hopper and newer, or DCGM's ``SMACT`` in a
dcgmi log) the verdict does not rest on power: SM activity is the share of SM cycles
with a warp resident, averaged over the SMs, and a collective waiting for a peer keeps
only NCCL's channel blocks resident -- one block per channel, a handful of an H100's
132 SMs. 100 % utilization with SM activity under ``spin_sm_active_below_percent`` is
spinning for certain, whatever the board draws.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.signals import hangs, power_share, sm_active
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_POWER, METRIC_PROCESSES, METRIC_SM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "collective-hang"


@dataclass(frozen=True)
class CollectiveHang:
    """collective-hang's thresholds: the ``collective_hang:`` section of defaults.yaml."""

    spin_sm_above_percent: float = field(
        metadata=threshold(0, 100, "%", "every tick of the window at least this busy ...")
    )
    power_share_below: float = field(
        metadata=threshold(0, 1, "", "... at a mean power below this share of the limit: spinning")
    )
    spin_sm_active_below_percent: float = field(
        metadata=threshold(
            0, 100, "%", "with GPM: SM active below this at that utilization is spinning"
        )
    )
    stopped_sm_below_percent: float = field(
        metadata=threshold(0, 100, "%", "a rank whose GPU is below this is not in the collective")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Ranks spinning at ~100 % and near-idle power; the finding names the rank to look at."""
    c = t.collective_hang
    out: list[Finding] = []
    for hang in hangs(win, t):
        proc = hang.proc
        waiting = ", ".join(map(str, hang.waiting))
        share = power_share(win, hang.waiting[0])
        actives = [sm_active(win, i) for i in hang.waiting]
        known = [a for a in actives if a is not None]
        gpm = len(known) == len(actives)
        spin_evidence: tuple[Evidence, ...]
        if gpm:
            spin_evidence = (
                Evidence(
                    f"SM active % (GPM, highest mean) on GPU(s) {waiting}",
                    max(known),
                    f"< {c.spin_sm_active_below_percent:g}: SMs hold no work -- spinning "
                    "for certain",
                ),
                Evidence(
                    "power / enforced limit (mean)",
                    None if share is None else share * 100,
                    "for context (SM activity decides)",
                    met=None,
                ),
            )
        else:
            spin_evidence = (
                Evidence(
                    "power / enforced limit (mean)",
                    None if share is None else share * 100,
                    f"< {c.power_share_below * 100:g} (near idle: no arithmetic)",
                ),
            )
        at = (
            f"with SM activity at {max(known):.0f} % (GPM)"
            if gpm
            else f"at {percent(share)} of {'their' if hang.stopped else 'its'} power limit"
        )
        if hang.stopped:
            summary = (
                f"GPUs {waiting} read ~100 % busy {at} -- "
                "NCCL kernels spinning in a collective -- while this rank's GPU runs nothing: "
                "this rank stopped arriving and the others wait for it."
            )
        else:
            summary = (
                f"GPU {proc.gpu_index} reads ~100 % busy {at} "
                "for minutes: a collective kernel spinning while a peer never arrives (no rank "
                "on this node is missing: look at the job's other nodes)."
            )
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.CRITICAL,
                label="hang: stopped rank" if hang.stopped else "hang: in collective",
                summary=summary,
                advice=(
                    f"See where it is stuck: py-spy dump --pid {proc.pid} (every rank's stack "
                    "shows which one is not in the collective).",
                    "Rerun with NCCL_DEBUG=INFO and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (and a "
                    "timeout in init_process_group) so a hang fails with the rank that caused it.",
                    "Typical causes: one rank raised or skipped a step (uneven data, an if on "
                    "rank 0), a dead DataLoader worker, a lost node.",
                ),
                evidence=(
                    Evidence(
                        f"SM % (lowest tick) on GPU(s) {waiting}",
                        min(win.gpu_sm_min(i) or 0.0 for i in hang.waiting),
                        f">= {c.spin_sm_above_percent:g}",
                    ),
                    *spin_evidence,
                    *(
                        (
                            Evidence(
                                "this rank's GPU SM % (mean)",
                                win.gpu_sm_mean(proc.gpu_index),
                                f"< {c.stopped_sm_below_percent:g} (not in the collective)",
                            ),
                            Evidence(
                                "main process CPU (mean)",
                                win.process_cpu_mean(proc),
                                "for context",
                                "%",
                                Scope.HOST,
                                met=None,
                            ),
                        )
                        if hang.stopped
                        else ()
                    ),
                ),
            )
        )
    return out


def percent(share: float | None) -> str:
    return "n/a" if share is None else f"{share * 100:.0f} %"


SPEC = RuleSpec(
    profiling_sharpens=True,
    id=ID,
    check=check,
    thresholds_class=CollectiveHang,
    title="Collective hang",
    sentence=(
        "GPUs read ~100 % busy at near-idle power for minutes: NCCL kernels spin waiting for a "
        "rank that never arrives; the finding names the rank to look at."
    ),
    subject="process",
    needs=(METRIC_SM, METRIC_POWER, METRIC_PROCESSES),
    explains_low_utilization=True,
)
