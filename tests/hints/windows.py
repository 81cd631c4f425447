"""The window builder the rule tests share: hand-built ticks on simulated time.

Every window is built tick by tick from :class:`~gputop_hints.model.Snapshot`
objects (GPU SM / memory / VRAM / PCIe / clock reasons / sub-second samples,
processes with CPU, workers and states, the host's cores and iowait, the SLURM
job), appended to a real :class:`~gputop_hints.history.History` and evaluated
either by one rule's check directly or by the
:class:`~gputop_hints.hints.engine.HintEngine`.

All thresholds are the packaged defaults (``hints/defaults.yaml``): window 6 s,
VRAM floor 0.5 GiB, main process "pegged" at 85 %, cores "saturated" at 90 %.

Each rule's table lives in ``tests/hints/rules/test_<rule>.py`` as ``RULE`` (its
spec) and ``CASES``: a case that fires (subtype, subject, severity and the
evidence values it was fed), near misses just the other side of each threshold,
and the confusions the rules exist to tell apart. :func:`rule_tables` collects
them, so that a rule without a table is caught (tests/hints/test_rule_specs.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pytest

from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Finding, Scope, Severity, Subject
from gputop_hints.hints.rules import RuleSpec
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import Window
from gputop_hints.history import History
from gputop_hints.model import (
    GpuProcess,
    GpuSample,
    HostSample,
    JobInfo,
    Snapshot,
    UtilizationSample,
    WorkerProcess,
)
from gputop_hints.stacks import StackReading

GIB = 2**30
MIB = 2**20
T0 = 1_700_000_000.0
PID = 4000
THRESHOLDS = Thresholds.defaults()
G0 = Subject(0)
P0 = Subject(0, PID)

# --- the window builder ---------------------------------------------------------------


@dataclass(frozen=True)
class G:
    """One GPU at one tick. PCIe in bytes/s; ``samples`` are the tick's sub-second SM
    readings (NVML's buffered samples), spread evenly over the interval ending at the tick."""

    index: int = 0
    sm: float | None = 0.0
    mem: float | None = 0.0
    vram_gib: float = 11.0
    total_gib: float = 80.0
    rx: float | None = 0.0
    tx: float | None = 0.0
    gen: int | None = 5
    width: int | None = 16
    throttle: tuple[str, ...] | None = ()
    samples: tuple[float, ...] = ()
    clock: int = 1980
    """SM clock, MHz (the board's maximum is 1980)."""
    power: float | None = 400.0
    """Power draw, W (None: not known)."""
    limit: float = 700.0
    """Enforced power limit, W."""
    default_limit: float | None = None
    """The board's default limit, W (None: not measured)."""
    gpm: tuple[float | None, float | None, float | None, float | None] | None = None
    """GPM profiling (SM active, occupancy, tensor active, DRAM active, in
    PROFILING_FIELDS order); None: the source does not profile."""
    node: str | None = None
    """The node it is in, for a view of several nodes' GPUs (None: this machine)."""


@dataclass(frozen=True)
class W:
    """A DataLoader worker."""

    cpu: float | None = 0.0
    state: str | None = "S"
    command: str | None = None
    """Its command line; None: unknown (a DataLoader worker forks the main process's)."""
    name: str = "pt_w"
    """Its process name (a compiler run under the job: ``ptxas``, ``cc1plus``)."""


@dataclass(frozen=True)
class P:
    """A GPU process (main process CPU in % of one core)."""

    pid: int = PID
    gpu: int = 0
    vram_gib: float = 10.0
    sm: float | None = None
    cpu: float | None = 99.0
    workers: tuple[W, ...] = ()
    state: str | None = "R"
    user: str | None = "alice"
    command: str = "python train.py"
    in_job: bool | None = None
    started_s: float | None = None
    frameworks: tuple[str, ...] = ()
    """What its /proc/PID/maps names (GpuProcess.frameworks)."""
    """How long before the first tick the process started (its create time); None: unknown."""


@dataclass(frozen=True)
class H:
    """The host: ``cores`` allowed cores, each ``busy`` % busy."""

    cores: int = 8
    busy: float | None = 20.0
    iowait: float | None = 0.0


@dataclass(frozen=True)
class Tick:
    gpus: tuple[G, ...]
    procs: tuple[P, ...] = (P(),)
    host: H = H()
    job: JobInfo | None = None
    """The SLURM job the monitor is attached to, if any."""
    source: str = "live"
    """"replay" for an imported log (no per-process rows in it at all)."""


def snapshot(tick: Tick, t: float, interval_s: float) -> Snapshot:
    gpus = []
    for g in tick.gpus:
        n = len(g.samples)
        gpm = g.gpm or (None, None, None, None)
        samples = tuple(
            UtilizationSample(t - interval_s + (j + 1) * interval_s / n, v)
            for j, v in enumerate(g.samples)
        )
        gpus.append(
            GpuSample(
                index=g.index,
                name="NVIDIA H100 80GB HBM3",
                sm_percent=g.sm,
                memory_access_percent=g.mem,
                vram_used_bytes=int(g.vram_gib * GIB),
                vram_total_bytes=int(g.total_gib * GIB),
                pcie_rx_bytes_per_s=g.rx,
                pcie_tx_bytes_per_s=g.tx,
                pcie_generation=g.gen,
                pcie_width=g.width,
                temperature_c=65.0,
                power_watts=g.power,
                power_limit_watts=g.limit,
                default_power_limit_watts=g.default_limit,
                sm_clock_mhz=g.clock,
                max_sm_clock_mhz=1980,
                throttle_reasons=g.throttle,
                sm_samples=samples,
                sm_active_percent=gpm[0],
                sm_occupancy_percent=gpm[1],
                tensor_active_percent=gpm[2],
                dram_active_percent=gpm[3],
                node=g.node,
            )
        )
    procs = tuple(
        GpuProcess(
            pid=p.pid,
            gpu_index=p.gpu,
            vram_bytes=int(p.vram_gib * GIB),
            sm_percent=p.sm,
            cpu_percent=p.cpu,
            workers=tuple(
                WorkerProcess(
                    pid=p.pid * 10 + k,
                    cpu_percent=w.cpu,
                    state=w.state,
                    name=w.name,
                    command=w.command,
                )
                for k, w in enumerate(p.workers)
            ),
            rss_bytes=4 * GIB,
            state=p.state,
            user=p.user,
            name="python",
            command=p.command,
            frameworks=p.frameworks,
            in_job=p.in_job,
            create_time=None if p.started_s is None else T0 - p.started_s,
        )
        for p in tick.procs
    )
    h = tick.host
    host = HostSample(
        hostname="node1",
        cpu_percent_per_core=(h.busy,) * h.cores,
        allowed_cores=tuple(range(h.cores)),
        iowait_percent=h.iowait,
    )
    return Snapshot(
        timestamp=t,
        interval_s=interval_s,
        host=host,
        gpus=tuple(gpus),
        processes=procs,
        job=tick.job,
        source=tick.source,
    )


class Run:
    """A history fed tick by tick on simulated time (``T0``, ``T0 + interval``, ...)."""

    def __init__(self, interval_s: float = 1.0, history_s: float = 120.0) -> None:
        self.interval_s = interval_s
        self.history = History(window_s=history_s, interval_s=interval_s)
        self.t = T0

    def tick(self, tick: Tick) -> Run:
        self.history.append(snapshot(tick, self.t, self.interval_s))
        self.t += self.interval_s
        return self

    def feed(self, ticks: Sequence[Tick]) -> Run:
        for tick in ticks:
            self.tick(tick)
        return self

    @property
    def now(self) -> float:
        return self.t - self.interval_s


def cycle(pattern: Sequence[float], n: int) -> list[float]:
    """``pattern`` repeated to ``n`` values."""
    return [pattern[i % len(pattern)] for i in range(n)]


def one_gpu(
    sm: Sequence[float | None],
    procs: Sequence[P] = (P(),),
    host: H = H(),
    gpu: G = G(),
    samples: Sequence[Sequence[float]] | None = None,
) -> History:
    """One GPU whose SM % follows ``sm`` (one value a tick), the rest held constant.

    With the default GPU its memory in use is what its processes hold plus 1 GiB (the
    driver's reservation and contexts), as on a real card: memory no listed process
    holds is ghost-memory's finding, not a default."""
    if gpu == G():
        gpu = replace(gpu, vram_gib=sum(p.vram_gib for p in procs) + 1.0)
    ticks = [
        Tick(
            (
                G(
                    gpu.index,
                    v,
                    gpu.mem,
                    gpu.vram_gib,
                    gpu.total_gib,
                    gpu.rx,
                    gpu.tx,
                    gpu.gen,
                    gpu.width,
                    gpu.throttle,
                    tuple(samples[i]) if samples is not None else (),
                    gpu.clock,
                    gpu.power,
                    gpu.limit,
                    gpu.default_limit,
                    gpu.gpm,
                ),
            ),
            tuple(procs),
            host,
        )
        for i, v in enumerate(sm)
    ]
    return Run().feed(ticks).history


def window(history: History, stacks: Sequence[StackReading] = ()) -> Window:
    """The rules' window over the newest ticks (the default ``general.window_s``), with
    ``stacks`` as stack readings taken at its newest tick."""
    at = history.latest.timestamp if history.latest is not None else 0.0
    readings = {r.pid: (at, r) for r in stacks}
    return Window(history, THRESHOLDS.general.window_s, stacks=readings)


def apply(rule: RuleSpec, history: History, stacks: Sequence[StackReading] = ()) -> list[Finding]:
    """What one rule's check finds on this window."""
    return rule.check(window(history, stacks), THRESHOLDS)


def shown(history: History, stacks: Sequence[StackReading] = ()) -> list[Finding]:
    """What the engine shows for this window, without hysteresis (a one-off evaluation)."""
    engine = HintEngine(THRESHOLDS, hysteresis=False)
    at = history.latest.timestamp if history.latest is not None else 0.0
    for reading in stacks:
        engine.set_stacks(reading, at)
    return list(engine.update(history))


def evidence(finding: Finding, prefix: str) -> float | None:
    """The value of the one evidence item whose metric starts with ``prefix``."""
    hits = [e for e in finding.evidence if e.metric.startswith(prefix)]
    assert len(hits) == 1, f"{prefix!r} in {[e.metric for e in finding.evidence]}"
    return hits[0].value


# --- job shapes used across the tables -------------------------------------------------

PEGGED = P(cpu=99.0)
"""num_workers=0: the main process loads every batch itself."""
CPU_BOUND = P(cpu=40.0, workers=(W(95.0, "R"),) * 6)
IO_BOUND = P(cpu=40.0, state="S", workers=(W(30.0, "S"),) * 4)
D_STATE = P(cpu=40.0, state="S", workers=(W(5.0, "D"),) * 4)
SLOW_WORKERS = P(cpu=40.0, state="S", workers=(W(60.0, "R"),) * 2)
SAWTOOTH = cycle([90.0, 0.0, 0.0], 12)
"""Last 6 ticks: 90 0 0 90 0 0 -> mean 30, two gaps."""
HALF = (0.0, 0.0, 0.0, 100.0, 100.0, 100.0)
"""One second of a 1 s sawtooth at NVML's 1/6 s sample period: idle half, busy half."""
FULL = (100.0,) * 6


# --- expectations ---------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """The one finding a rule must give on a case's window."""

    subject: Subject
    severity: Severity
    subtype: str | None = None
    evidence: Mapping[str, float | None] = field(default_factory=dict)
    """metric prefix -> the value fed in (checked to 0.1)."""
    scope: Scope | None = None


@dataclass(frozen=True)
class Case:
    """One row of a rule's table."""

    id: str
    build: Callable[[], History]
    expect: Expect | None
    """The rule's one finding, or None: it must find nothing."""
    engine: frozenset[str] | None = None
    """If given: exactly the rules the engine shows (no hysteresis) on this window."""
    stacks: tuple[StackReading, ...] = ()
    """Stack readings (py-spy, issue 45) taken at the window's newest tick."""


def case(
    id: str,
    build: Callable[[], History],
    expect: Expect | None,
    engine: Sequence[str] | None = None,
    stacks: Sequence[StackReading] = (),
) -> Case:
    return Case(id, build, expect, None if engine is None else frozenset(engine), tuple(stacks))


def check_case(rule: RuleSpec, c: Case) -> None:
    """Run ``rule`` on the case's window and compare with what the case expects."""
    history = c.build()
    found = apply(rule, history, c.stacks)
    if c.expect is None:
        assert found == [], [f.label for f in found]
    else:
        e = c.expect
        assert len(found) == 1, [f.label for f in found]
        f = found[0]
        assert (f.rule, f.subtype, f.subject, f.severity) == (
            rule.id,
            e.subtype,
            e.subject,
            e.severity,
        )
        if e.scope is not None:
            assert f.evidence_scope is e.scope
        for prefix, value in e.evidence.items():
            got = evidence(f, prefix)
            if value is None:
                assert got is None
            else:
                assert got == pytest.approx(value, rel=1e-3, abs=0.05), prefix
    if c.engine is not None:
        assert {f.rule for f in shown(history, c.stacks)} == c.engine


def rule_tables() -> list[tuple[RuleSpec, list[Case]]]:
    """Every rule's table: ``RULE`` and ``CASES`` of each module in tests/hints/rules/."""
    package = importlib.import_module("tests.hints.rules")
    tables = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        tables.append((module.RULE, module.CASES))
    return tables


# --- a multi-GPU job ---------------------------------------------------------------------


def ddp_ticks(
    traces: Sequence[Sequence[float]], commands: Sequence[str], users: Sequence[str] | None = None
) -> list[Tick]:
    """GPUs 0..n-1, each with one rank (pid 100+i) holding 30 GiB, GPU i's SM % a tick
    from ``traces[i]``."""
    users = users or ["alice"] * len(traces)
    procs = tuple(
        P(
            pid=100 + i,
            gpu=i,
            vram_gib=30.0,
            cpu=60.0,
            workers=(W(50.0),) * 4,
            user=users[i],
            command=commands[i],
        )
        for i in range(len(traces))
    )
    return [
        Tick(
            tuple(G(index=i, sm=trace[k], vram_gib=31.0) for i, trace in enumerate(traces)),
            procs,
            H(cores=32),
        )
        for k in range(len(traces[0]))
    ]


def ddp(
    sms: Sequence[float], commands: Sequence[str], users: Sequence[str] | None = None
) -> History:
    """GPUs 0..n-1, each with one rank (pid 100+i) holding 30 GiB, at the given SM %."""
    return Run().feed(ddp_ticks([[sm] * 12 for sm in sms], commands, users)).history


TORCHRUN = "torchrun --nproc-per-node 4 train.py --config big.yaml"
