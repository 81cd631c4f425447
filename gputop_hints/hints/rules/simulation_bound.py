"""simulation-bound: CPU-side work other than a DataLoader sets the pace.

Reinforcement learning steps its environments on the CPU (Stable-Baselines3's
``SubprocVecEnv``, Gymnasium's ``AsyncVectorEnv``, an actor pool): each step the
learner runs one policy forward on a small batch of observations -- a few
milliseconds of GPU -- then waits for every environment to step; self-play runs
tree searches (MCTS) on the CPU between small network evaluations. The GPU is
touched many times a second but lightly, so its utilization reads low and
*steady*: NVML's ~1/6 s samples each hold several short forwards, and there is no
sawtooth of idle gaps. The children (environments, actors) are busy at a core
each. That is neither a starved DataLoader (gaps: input-starved) nor a small
training batch (idle workers: small-batch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.kinds import is_server
from gputop_hints.hints.rules.shared import gaps_evidence, gaps_seen_by, sm_evidence
from gputop_hints.hints.rules.signals import offloading, warming_up
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_HOST_CPU, METRIC_PROCESSES, METRIC_SM
from gputop_hints.text import pattern

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "simulation-bound"

_SIMULATION_RE = (
    r"(?i)\b(?:env|envs|num[-_]envs|gym|gymnasium|ale/|atari|mujoco|isaac|rollouts?|ppo|dqn|"
    r"a2c|sac|impala|rllib|selfplay|self[-_]play|mcts|actors?|simulat\w*)\b"
)


@dataclass(frozen=True)
class SimulationBound:
    """simulation-bound's thresholds: the ``simulation_bound:`` section of defaults.yaml."""

    min_busy_children: float = field(
        metadata=threshold(1, 1024, "", "at least this many children busy on average ...")
    )
    sm_below_percent: float = field(
        metadata=threshold(0, 100, "%", "... while the GPU's mean SM is below this ...")
    )
    sm_above_percent: float = field(
        metadata=threshold(0, 100, "%", "... but above this (it runs the policy: not idle)")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Busy children, a lightly and steadily used GPU, no sawtooth: CPU-side simulation."""
    c = t.simulation_bound
    s = t.input_starved
    out: list[Finding] = []
    for proc in win.processes():
        if (proc.vram_bytes or 0) < t.general.min_vram_gib * GIB or is_server(proc):
            continue
        if not proc.workers:
            continue
        sm, scope, notes = sm_evidence(win, proc, t)
        if sm is None or not c.sm_above_percent <= sm < c.sm_below_percent:
            continue
        device = win.gpu_sm_mean(proc.gpu_index)
        if device is None or device >= c.sm_below_percent:
            continue  # the GPU is busy with others' work: sharing, not waiting
        busy = win.process_busy_workers_mean(proc)
        if busy is None or busy < c.min_busy_children:
            continue
        gaps, gaps_scope = gaps_seen_by(win, proc, t, scope)
        if gaps is None or not gaps.fine or gaps.fraction >= s.min_gap_fraction:
            # A sawtooth is batches arriving late (input-starved); and "steady" needs
            # NVML's sub-second samples: one reading a tick hides gaps shorter than it.
            continue
        if warming_up(win, t, proc) is not None or offloading(win, t, proc) is not None:
            continue
        named = bool(pattern(_SIMULATION_RE).search(proc.command or ""))
        children = len(proc.workers)
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.WARNING,
                label="CPU sim/env-bound" + ("" if named else "?"),
                summary=(
                    f"{busy:.0f} of its {children} child processes are busy on the CPU while "
                    f"the GPU runs a steady {sm:.0f} % with no idle gaps: many small GPU calls "
                    "between CPU work"
                    + (
                        " -- environments or self-play stepping on the CPU, the GPU waiting "
                        "for their observations."
                        if named
                        else " -- environments or simulation on the CPU, or a loader whose "
                        "batches are light and frequent."
                    )
                ),
                advice=(
                    "More environments per policy call (a larger num_envs / rollout batch) so "
                    "each forward fills the GPU; vectorised or GPU simulators (EnvPool, "
                    "Isaac Gym, Brax, MJX) move the stepping itself off the CPU.",
                    "Keep the envs on their own cores (one per env process) and the learner "
                    "on another; for self-play, batch leaf evaluations across searches.",
                    "Profile one child with py-spy top --pid <pid> to see what a step costs.",
                ),
                evidence=(
                    Evidence(
                        f"busy child processes (of {children})",
                        busy,
                        f">= {c.min_busy_children:g}",
                        "",
                        Scope.HOST,
                    ),
                    Evidence(
                        "SM % (mean)",
                        sm,
                        f"between {c.sm_above_percent:g} and {c.sm_below_percent:g}",
                        "%",
                        scope,
                    ),
                    gaps_evidence(
                        gaps, f"< {s.min_gap_fraction * 100:g} % (no sawtooth)", gaps_scope
                    ),
                    *notes,
                ),
                evidence_scope=scope,
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=SimulationBound,
    title="CPU simulation / environments set the pace",
    sentence=(
        "Child processes busy on the CPU (environments, self-play actors) while the GPU runs "
        "small steady work with no idle gaps: CPU-side simulation, not a DataLoader, sets "
        "the pace."
    ),
    subject="process",
    needs=(METRIC_SM, METRIC_PROCESSES, METRIC_HOST_CPU),
    explains_low_utilization=True,
    judges_level=True,
)
