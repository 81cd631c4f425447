"""What the findings cost: GPU-time and energy lost under each, by cause.

A finding says what is wrong; this says how much GPU time went by unused under it.
The definition (docs/hints.md, "What a finding costs"):

* Only a finding at **warning or worse** costs anything: an info finding (warm-up, a
  serving engine between requests, a compute-bound job) is not a problem, so its idle
  time is not a loss -- start-up within its expected time and a healthy job's small
  gaps never reach a warning.
* Of the time a finding is shown, the share lost is the GPU's **idle share** over that
  time, ``1 - utilization / 100`` (NVML's utilization.gpu, the share of time a kernel
  ran), for the rules whose cause is time the GPU waits (:data:`IDLE_CAUSES`: a
  starved input pipeline, a GPU held with nothing running, a small batch ...). For the
  rules that find kernels resident but doing no work (:data:`NOT_WORKING_CAUSES`: a
  rank spinning in a collective for a dead peer) the **whole** GPU is lost: its busy
  time is not work. The other warnings (memory near its limit, throttled clocks,
  memory-bound kernels, idle tensor cores) slow a job down or put it at risk; they
  claim no lost time, since the GPU was running it.
* On a **shared GPU** a process's finding claims its own share of the GPU: its part of
  the memory the GPU's processes hold (the tenant's slice of the card; ``1 / n`` where
  memory is not known). A GPU-level finding claims the whole GPU.
* **No double counting**: at each evaluation a GPU's loss is at most its idle share (or
  the whole GPU under a not-working cause); the findings on it claim their shares in
  order -- worst first, a process's before the GPU's -- until that is used up, and a
  process counts once however many findings it has.
* **Energy** is the power the GPU drew over the lost share of the time (its mean draw
  times the lost GPU-seconds); never claimed where power is not known (the lost time
  without power is counted apart, so that a total never pretends to cover it).

These are estimates: utilization is a busy-time share, not work done (a GPU "100 %
busy" on one small kernel is not lost by this count), and a log's coarse readings stand
for the time between them. The anchors: Princeton's jobstats and Job Defense Shield
count GPU-hours at zero or low utilization; Kempner's jobscope judges a job on its best
metric and an idle-power floor per model -- this count adds the cause.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gputop_hints.hints.findings import Finding, Severity
from gputop_hints.history import History

IDLE_CAUSES = frozenset(
    {
        "input-starved",
        "idle-holding-vram",
        "low-utilization",
        "small-batch",
        "unused-gpu",
        "ghost-memory",
        "straggler",
        "host-device-sync",
        "cpu-offload",
        "pcie-thrash",
        "cores-contended",
        "simulation-bound",
        "uneven-nodes",
        "serving-idle",
    }
)
"""Rules whose cause is time the GPU waits: the GPU's idle share under them is lost."""

NOT_WORKING_CAUSES = frozenset({"collective-hang"})
"""Rules that find kernels resident but doing no work: the whole GPU is lost under them."""

COSTING_SEVERITY = Severity.WARNING
"""The least severity that costs: info findings are not problems."""

MAX_CREDIT_INTERVALS = 5.0
"""An evaluation stands for the time since the previous one, at most this many intervals
(the report's gap factor): a suspended laptop or a gap in a log is not hours lost."""


@dataclass(frozen=True, slots=True)
class Loss:
    """One finding's claim on its GPU at one evaluation."""

    rule: str
    gpu_index: int
    pid: int | None
    share: float
    """Of one GPU, 0..1: the GPU-seconds lost per second under this finding."""
    watts: float | None
    """The GPU's mean power draw over the time (None: not known)."""


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _tenancy(snapshot_procs: Mapping[int, float | None], pid: int) -> float:
    """``pid``'s part of its GPU: its share of the memory the GPU's processes hold."""
    if pid not in snapshot_procs:
        return 1.0  # the process left the listing: its finding is about the GPU it had
    known = [v for v in snapshot_procs.values() if v is not None and v > 0]
    own = snapshot_procs[pid]
    if own is None or not known or len(known) < len(snapshot_procs):
        return 1.0 / len(snapshot_procs)
    return own / sum(known)


def allot(findings: Iterable[Finding], history: History, ticks: int) -> list[Loss]:
    """Each costing finding's share of its GPU over the newest ``ticks`` of ``history``
    (the time since the previous evaluation), by the rules in the module docstring."""
    by_gpu: dict[int, list[Finding]] = {}
    for f in findings:
        if f.severity < COSTING_SEVERITY or f.subject.gpu_index is None:
            continue
        if f.rule in IDLE_CAUSES or f.rule in NOT_WORKING_CAUSES:
            by_gpu.setdefault(f.subject.gpu_index, []).append(f)
    if not by_gpu:
        return []
    latest = history.latest
    procs: dict[int, dict[int, float | None]] = {}
    if latest is not None:
        for p in latest.processes:
            vram = None if p.vram_bytes is None else float(p.vram_bytes)
            procs.setdefault(p.gpu_index, {})[p.pid] = vram
    out: list[Loss] = []
    n = max(1, ticks)
    for gpu, found in by_gpu.items():
        gh = history.gpus.get(gpu)
        sm = None if gh is None else _mean(gh.sm_percent.last(n))
        watts = None if gh is None else _mean(gh.power_watts.last(n))
        idle = None if sm is None else min(1.0, max(0.0, 1.0 - sm / 100.0))
        not_working = any(f.rule in NOT_WORKING_CAUSES for f in found)
        left = 1.0 if not_working else idle
        if left is None or left <= 0.0:
            continue  # utilization unknown: no loss is claimed
        found.sort(key=lambda f: (-f.severity, f.subject.pid is None, f.rule))
        counted: set[int | None] = set()
        tenants = procs.get(gpu, {})
        for f in found:
            pid = f.subject.pid
            if pid is not None and pid in counted:
                continue
            base = 1.0 if f.rule in NOT_WORKING_CAUSES else (idle or 0.0)
            tenancy = 1.0 if pid is None or not tenants else _tenancy(tenants, pid)
            take = min(base * tenancy, left)
            if take <= 0.0:
                continue
            counted.add(pid)
            left -= take
            out.append(Loss(f.rule, gpu, pid, take, watts))
    return out


@dataclass
class CostMeter:
    """GPU-time and energy lost since the first tick, by rule and GPU: fed at every
    evaluation with the findings then visible (:meth:`add`)."""

    gpu_seconds: float = 0.0
    """GPUs x seconds observed: what the lost time is a part of."""
    lost_s: dict[tuple[str, int], float] = field(default_factory=dict)
    """(rule, GPU) -> GPU-seconds lost under it."""
    energy_j: dict[tuple[str, int], float] = field(default_factory=dict)
    """(rule, GPU) -> joules drawn over that lost time, where power was known."""
    unpowered_s: float = 0.0
    """GPU-seconds lost where power was not known (no energy is claimed for them)."""
    last: dict[tuple[str, int, int | None], Loss] = field(default_factory=dict)
    """The latest evaluation's losses by (rule, GPU, pid)."""
    _last_ts: float | None = None

    def add(self, findings: Iterable[Finding], history: History) -> None:
        """Credit the time since the previous evaluation to the findings visible now."""
        snap = history.latest
        if snap is None:
            return
        interval = snap.interval_s if snap.interval_s > 0 else history.interval_s
        credit = interval if self._last_ts is None else snap.timestamp - self._last_ts
        self._last_ts = snap.timestamp
        credit = min(credit, MAX_CREDIT_INTERVALS * interval)
        if credit <= 0:
            return
        self.gpu_seconds += credit * len(snap.gpus)
        ticks = max(1, round(credit / interval))
        losses = allot(findings, history, ticks)
        self.last = {(x.rule, x.gpu_index, x.pid): x for x in losses}
        for x in losses:
            key = (x.rule, x.gpu_index)
            lost = x.share * credit
            self.lost_s[key] = self.lost_s.get(key, 0.0) + lost
            if x.watts is None:
                self.unpowered_s += lost
            else:
                self.energy_j[key] = self.energy_j.get(key, 0.0) + lost * x.watts

    def restart(self) -> None:
        """Time jumped (a replay seek): the count starts again from the next evaluation --
        a seek back would otherwise count the replayed stretch twice."""
        self.gpu_seconds = 0.0
        self.lost_s = {}
        self.energy_j = {}
        self.unpowered_s = 0.0
        self.last = {}
        self._last_ts = None

    def totals(self) -> CostTotals:
        by_rule: dict[str, float] = {}
        for (rule, _), s in self.lost_s.items():
            by_rule[rule] = by_rule.get(rule, 0.0) + s
        energy = sum(self.energy_j.values())
        return CostTotals(
            gpu_seconds=self.gpu_seconds,
            lost_by_rule=dict(sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0]))),
            energy_j=energy if self.energy_j else None,
            unpowered_s=self.unpowered_s,
        )


@dataclass(frozen=True)
class CostTotals:
    """The figures a cost line shows: what was observed and what was lost, by cause."""

    gpu_seconds: float
    lost_by_rule: dict[str, float]
    """Rule -> GPU-seconds lost under it, largest first."""
    energy_j: float | None
    """Joules drawn over the lost time where power was known (None: never known)."""
    unpowered_s: float = 0.0
    """Lost GPU-seconds without a power reading (not in ``energy_j``)."""

    @property
    def lost_s(self) -> float:
        return sum(self.lost_by_rule.values())

    def to_dict(self, cost_per_gpu_hour: float | None = None) -> dict[str, object]:
        out: dict[str, object] = {
            "gpu_hours": self.gpu_seconds / 3600.0,
            "lost_gpu_hours": self.lost_s / 3600.0,
            "lost_gpu_hours_by_rule": {r: s / 3600.0 for r, s in self.lost_by_rule.items()},
            "lost_energy_kwh": None if self.energy_j is None else self.energy_j / 3.6e6,
            "lost_gpu_hours_without_power": self.unpowered_s / 3600.0,
        }
        if cost_per_gpu_hour is not None:
            out["cost_per_gpu_hour"] = cost_per_gpu_hour
            out["lost_cost"] = self.lost_s / 3600.0 * cost_per_gpu_hour
        return out
