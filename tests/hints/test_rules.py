"""Table-driven tests of the hint rules on hand-built windows.

Every window here is built tick by tick from :class:`~gputop_hints.model.Snapshot`
objects (GPU SM / memory / VRAM / PCIe / clock reasons / sub-second samples,
processes with CPU, workers and states, the host's cores and iowait), appended
to a real :class:`~gputop_hints.history.History` and evaluated either by one
rule function directly or by the :class:`~gputop_hints.hints.engine.HintEngine`.

All thresholds are the packaged defaults (``hints/defaults.yaml``): window 6 s,
VRAM floor 0.5 GiB, main process "pegged" at 85 %, cores "saturated" at 90 %.
Each rule has a case that fires (rule, subtype, subject, severity and the
evidence values it was fed), near misses just the other side of each threshold,
and the confusions the rules exist to tell apart.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import pytest

from gputop_hints.hints import rules
from gputop_hints.hints.engine import HintEngine
from gputop_hints.hints.findings import Finding, Scope, Severity, Subject
from gputop_hints.hints.rules import Rule
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import Window
from gputop_hints.history import History
from gputop_hints.model import (
    GpuProcess,
    GpuSample,
    HostSample,
    Snapshot,
    UtilizationSample,
    WorkerProcess,
)

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


@dataclass(frozen=True)
class W:
    """A DataLoader worker."""

    cpu: float | None = 0.0
    state: str | None = "S"


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


def snapshot(tick: Tick, t: float, interval_s: float) -> Snapshot:
    gpus = []
    for g in tick.gpus:
        n = len(g.samples)
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
                power_watts=400.0,
                power_limit_watts=700.0,
                sm_clock_mhz=1980,
                max_sm_clock_mhz=1980,
                throttle_reasons=g.throttle,
                sm_samples=samples,
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
                WorkerProcess(pid=p.pid * 10 + k, cpu_percent=w.cpu, state=w.state, name="pt_w")
                for k, w in enumerate(p.workers)
            ),
            rss_bytes=4 * GIB,
            state=p.state,
            user=p.user,
            name="python",
            command=p.command,
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
        timestamp=t, interval_s=interval_s, host=host, gpus=tuple(gpus), processes=procs
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
    return [pattern[i % len(pattern)] for i in range(n)]


def one_gpu(
    sm: Sequence[float | None],
    procs: Sequence[P] = (P(),),
    host: H = H(),
    gpu: G = G(),
    samples: Sequence[Sequence[float]] | None = None,
) -> History:
    """One GPU whose SM % follows ``sm`` (one value a tick), the rest held constant."""
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
                ),
            ),
            tuple(procs),
            host,
        )
        for i, v in enumerate(sm)
    ]
    return Run().feed(ticks).history


def window(history: History) -> Window:
    return Window(history, THRESHOLDS.general.window_s)


def apply(rule: Rule, history: History) -> list[Finding]:
    return rule(window(history), THRESHOLDS)


def shown(history: History) -> list[Finding]:
    """What the engine shows for this window, without hysteresis (a one-off evaluation)."""
    return list(HintEngine(THRESHOLDS, hysteresis=False).update(history))


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
    rule: str
    subject: Subject
    severity: Severity
    subtype: str | None = None
    evidence: Mapping[str, float | None] = field(default_factory=dict)
    """metric prefix -> the value fed in (checked to 0.1)."""
    scope: Scope | None = None


@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[], History]
    rule: Rule
    expect: Expect | None
    """The rule's one finding, or None: it must find nothing."""
    engine: frozenset[str] | None = None
    """If given: exactly the rules the engine shows (no hysteresis) on this window."""


def case(
    id: str,
    build: Callable[[], History],
    rule: Rule,
    expect: Expect | None,
    engine: Sequence[str] | None = None,
) -> Case:
    return Case(id, build, rule, expect, None if engine is None else frozenset(engine))


def starved(
    subtype: str,
    ev: Mapping[str, float | None] | None = None,
    severity: Severity = Severity.WARNING,
) -> Expect:
    return Expect("input-starved", P0, severity, subtype, ev or {}, Scope.DEVICE)


def gap_ticks(pattern: str) -> list[tuple[float, ...]]:
    """Sub-second samples for the last ticks: 'g' = a 0.5 s gap in the tick, 'f' = busy."""
    return [HALF if c == "g" else FULL for c in pattern]


CASES: list[Case] = [
    # -- overlap explained --------------------------------------------------------------
    case(
        "overlap/fires-91+66",
        lambda: one_gpu([91.0] * 8, gpu=G(mem=66.0)),
        rules.overlap_explained,
        Expect(
            "overlap-explained",
            G0,
            Severity.INFO,
            evidence={"SM %": 91, "memory-access %": 66, "sum": 157},
        ),
    ),
    case(
        "overlap/near-miss-sum-exactly-100",
        lambda: one_gpu([60.0] * 8, gpu=G(mem=40.0)),
        rules.overlap_explained,
        None,
    ),
    case(
        "overlap/memory-unknown",
        lambda: one_gpu([91.0] * 8, gpu=G(mem=None)),
        rules.overlap_explained,
        None,
    ),
    # -- input starved: subtypes in their order -----------------------------------------
    case(
        "starved/num-workers-0",
        lambda: one_gpu(SAWTOOTH, [PEGGED]),
        rules.input_starved,
        starved(
            "num-workers-0",
            {
                "SM % (mean)": 30,
                "time in idle gaps (1 per tick)": (2.2 + 2.1) / 6 * 100,
                "separate idle gaps": 2,
                "main process CPU (mean)": 99,
                "busy workers (of 0)": 0,
                "allowed cores busy (8 cores)": 20,
                "iowait": 0,
            },
        ),
        engine=["input-starved"],
    ),
    case(
        "starved/critical-below-15-percent",
        lambda: one_gpu(cycle([40.0, 0.0, 0.0], 12), [PEGGED]),
        rules.input_starved,
        starved("num-workers-0", {"SM % (mean)": 40 / 3}, Severity.CRITICAL),
    ),
    case(
        "starved/cpu-bound",
        lambda: one_gpu(SAWTOOTH, [CPU_BOUND], H(busy=95.0)),
        rules.input_starved,
        starved(
            "cpu-bound",
            {"allowed cores busy (8 cores)": 95, "busy workers (of 6)": 6, "iowait": 0},
        ),
    ),
    case(
        "starved/storage-bound-via-iowait",
        lambda: one_gpu(SAWTOOTH, [IO_BOUND], H(busy=30.0, iowait=25.0)),
        rules.input_starved,
        starved("storage-bound", {"iowait": 25, "loader processes in D state": 0}),
    ),
    case(
        "starved/storage-bound-via-d-state",
        lambda: one_gpu(SAWTOOTH, [D_STATE], H(busy=30.0, iowait=0.0)),
        rules.input_starved,
        # 4 workers in D, the main process sleeping: 4 of 5 loader processes.
        starved("storage-bound", {"iowait": 0, "loader processes in D state": 80}),
    ),
    case(
        "starved/more-workers",
        lambda: one_gpu(SAWTOOTH, [SLOW_WORKERS], H(busy=40.0, iowait=2.0)),
        rules.input_starved,
        starved("more-workers", {"busy workers (of 2)": 2, "allowed cores busy": 40}),
    ),
    case(
        "starved/order-num-workers-0-before-cpu-bound",
        lambda: one_gpu(SAWTOOTH, [PEGGED], H(busy=95.0, iowait=25.0)),
        rules.input_starved,
        starved("num-workers-0"),
    ),
    case(
        "starved/order-cpu-bound-before-storage",
        lambda: one_gpu(SAWTOOTH, [CPU_BOUND], H(busy=95.0, iowait=25.0)),
        rules.input_starved,
        starved("cpu-bound"),
    ),
    case(
        "starved/near-miss-storage-iowait-9.9-d-state-20",
        # 1 worker of 4 in D + sleeping main = 1 of 5 (< 30 %); iowait just under 10.
        lambda: one_gpu(
            SAWTOOTH,
            [P(cpu=40.0, state="S", workers=(W(30.0, "D"), *(W(30.0, "S"),) * 3))],
            H(busy=30.0, iowait=9.9),
        ),
        rules.input_starved,
        starved("more-workers", {"iowait": 9.9}),
    ),
    case(
        "starved/near-miss-main-84-is-not-num-workers-0",
        lambda: one_gpu(SAWTOOTH, [P(cpu=84.0)], H(busy=30.0)),
        rules.input_starved,
        starved("more-workers", {"main process CPU (mean)": 84}),
    ),
    # -- input starved: near misses -------------------------------------------------------
    case(
        "starved/near-miss-mean-exactly-50",
        lambda: one_gpu(cycle([100.0, 0.0], 12), [PEGGED]),
        rules.input_starved,
        None,
    ),
    case(
        "starved/near-miss-burst-39-is-idle-not-starved",
        lambda: one_gpu(cycle([39.0, 0.0, 0.0], 12), [PEGGED]),
        rules.input_starved,
        None,
    ),
    case(
        "starved/burst-40-is-enough",
        lambda: one_gpu(cycle([40.0, 0.0, 0.0], 12), [PEGGED]),
        rules.input_starved,
        starved("num-workers-0", severity=Severity.CRITICAL),
    ),
    case(
        "starved/near-miss-vram-below-floor",
        lambda: one_gpu(SAWTOOTH, [P(vram_gib=0.49)]),
        rules.input_starved,
        None,
    ),
    case(
        "starved/near-miss-gaps-16.7-percent-sub-second",
        # two 0.5 s gaps in 6 s of 1/6 s samples: 1.0 s = 16.7 % < 20 %
        lambda: one_gpu([30.0] * 12, [PEGGED], samples=gap_ticks("ffffff" + "gffgff")),
        rules.input_starved,
        None,
    ),
    case(
        "starved/gaps-25-percent-sub-second",
        lambda: one_gpu([30.0] * 12, [PEGGED], samples=gap_ticks("ffffff" + "gfgfgf")),
        rules.input_starved,
        starved(
            "num-workers-0",
            {"time in idle gaps (sub-second samples)": 25, "separate idle gaps": 3},
        ),
    ),
    case(
        "starved/near-miss-gap-0.33s-too-short",
        # two 1/6 s samples at 0 = 0.33 s < min_gap_s 0.5: not a gap at all
        lambda: one_gpu(
            [30.0] * 12,
            [PEGGED],
            samples=[(0.0, 0.0, 100.0, 100.0, 100.0, 100.0)] * 12,
        ),
        rules.input_starved,
        None,
    ),
    # -- the main confusions --------------------------------------------------------------
    case(
        "confusion/sawtooth-is-starved-not-small-batch",
        lambda: one_gpu(SAWTOOTH, [PEGGED], gpu=G(vram_gib=5.0)),
        rules.small_batch,
        None,
        engine=["input-starved"],
    ),
    case(
        "confusion/steady-is-small-batch-not-starved",
        lambda: one_gpu([30.0] * 12, [P(vram_gib=4.0)]),
        rules.input_starved,
        None,
        engine=["small-batch"],
    ),
    case(
        "confusion/idle-no-bursts-is-idle-holding-vram",
        lambda: one_gpu([90.0] * 4 + [0.0] * 8, [P(vram_gib=40.0, cpu=1.0)]),
        rules.input_starved,
        None,
        engine=["idle-holding-vram"],
    ),
    case(
        "confusion/low-without-bursts-is-low-utilization",
        # SM 30 % peaks with gaps: too low to be a starved burst, too busy to be idle --
        # so no specific rule; the GPU is in use at 10 %, which low-utilization reports.
        lambda: one_gpu(cycle([30.0, 0.0, 0.0], 12), [PEGGED]),
        rules.input_starved,
        None,
        engine=["low-utilization"],
    ),
    case(
        "confusion/checkpoint-pause-one-gap-is-not-starved",
        lambda: one_gpu([95.0] * 8 + [0.0, 0.0, 0.0, 60.0], [P(cpu=99.0, vram_gib=40.0)]),
        rules.input_starved,
        None,
        engine=[],
    ),
    case(
        "confusion/pcie-thrash-wins-over-starved",
        lambda: one_gpu(SAWTOOTH, [PEGGED], gpu=G(rx=20e9, tx=10e9)),
        rules.input_starved,
        None,
        engine=["pcie-thrash"],
    ),
    # -- per-process SM known or not ----------------------------------------------------
    case(
        "starved/process-sm-unknown-uses-device",
        lambda: one_gpu(SAWTOOTH, [P(sm=None)]),
        rules.input_starved,
        starved(
            "num-workers-0",
            {
                "SM % (mean)": 30,
                "per-process SM % not reported by the driver; using the whole GPU's": None,
            },
        ),
    ),
    case(
        "starved/process-sm-known-uses-process",
        lambda: one_gpu(SAWTOOTH, [P(sm=20.0)]),
        rules.input_starved,
        Expect(
            "input-starved",
            P0,
            Severity.WARNING,
            "num-workers-0",
            {"SM % (mean)": 20},
            Scope.PROCESS,
        ),
    ),
    # -- a 1 s sawtooth: sub-second samples vs 1 Hz values ---------------------------
    case(
        "sawtooth-1s/sub-second-samples-see-it",
        lambda: one_gpu([45.0] * 12, [P(vram_gib=6.0)], samples=[HALF] * 12),
        rules.input_starved,
        starved(
            "num-workers-0",
            {"time in idle gaps (sub-second samples)": 50, "separate idle gaps": 6},
        ),
        engine=["input-starved"],
    ),
    case(
        # Documented limitation (docs/metrics.md, "Buffered utilization samples"): without
        # nvmlDeviceGetSamples only the once-per-tick reading exists, and a 1 s cycle
        # averages to a flat 45 % at 1 Hz. There are no gaps to see, so input-starved
        # cannot fire; with a pegged main process and little VRAM it reads as small batch.
        "sawtooth-1s/only-1hz-values-looks-steady",
        lambda: one_gpu([45.0] * 12, [P(vram_gib=6.0)]),
        rules.input_starved,
        None,
        engine=["small-batch"],
    ),
    case(
        "sawtooth-1s/only-1hz-values-small-batch-evidence",
        lambda: one_gpu([45.0] * 12, [P(vram_gib=6.0)]),
        rules.small_batch,
        Expect("small-batch", P0, Severity.WARNING, evidence={"time in idle gaps": 0}),
    ),
    # -- small batch ------------------------------------------------------------------
    case(
        "small-batch/fires",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=4.0, cpu=99.0)]),
        rules.small_batch,
        Expect(
            "small-batch",
            P0,
            Severity.WARNING,
            evidence={
                "SM % (mean)": 40,
                "time in idle gaps": 0,
                "VRAM share of the card": 5,
                "main process CPU (mean)": 99,
                "busy workers": 0,
            },
            scope=Scope.DEVICE,
        ),
        engine=["small-batch"],
    ),
    case(
        "small-batch/process-sm-known",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=4.0, sm=35.0)]),
        rules.small_batch,
        Expect(
            "small-batch", P0, Severity.WARNING, evidence={"SM % (mean)": 35}, scope=Scope.PROCESS
        ),
    ),
    case(
        "small-batch/sm-15-is-moderate",
        lambda: one_gpu([15.0] * 12, [P(vram_gib=4.0)]),
        rules.small_batch,
        Expect("small-batch", P0, Severity.WARNING),
    ),
    case(
        "small-batch/near-miss-sm-14",
        lambda: one_gpu([14.0] * 12, [P(vram_gib=4.0)]),
        rules.small_batch,
        None,
    ),
    case(
        "small-batch/near-miss-sm-70",
        lambda: one_gpu([70.0] * 12, [P(vram_gib=4.0)]),
        rules.small_batch,
        None,
    ),
    case(
        "small-batch/near-miss-vram-25-percent",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=20.0)]),
        rules.small_batch,
        None,
    ),
    case(
        "small-batch/near-miss-main-84",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=4.0, cpu=84.0)]),
        rules.small_batch,
        None,
    ),
    case(
        "small-batch/near-miss-a-busy-worker",
        lambda: one_gpu([40.0] * 12, [P(vram_gib=4.0, workers=(W(21.0),))]),
        rules.small_batch,
        None,
    ),
    case(
        "small-batch/near-miss-one-idle-gap",
        lambda: one_gpu([40.0] * 9 + [0.0, 40.0, 40.0], [P(vram_gib=4.0)]),
        rules.small_batch,
        None,
    ),
    # -- PCIe thrash -------------------------------------------------------------------
    case(
        # gen 5 x16 = 63.0 GB/s per direction; busy reading = rx+tx >= 0.4 x that = 25.2 GB/s
        "pcie/known-link-busy-half-the-readings",
        lambda: (
            Run()
            .feed(
                [
                    Tick((G(sm=12.0, rx=(20e9 if i % 2 else 0.0), tx=(10e9 if i % 2 else 0.0)),))
                    for i in range(12)
                ]
            )
            .history
        ),
        rules.pcie_thrash,
        Expect(
            "pcie-thrash",
            P0,
            Severity.WARNING,
            evidence={
                "readings with rx+tx >= 0.4 x link (63.0 GB/s per direction)": 50,
                "PCIe rx+tx (mean)": 15e9,
                "device SM % (mean)": 12,
            },
            scope=Scope.DEVICE,
        ),
        engine=["pcie-thrash"],
    ),
    case(
        "pcie/known-link-2-of-6-readings-is-enough",
        lambda: (
            Run()
            .feed([Tick((G(sm=12.0, rx=(30e9 if i % 3 == 0 else 0.0)),)) for i in range(12)])
            .history
        ),
        rules.pcie_thrash,
        Expect("pcie-thrash", P0, Severity.WARNING, evidence={"readings with rx+tx": 100 / 3}),
    ),
    case(
        "pcie/near-miss-known-link-1-of-6-readings",
        lambda: (
            Run()
            .feed([Tick((G(sm=12.0, rx=(30e9 if i % 6 == 0 else 0.0)),)) for i in range(12)])
            .history
        ),
        rules.pcie_thrash,
        None,
    ),
    case(
        "pcie/near-miss-known-link-25-GBps-just-under-share",
        # 25 GB/s every tick is far above the 1 GB/s floor, but the link is known
        lambda: one_gpu([12.0] * 12, gpu=G(rx=15e9, tx=10e9)),
        rules.pcie_thrash,
        None,
    ),
    case(
        "pcie/near-miss-sm-50",
        lambda: one_gpu([50.0] * 12, gpu=G(rx=20e9, tx=10e9)),
        rules.pcie_thrash,
        None,
    ),
    case(
        "pcie/unknown-link-1-GBps-floor",
        lambda: one_gpu([12.0] * 12, gpu=G(rx=0.6e9, tx=0.4e9, gen=None, width=None)),
        rules.pcie_thrash,
        Expect(
            "pcie-thrash",
            P0,
            Severity.WARNING,
            evidence={"readings with rx+tx >= 1 GB/s (link capacity unknown)": 100},
        ),
    ),
    case(
        "pcie/near-miss-unknown-link-0.99-GBps",
        lambda: one_gpu([12.0] * 12, gpu=G(rx=0.59e9, tx=0.4e9, gen=None, width=None)),
        rules.pcie_thrash,
        None,
    ),
    case(
        "pcie/throughput-unsupported",
        lambda: one_gpu([12.0] * 12, gpu=G(rx=None, tx=None)),
        rules.pcie_thrash,
        None,
    ),
    # -- memory-bound ----------------------------------------------------------------
    case(
        "memory-bound/fires",
        lambda: one_gpu([80.0] * 12, [P(vram_gib=40.0, cpu=60.0)], gpu=G(mem=85.0)),
        rules.memory_bound,
        Expect(
            "memory-bound",
            G0,
            Severity.WARNING,
            evidence={"memory-access % (mean)": 85, "SM % (mean)": 80},
        ),
        engine=["memory-bound", "overlap-explained"],
    ),
    case(
        "memory-bound/near-miss-memory-59",
        lambda: one_gpu([50.0] * 12, [P(vram_gib=40.0)], gpu=G(mem=59.0)),
        rules.memory_bound,
        None,
    ),
    case(
        "memory-bound/near-miss-11-points-below-sm",
        lambda: one_gpu([81.0] * 12, [P(vram_gib=40.0)], gpu=G(mem=70.0)),
        rules.memory_bound,
        None,
    ),
    # -- idle holding VRAM -------------------------------------------------------------
    case(
        "idle-vram/idle-8s-warning",
        lambda: one_gpu([90.0] * 4 + [0.0] * 8, [P(vram_gib=40.0, cpu=1.0)]),
        rules.idle_holding_vram,
        Expect(
            "idle-holding-vram",
            P0,
            Severity.WARNING,
            evidence={"device SM idle for": 8, "VRAM held": 40 * GIB, "main process CPU": 1},
            scope=Scope.DEVICE,
        ),
    ),
    case(
        "idle-vram/own-sm-known-is-process-scope",
        lambda: one_gpu([90.0] * 4 + [0.0] * 8, [P(vram_gib=40.0, cpu=1.0, sm=0.0)]),
        rules.idle_holding_vram,
        Expect("idle-holding-vram", P0, Severity.WARNING, scope=Scope.PROCESS),
    ),
    case(
        "idle-vram/near-miss-idle-7s",
        lambda: one_gpu([90.0] * 5 + [0.0] * 7, [P(vram_gib=40.0, cpu=1.0)]),
        rules.idle_holding_vram,
        None,
    ),
    case(
        "idle-vram/near-miss-holds-0.99-GiB",
        lambda: one_gpu([0.0] * 12, [P(vram_gib=0.99, cpu=1.0)]),
        rules.idle_holding_vram,
        None,
    ),
    case(
        "idle-vram/near-miss-sm-2",
        lambda: one_gpu([2.0] * 12, [P(vram_gib=40.0, cpu=1.0)]),
        rules.idle_holding_vram,
        None,
    ),
    case(
        "idle-vram/burst-between-idle-ticks-in-sub-second-samples",
        # every 1 Hz tick reads 0, but the samples 3 s ago caught a burst
        lambda: one_gpu(
            [0.0] * 12,
            [P(vram_gib=40.0, cpu=1.0)],
            samples=[(0.0,) * 6] * 8 + [(0.0, 0.0, 50.0, 0.0, 0.0, 0.0)] + [(0.0,) * 6] * 3,
        ),
        rules.idle_holding_vram,
        None,
        # What the engine makes of it instead: the one burst splits the window into two
        # gaps, so input-starved (critical, SM mean 0 %). A loader with a ~5 s cycle looks
        # exactly like this in a 6 s window, so we accept it.
        engine=["input-starved"],
    ),
    # -- VRAM near limit ---------------------------------------------------------------
    case(
        "vram/warning-96-percent",
        lambda: one_gpu([95.0] * 4, gpu=G(vram_gib=76.8)),
        rules.vram_near_limit,
        Expect("vram-near-limit", G0, Severity.WARNING, evidence={"VRAM used / total": 96}),
    ),
    case(
        "vram/critical-99.5-percent",
        lambda: one_gpu([95.0] * 4, gpu=G(vram_gib=79.6)),
        rules.vram_near_limit,
        Expect("vram-near-limit", G0, Severity.CRITICAL, evidence={"VRAM used / total": 99.5}),
    ),
    case(
        "vram/near-miss-94.9-percent",
        lambda: one_gpu([95.0] * 4, gpu=G(vram_gib=75.92)),
        rules.vram_near_limit,
        None,
    ),
    # -- compute-bound -----------------------------------------------------------------
    case(
        "compute-bound/fires",
        lambda: one_gpu([95.0] * 12, [P(vram_gib=40.0, cpu=60.0, workers=(W(70.0),) * 4)]),
        rules.compute_bound,
        Expect(
            "compute-bound",
            G0,
            Severity.INFO,
            evidence={"SM % (mean)": 95, "SM % (lowest tick)": 95},
        ),
        engine=["compute-bound"],
    ),
    case(
        "compute-bound/near-miss-mean-89",
        lambda: one_gpu([89.0] * 12, [P(vram_gib=40.0)]),
        rules.compute_bound,
        None,
    ),
    case(
        "compute-bound/near-miss-one-tick-at-59",
        lambda: one_gpu([100.0] * 11 + [59.0], [P(vram_gib=40.0)]),
        rules.compute_bound,
        None,
    ),
    # -- throttled ---------------------------------------------------------------------
    case(
        "throttled/power",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=("sw_power_cap",))),
        rules.throttled,
        Expect(
            "throttled",
            G0,
            Severity.WARNING,
            "power",
            {"ticks with power/thermal reasons": 100, "SM % (mean)": 95},
        ),
    ),
    case(
        "throttled/thermal",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=("hw_thermal", "sw_thermal"))),
        rules.throttled,
        Expect("throttled", G0, Severity.WARNING, "thermal"),
    ),
    case(
        "throttled/power-and-thermal",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=("sw_power_cap", "hw_slowdown"))),
        rules.throttled,
        Expect("throttled", G0, Severity.WARNING, "power-thermal"),
    ),
    case(
        "throttled/idle-gpu-costs-nothing",
        lambda: one_gpu([5.0] * 12, gpu=G(throttle=("sw_power_cap",))),
        rules.throttled,
        None,
    ),
    case(
        "throttled/gpu-idle-reason-is-harmless",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=("gpu_idle",))),
        rules.throttled,
        None,
    ),
    case(
        "throttled/half-the-ticks-is-enough",
        lambda: (
            Run()
            .feed(
                [
                    Tick((G(sm=95.0, throttle=("sw_power_cap",) if i % 2 else ()),))
                    for i in range(12)
                ]
            )
            .history
        ),
        rules.throttled,
        Expect("throttled", G0, Severity.WARNING, "power", {"ticks with power/thermal": 50}),
    ),
    case(
        "throttled/near-miss-a-third-of-the-ticks",
        lambda: (
            Run()
            .feed(
                [
                    Tick((G(sm=95.0, throttle=("sw_power_cap",) if i % 3 == 0 else ()),))
                    for i in range(12)
                ]
            )
            .history
        ),
        rules.throttled,
        None,
    ),
    case(
        "throttled/near-miss-reasons-unknown",
        lambda: one_gpu([95.0] * 12, gpu=G(throttle=None)),
        rules.throttled,
        None,
    ),
]


def _ddp(
    sms: Sequence[float], commands: Sequence[str], users: Sequence[str] | None = None
) -> History:
    """GPUs 0..n-1, each with one rank (pid 100+i) holding 30 GiB, at the given SM %."""
    users = users or ["alice"] * len(sms)
    tick = Tick(
        tuple(G(index=i, sm=sm, vram_gib=31.0) for i, sm in enumerate(sms)),
        tuple(
            P(
                pid=100 + i,
                gpu=i,
                vram_gib=30.0,
                cpu=60.0,
                workers=(W(50.0),) * 4,
                user=users[i],
                command=commands[i],
            )
            for i in range(len(sms))
        ),
        H(cores=32),
    )
    return Run().feed([tick] * 12).history


TORCHRUN = "torchrun --nproc-per-node 4 train.py --config big.yaml"
CASES += [
    case(
        "straggler/one-rank-of-four",
        lambda: _ddp([95.0, 96.0, 45.0, 94.0], [TORCHRUN] * 4),
        rules.straggler,
        Expect(
            "straggler",
            Subject(2),
            Severity.WARNING,
            evidence={"SM % (mean)": 45, "peers' median SM % (GPUs 0, 1, 3)": 95},
        ),
        # the peers read busy while they wait in collectives: no compute-bound for them
        engine=["straggler"],
    ),
    case(
        "straggler/boundary-25-points-below",
        lambda: _ddp([95.0, 95.0, 70.0, 95.0], [TORCHRUN] * 4),
        rules.straggler,
        Expect("straggler", Subject(2), Severity.WARNING),
    ),
    case(
        "straggler/near-miss-24-points-below",
        lambda: _ddp([95.0, 95.0, 71.0, 95.0], [TORCHRUN] * 4),
        rules.straggler,
        None,
        engine=["compute-bound"],  # GPUs 0, 1, 3 -- see test_compute_bound_on_peers
    ),
    case(
        # peers_sm_above_percent is inclusive: peers at 40 % already count as busy
        "straggler/near-miss-peers-at-39",
        lambda: _ddp([39.0, 39.0, 10.0, 39.0], [TORCHRUN] * 4),
        rules.straggler,
        None,
    ),
    case(
        "straggler/unrelated-jobs-are-not-peers",
        lambda: _ddp(
            [95.0, 96.0, 45.0, 94.0],
            ["python a.py", "python b.py", "python c.py", "python d.py"],
        ),
        rules.straggler,
        None,
        engine=["compute-bound"],
    ),
    case(
        "straggler/same-command-other-users-are-not-peers",
        lambda: _ddp([95.0, 96.0, 45.0, 94.0], [TORCHRUN] * 4, ["a", "b", "c", "d"]),
        rules.straggler,
        None,
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    history = c.build()
    found = apply(c.rule, history)
    if c.expect is None:
        assert found == [], [f.label for f in found]
    else:
        e = c.expect
        assert len(found) == 1, [f.label for f in found]
        f = found[0]
        assert (f.rule, f.subtype, f.subject, f.severity) == (
            e.rule,
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
        assert {f.rule for f in shown(history)} == c.engine


# --- details the table does not show ------------------------------------------------


def test_starved_device_fallback_names_the_processes_sharing_the_gpu() -> None:
    history = one_gpu(SAWTOOTH, [P(pid=4000), P(pid=4001, cpu=5.0, vram_gib=2.0)])
    found = {f.subject.pid: f for f in apply(rules.input_starved, history)}
    note = [e for e in found[4000].evidence if e.metric.startswith("per-process SM %")]
    assert note[0].metric.endswith("shared with 1 other process(es)")
    assert note[0].scope is Scope.DEVICE and note[0].met is None
    assert found[4000].evidence_scope is Scope.DEVICE


def test_starved_process_scope_evidence_is_marked_process() -> None:
    [f] = apply(rules.input_starved, one_gpu(SAWTOOTH, [P(sm=20.0)]))
    sm = [e for e in f.evidence if e.metric == "SM % (mean)"]
    assert sm[0].scope is Scope.PROCESS
    assert not any("not reported" in e.metric for e in f.evidence)


def test_starved_num_workers_advice_fits_the_allowed_cores() -> None:
    [f] = apply(rules.input_starved, one_gpu(SAWTOOTH, [PEGGED], H(cores=8)))
    assert "num_workers=7" in f.advice[0]


def test_small_batch_advice_scales_the_batch_to_the_vram_headroom() -> None:
    [f] = apply(rules.small_batch, one_gpu([40.0] * 12, [P(vram_gib=4.0)]))
    # 4 GiB of 80, aiming at 80 % of the card: 16x
    assert "16x" in f.advice[0]


def test_pcie_thrash_on_a_shared_gpu_names_the_biggest_process_and_says_so() -> None:
    # PCIe is counted per GPU: with inference replicas beside a training job, flagging
    # every process would blame the replicas; the one holding the most VRAM is named.
    history = one_gpu(
        [12.0] * 12, [P(pid=1, vram_gib=1.0), P(pid=2, vram_gib=30.0)], gpu=G(rx=20e9, tx=10e9)
    )
    [f] = apply(rules.pcie_thrash, history)
    assert f.subject.pid == 2
    assert any(e.metric.startswith("PCIe is per GPU: 2 processes share it") for e in f.evidence)


def test_compute_bound_on_peers_of_a_straggler_is_suppressed() -> None:
    straggling = shown(_ddp([95.0, 96.0, 45.0, 94.0], [TORCHRUN] * 4))
    assert [(f.rule, f.subject) for f in straggling] == [("straggler", Subject(2))]
    unrelated = shown(_ddp([95.0, 96.0, 45.0, 94.0], ["a.py", "b.py", "c.py", "d.py"]))
    assert sorted(f.subject.gpu_index for f in unrelated if f.rule == "compute-bound") == [0, 1, 3]


def test_idle_holding_vram_warns_then_turns_critical_after_critical_after_s() -> None:
    limit = THRESHOLDS.idle_holding_vram.critical_after_s
    assert limit == 300
    run = Run(history_s=600.0)
    proc = (P(vram_gib=40.0, cpu=0.0),)
    run.feed([Tick((G(sm=95.0),), proc)] * 5)
    run.feed([Tick((G(sm=0.0),), proc)] * 299)
    [f] = apply(rules.idle_holding_vram, run.history)
    assert f.severity is Severity.WARNING
    assert evidence(f, "device SM idle for") == 299
    run.tick(Tick((G(sm=0.0),), proc))
    [f] = apply(rules.idle_holding_vram, run.history)
    assert f.severity is Severity.CRITICAL
    assert evidence(f, "device SM idle for") == 300
    assert f.label == "idle 5 min, holds 40G"


def test_idle_holding_vram_turns_critical_with_the_monitors_default_history() -> None:
    # The monitor's History holds only --window (120 s) of ticks; the engine, updated
    # every tick as the monitor does, remembers when the GPU last ran kernels.
    run = Run(history_s=120.0)
    engine = HintEngine()
    proc = (P(vram_gib=40.0, cpu=0.0),)
    for tick in [Tick((G(sm=95.0),), proc)] * 5 + [Tick((G(sm=0.0),), proc)] * 400:
        run.feed([tick])
        engine.update(run.history)
    [f] = [f for f in engine.active if f.rule == "idle-holding-vram"]
    assert f.severity is Severity.CRITICAL
    assert f.label == "idle 7 min, holds 40G"


# --- hysteresis (the engine) ------------------------------------------------------------

VRAM_HIGH = Tick((G(sm=95.0, vram_gib=77.0),))
"""96 % of VRAM: vram-near-limit holds (raise after 2 s, clear after 10 s)."""
VRAM_OK = Tick((G(sm=95.0, vram_gib=60.0),))


def _only_vram_rule() -> HintEngine:
    return HintEngine(THRESHOLDS, rules=(("vram-near-limit", rules.vram_near_limit),))


def _visible(engine: HintEngine, run: Run, ticks: Sequence[Tick]) -> list[bool]:
    out = []
    for tick in ticks:
        run.tick(tick)
        out.append(bool(engine.update(run.history)))
    return out


def test_hysteresis_defaults_for_the_rule_under_test() -> None:
    h = THRESHOLDS.vram_near_limit.hysteresis
    assert (h.raise_after_s, h.clear_after_s) == (2, 10)


def test_a_condition_must_hold_raise_after_s_before_it_shows() -> None:
    engine, run = _only_vram_rule(), Run()
    run.feed([VRAM_OK] * 5)
    start = run.t
    assert _visible(engine, run, [VRAM_HIGH] * 4) == [False, False, True, True]
    assert engine.active[0].started_at == start  # when it began, not when it showed


def test_a_condition_must_fail_clear_after_s_before_it_goes() -> None:
    engine, run = _only_vram_rule(), Run()
    _visible(engine, run, [VRAM_HIGH] * 5)
    last_true = run.now
    seen = _visible(engine, run, [VRAM_OK] * 12)
    # ticks at last_true + 1 ... + 12: still shown until 10 s have passed
    assert seen == [True] * 9 + [False] * 3
    assert last_true + 10 == T0 + 4 + 10


def test_a_flickering_condition_gives_one_stable_finding() -> None:
    engine, run = _only_vram_rule(), Run()
    start = run.t
    pattern = ([VRAM_HIGH] * 3 + [VRAM_OK] * 2) * 12  # on 3 s, off 2 s, for a minute
    seen = _visible(engine, run, pattern)
    assert seen[:2] == [False, False]
    assert all(seen[2:])  # shown from the raise on, never flipping
    flips = sum(a != b for a, b in pairwise(seen))
    assert flips == 1  # the raise itself, and nothing after
    assert engine.active[0].started_at == start


def test_flicker_faster_than_raise_after_never_shows() -> None:
    # Holding for 1 s at a time never holds for the 2 s raise_after_s: nothing shows.
    engine, run = _only_vram_rule(), Run()
    assert not any(_visible(engine, run, [VRAM_HIGH, VRAM_OK] * 30))


def test_hysteresis_false_shows_at_once_and_clears_at_once() -> None:
    engine, run = HintEngine(THRESHOLDS, hysteresis=False), Run()
    run.tick(VRAM_HIGH)
    [f] = [f for f in engine.update(run.history) if f.rule == "vram-near-limit"]
    assert f.started_at == T0
    run.tick(VRAM_OK)
    assert all(f.rule != "vram-near-limit" for f in engine.update(run.history))


def test_starved_shows_raise_after_s_after_its_window_condition_began() -> None:
    # Healthy, then a num_workers=0 sawtooth: the raw condition starts once the 6 s
    # window holds two gaps and a low mean; the engine shows it 3 s later, dated then.
    ticks = [Tick((G(sm=95.0),), (PEGGED,))] * 10 + [
        Tick((G(sm=sm),), (PEGGED,)) for sm in SAWTOOTH * 2
    ]
    raw_run, run = Run(), Run()
    raw, engine = HintEngine(THRESHOLDS, hysteresis=False), HintEngine(THRESHOLDS)
    began = shown_at = None
    for tick in ticks:
        raw_run.tick(tick)
        run.tick(tick)
        if began is None and any(f.rule == "input-starved" for f in raw.update(raw_run.history)):
            began = run.now
        starved = [f for f in engine.update(run.history) if f.rule == "input-starved"]
        if starved and shown_at is None:
            shown_at = run.now
            assert starved[0].started_at == began
    assert began is not None and shown_at is not None
    assert began > T0 + 10  # not before the sawtooth
    assert shown_at - began == THRESHOLDS.input_starved.hysteresis.raise_after_s == 3


def test_a_checkpoint_pause_neither_starves_nor_hides_compute_bound() -> None:
    engine, run = HintEngine(THRESHOLDS), Run()
    busy = Tick((G(sm=95.0),), (P(vram_gib=40.0, cpu=60.0, workers=(W(60.0),) * 4),))
    pause = Tick((G(sm=0.0),), busy.procs)
    rules_seen: list[set[str]] = []
    for tick in [busy] * 30 + [pause] * 5 + [busy] * 30:
        run.tick(tick)
        rules_seen.append({f.rule for f in engine.update(run.history)})
    assert all(s == {"compute-bound"} for s in rules_seen[10:])


# --- real-trace-modelled windows (/work/shared/traces/README.md) -------------------------

# openad_gpu_usage.csv, GPU 0 (RTX A6000, 49140 MiB, 25073 MiB used), its first 12 rows
# as utilization.gpu / utilization.memory; GPU 1 idle with 15 MiB.
OPENAD = [
    (92, 73), (95, 80), (86, 37), (100, 100), (97, 82), (93, 69),
    (94, 80), (86, 37), (91, 58), (95, 75), (90, 57), (91, 61),
]  # fmt: skip


def _openad(pairs: Sequence[tuple[float, float]]) -> History:
    a6000 = 49140 * MIB / GIB
    ticks = [
        Tick(
            (
                G(0, sm=sm, mem=mem, vram_gib=25073 * MIB / GIB, total_gib=a6000, gen=4),
                G(1, sm=0.0, mem=0.0, vram_gib=15 * MIB / GIB, total_gib=a6000, gen=4),
            ),
            (P(vram_gib=24.0, cpu=100.0, workers=(W(40.0),) * 4, command="python train.py"),),
            H(cores=16, busy=30.0),
        )
        for sm, mem in pairs
    ]
    return Run().feed(ticks).history


def test_trace_openad_overlap_is_explained_and_nothing_warns() -> None:
    findings = shown(_openad(OPENAD))
    by_rule = {f.rule: f for f in findings}
    assert set(by_rule) == {"overlap-explained", "compute-bound"}
    assert all(f.severity is Severity.INFO for f in findings)
    overlap = by_rule["overlap-explained"]
    assert overlap.subject == Subject(0)
    assert evidence(overlap, "sum") == 91 + 61
    assert "overlapping" in overlap.summary
    # window mean of the last 6 rows: 91.17 % SM, memory 61.3 % (not within 10 of SM)
    assert evidence(by_rule["compute-bound"], "SM % (mean)") == pytest.approx(91.17, abs=0.01)


def test_trace_openad_the_steady_91_66_row() -> None:
    findings = shown(_openad([(91, 66)] * 12))
    assert {(f.rule, f.severity) for f in findings} == {
        ("overlap-explained", Severity.INFO),
        ("compute-bound", Severity.INFO),
    }
    [overlap] = [f for f in findings if f.rule == "overlap-explained"]
    assert (evidence(overlap, "SM %"), evidence(overlap, "memory-access %")) == (91, 66)


def test_trace_openad_sm_100_mem_100() -> None:
    # Rows like "100 %, 100 %" held for the whole window: both counters saturate
    # together, which cannot tell memory-bound from compute-bound (utilization.memory
    # is a time fraction, not bandwidth). memory-bound stands back above 90 % SM, so
    # the GPU reads compute-bound with the overlap explained -- no warning.
    findings = shown(_openad([(100, 100)] * 12))
    assert {(f.rule, f.severity) for f in findings} == {
        ("overlap-explained", Severity.INFO),
        ("compute-bound", Severity.INFO),
    }
    [overlap] = [f for f in findings if f.rule == "overlap-explained"]
    assert evidence(overlap, "sum") == 200


# machine_translation_gpu_usage.csv, utilization.gpu after the warm-up (about 0.5 s apart);
# memory 1070 MiB of 15360 MiB. One process; we add a pegged main process and no workers.
MACHINE_TRANSLATION = [
    40, 45, 41, 44, 41, 45, 45, 45, 43, 42, 28, 33, 32, 31, 48, 43, 40, 45, 41, 45, 41, 44,
    45, 44, 41, 44, 44, 43, 40, 45, 43, 44, 44, 37, 32, 33, 32, 28, 47, 44, 44, 10, 32, 44,
    44, 45, 45, 43, 43, 43, 43, 43, 44, 42, 43, 41, 43, 31, 9, 5, 33, 44, 44, 45, 44, 43, 44,
    42, 43, 41, 45, 41, 44, 44, 43, 43, 42, 44, 44, 44, 31, 34, 28, 29, 46, 44, 44, 45, 45,
    45, 45, 44, 44, 46, 44, 42, 44, 43, 44, 44, 46, 44, 46, 32, 34, 35, 28, 44, 44, 43, 44,
    43, 45, 42, 39, 42, 38,
]  # fmt: skip


def test_trace_machine_translation_is_small_batch_throughout() -> None:
    # An under-filled GPU: flat 40-45 % with dips, 7 % of VRAM, the main thread pegged.
    # What it should say -- and does: small batch/launch-bound, try a ~11x batch. The one
    # dip below 10 % (31, 9, 5, 33) is a single short gap: not a sawtooth, so never
    # input-starved, and hysteresis keeps small-batch up through it.
    run = Run(interval_s=0.5)
    engine = HintEngine(THRESHOLDS)
    proc = (P(vram_gib=1070 * MIB / GIB, cpu=100.0, command="python train_seq2seq.py"),)
    seen: list[set[str]] = []
    for sm in MACHINE_TRANSLATION:
        g = G(sm=float(sm), mem=None, vram_gib=1070 * MIB / GIB, total_gib=15.0, gen=3)
        run.tick(Tick((g,), proc, H(cores=8, busy=20.0)))
        seen.append({f.rule for f in engine.update(run.history)})
    first = next(i for i, s in enumerate(seen) if s)
    assert first * 0.5 <= 10  # within 10 s of the job starting
    assert all(s == {"small-batch"} for s in seen[first:])
    [f] = engine.active
    assert f.subject == P0 and f.severity is Severity.WARNING
    assert "11x" in f.advice[0]  # 80 % of 15 GiB / 1.04 GiB


def test_trace_spaceinvaders_wandb_is_low_utilization() -> None:
    # DQN on an Atari emulator: GPU 4-7 %, 1.91 % of VRAM (~0.29 GiB of a 15 GiB card),
    # CPU ~70 %: the GPU waits on a CPU-side environment. No specific rule fits (the
    # process is under the 0.5 GiB floor; no bursts, no steady moderate SM), so the
    # GPU-level low-utilization rule says the GPU is barely used and where to look.
    sms = [4.07, 5.6, 7.13, 6.2, 5.1, 4.4, 6.8, 5.9, 4.9, 6.1, 5.5, 6.6]
    ticks = [
        Tick(
            (G(sm=sm, mem=0.0, vram_gib=0.0191 * 15.0, total_gib=15.0, gen=3),),
            (P(vram_gib=0.0191 * 15.0 - 0.01, cpu=100.0, command="python dqn_atari.py"),),
            H(cores=4, busy=70.0),
        )
        for sm in sms
    ]
    [f] = shown(Run().feed(ticks).history)
    assert (f.rule, f.severity, f.subject) == ("low-utilization", Severity.WARNING, Subject(0))
    assert f.label.startswith("GPU busy only")
    # the same job with a larger footprint (above the floor): still low-utilization.
    ticks = [
        Tick((G(sm=sm, vram_gib=2.0),), (P(vram_gib=2.0),), H(cores=4, busy=70.0)) for sm in sms
    ]
    assert [f.rule for f in shown(Run().feed(ticks).history)] == ["low-utilization"]


# --- evidence and advice quality, over every finding any table produces -----------------


def _all_findings() -> list[Finding]:
    histories = [c.build() for c in CASES]
    histories += [
        _openad(OPENAD),
        _openad([(100, 100)] * 12),
        one_gpu(SAWTOOTH, [P(pid=4000), P(pid=4001, vram_gib=2.0)]),
        one_gpu([12.0] * 12, [P(pid=1), P(pid=2)], gpu=G(rx=20e9, tx=10e9)),
    ]
    run = Run(history_s=600.0)
    run.feed([Tick((G(sm=0.0),), (P(vram_gib=40.0),))] * 310)
    histories.append(run.history)
    # attached to a SLURM job whose cores other processes load (tests/test_rules_job.py)
    from tests.hints.test_rules_job import _tick as job_tick

    job_history = History(120.0, 1.0)
    job_history.extend(job_tick(float(t), foreign=40.0, sm=30.0) for t in range(20))
    histories.append(job_history)
    out: list[Finding] = []
    for h in histories:
        out += shown(h)
        # the rule under test directly as well (shown() dedups one finding per rule+subject)
    out += [f for c in CASES for f in apply(c.rule, c.build())]
    return out


ALL_FINDINGS = _all_findings()


def test_the_quality_checks_cover_every_rule_and_subtype() -> None:
    assert {f.rule for f in ALL_FINDINGS} == {name for name, _ in rules.ALL_RULES}
    assert {f.subtype for f in ALL_FINDINGS if f.rule == "input-starved"} == {
        "num-workers-0",
        "cpu-bound",
        "storage-bound",
        "more-workers",
    }
    assert {f.severity for f in ALL_FINDINGS} == set(Severity)


UNIQUE_FINDINGS = sorted(
    {(f.rule_label, f.label, f.severity): f for f in ALL_FINDINGS}.values(),
    key=lambda f: (f.rule_label, f.label, f.severity),
)


@pytest.mark.parametrize("f", UNIQUE_FINDINGS, ids=lambda f: f"{f.rule_label}:{f.label}")
def test_every_finding_is_explainable(f: Finding) -> None:
    assert f.evidence, "no evidence"
    assert all(e.threshold.strip() for e in f.evidence)
    assert any(e.met for e in f.evidence), "no evidence item crossed a threshold"
    assert f.advice and all(a.strip() for a in f.advice)
    assert f.summary.strip()
    assert f.anchor == f.rule
    d = f.to_dict()
    assert d["docs"] == f"docs/hints.md#{f.rule}"
    assert json.loads(json.dumps(d)) == d


@pytest.mark.parametrize("label", sorted({f.label for f in ALL_FINDINGS}))
def test_every_label_fits_24_columns(label: str) -> None:
    assert 0 < len(label) <= 24, f"{label!r} is {len(label)} characters"
