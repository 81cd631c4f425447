"""input-starved: the sawtooth, its subtypes in their order, near misses and the confusions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from gputop_hints.hints.findings import Scope, Severity
from gputop_hints.hints.rules import (
    compute_bound,
    input_starved,
    low_utilization,
    small_batch,
    warm_up,
)
from gputop_hints.hints.rules.signals import COMPILE_FRESH_S
from gputop_hints.history import History
from gputop_hints.stacks import Category, Frame, FrameCount, StackReading, WorkerReading
from tests.hints.windows import (
    CPU_BOUND,
    D_STATE,
    FULL,
    HALF,
    IO_BOUND,
    P0,
    PEGGED,
    PID,
    SAWTOOTH,
    SLOW_WORKERS,
    Case,
    Expect,
    G,
    H,
    P,
    Run,
    Tick,
    W,
    apply,
    case,
    check_case,
    cycle,
    evidence,
    one_gpu,
    shown,
)

RULE = input_starved.SPEC


def starved(
    subtype: str,
    ev: Mapping[str, float | None] | None = None,
    severity: Severity = Severity.WARNING,
) -> Expect:
    return Expect(P0, severity, subtype, ev or {}, Scope.DEVICE)


def gap_ticks(pattern: str) -> list[tuple[float, ...]]:
    """Sub-second samples for the last ticks: 'g' = a 0.5 s gap in the tick, 'f' = busy."""
    return [HALF if c == "g" else FULL for c in pattern]


CASES: list[Case] = [
    case(
        "starved/no host data: the sawtooth is shown, no cause is claimed",
        lambda: one_gpu(SAWTOOTH, [P(cpu=None)], host=H(busy=None, iowait=None)),
        starved("cause-unknown"),
    ),
    case(
        "starved/num-workers-0",
        lambda: one_gpu(SAWTOOTH, [PEGGED]),
        starved(
            "num-workers-0",
            {
                "SM % (mean)": 30,
                "time in idle gaps (1 per tick)": (2.2 + 2.1) / 6 * 100,
                "separate idle gaps": 2,
                "main process CPU (mean)": 99,
                "busy DataLoader workers": None,
                "allowed cores busy (8 cores)": 20,
                "iowait": 0,
            },
        ),
        engine=["input-starved"],
    ),
    case(
        "starved/critical-below-15-percent",
        lambda: one_gpu(cycle([40.0, 0.0, 0.0], 12), [PEGGED]),
        starved("num-workers-0", {"SM % (mean)": 40 / 3}, Severity.CRITICAL),
    ),
    case(
        "starved/cpu-bound",
        lambda: one_gpu(SAWTOOTH, [CPU_BOUND], H(busy=95.0)),
        starved(
            "cpu-bound",
            {"allowed cores busy (8 cores)": 95, "busy workers (of 6)": 6, "iowait": 0},
        ),
    ),
    case(
        "starved/storage-bound-via-iowait",
        lambda: one_gpu(SAWTOOTH, [IO_BOUND], H(busy=30.0, iowait=25.0)),
        starved("storage-bound", {"iowait": 25, "loader processes in D state": 0}),
    ),
    case(
        "starved/storage-bound-via-d-state",
        lambda: one_gpu(SAWTOOTH, [D_STATE], H(busy=30.0, iowait=0.0)),
        # 4 workers in D, the main process sleeping: 4 of 5 loader processes.
        starved("storage-bound", {"iowait": 0, "loader processes in D state": 80}),
    ),
    case(
        "starved/more-workers",
        lambda: one_gpu(SAWTOOTH, [SLOW_WORKERS], H(busy=40.0, iowait=2.0)),
        starved("more-workers", {"busy workers (of 2)": 2, "allowed cores busy": 40}),
    ),
    case(
        "starved/order-num-workers-0-before-cpu-bound",
        lambda: one_gpu(SAWTOOTH, [PEGGED], H(busy=95.0, iowait=25.0)),
        starved("num-workers-0"),
    ),
    case(
        "starved/order-cpu-bound-before-storage",
        lambda: one_gpu(SAWTOOTH, [CPU_BOUND], H(busy=95.0, iowait=25.0)),
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
        starved("more-workers", {"iowait": 9.9}),
    ),
    case(
        "starved/near-miss-main-84-is-not-num-workers-0",
        lambda: one_gpu(SAWTOOTH, [P(cpu=84.0)], H(busy=30.0)),
        starved("more-workers", {"main process CPU (mean)": 84}),
    ),
    case(
        "starved/near-miss-mean-exactly-50",
        lambda: one_gpu(cycle([100.0, 0.0], 12), [PEGGED]),
        None,
    ),
    case(
        "starved/near-miss-burst-39-is-idle-not-starved",
        lambda: one_gpu(cycle([39.0, 0.0, 0.0], 12), [PEGGED]),
        None,
    ),
    case(
        "starved/burst-40-is-enough",
        lambda: one_gpu(cycle([40.0, 0.0, 0.0], 12), [PEGGED]),
        starved("num-workers-0", severity=Severity.CRITICAL),
    ),
    case(
        "starved/near-miss-vram-below-floor",
        lambda: one_gpu(SAWTOOTH, [P(vram_gib=0.49)]),
        None,
    ),
    case(
        "starved/near-miss-gaps-16.7-percent-sub-second",
        # two 0.5 s gaps in 6 s of 1/6 s samples: 1.0 s = 16.7 % < 20 %
        lambda: one_gpu([30.0] * 12, [PEGGED], samples=gap_ticks("ffffff" + "gffgff")),
        None,
    ),
    case(
        "starved/gaps-25-percent-sub-second",
        lambda: one_gpu([30.0] * 12, [PEGGED], samples=gap_ticks("ffffff" + "gfgfgf")),
        starved(
            "num-workers-0",
            {"time in idle gaps (sub-second samples)": 25, "separate idle gaps": 3},
        ),
    ),
    case(
        "starved/short-stalls-add-up",
        # two 1/6 s samples at 0 every second: 0.33 s stalls, each shorter than Nsight's
        # 500 ms "starvation" but a third of the time idle -- num_workers=0 with fast
        # steps looks exactly so (a 0.12 s step, 0.3 s to load the next batch inline).
        lambda: one_gpu(
            [30.0] * 12,
            [PEGGED],
            samples=[(0.0, 0.0, 100.0, 100.0, 100.0, 100.0)] * 12,
        ),
        starved("num-workers-0", {"separate idle gaps": 6}),
    ),
    case(
        "starved/near-miss-one-sample-dips-16.7-percent",
        # one 1/6 s sample at 0 a second: a gap each, but 16.7 % of the time < 20 %
        lambda: one_gpu(
            [30.0] * 12,
            [PEGGED],
            samples=[(0.0, 100.0, 100.0, 100.0, 100.0, 100.0)] * 12,
        ),
        None,
    ),
    case(
        "starved/storage-stalls-too-short-to-sample",
        # Eight workers blocked on NFS reads, iowait 48 %: batches come as fast as reads
        # finish and the GPU runs at 58 % with no visible gap (stalls of ~60 ms).
        lambda: one_gpu(
            [58.0] * 12,
            [P(cpu=43.0, state="S", workers=(W(3.5, "D"),) * 8)],
            H(busy=10.0, iowait=48.0),
            samples=[(57.0, 60.0, 58.0, 56.0, 61.0, 59.0)] * 12,
        ),
        starved("storage-bound", {"iowait": 48}),
    ),
    case(
        "starved/near-miss-storage-gpu-at-80-keeps-up",
        lambda: one_gpu(
            [80.0] * 12,
            [P(cpu=43.0, state="S", workers=(W(3.5, "D"),) * 8)],
            H(busy=10.0, iowait=48.0),
        ),
        None,
    ),
    case(
        "starved/near-miss-storage-d-state-under-half",
        # 3 of 8 workers in D, the rest decoding: reads keep up, not blocked
        lambda: one_gpu(
            [58.0] * 12,
            [P(cpu=43.0, state="S", workers=(*(W(3.5, "D"),) * 3, *(W(60.0, "R"),) * 5))],
            H(busy=40.0, iowait=48.0),
            samples=[(57.0, 60.0, 58.0, 56.0, 61.0, 59.0)] * 12,
        ),
        None,
    ),
    case(
        "confusion/steady-is-small-batch-not-starved",
        lambda: one_gpu([30.0] * 12, [P(vram_gib=4.0)]),
        None,
        engine=["small-batch"],
    ),
    case(
        "confusion/idle-no-bursts-is-idle-holding-vram",
        lambda: one_gpu([90.0] * 4 + [0.0] * 8, [P(vram_gib=40.0, cpu=1.0)]),
        None,
        engine=["idle-holding-vram"],
    ),
    case(
        "confusion/low-without-bursts-is-low-utilization",
        # SM 30 % peaks with gaps: too low to be a starved burst, too busy to be idle --
        # so no specific rule; the GPU is in use at 10 %, which low-utilization reports.
        lambda: one_gpu(cycle([30.0, 0.0, 0.0], 12), [PEGGED]),
        None,
        engine=["low-utilization"],
    ),
    case(
        "confusion/checkpoint-pause-one-gap-is-not-starved",
        lambda: one_gpu([95.0] * 8 + [0.0, 0.0, 0.0, 60.0], [P(cpu=99.0, vram_gib=40.0)]),
        None,
        engine=[],
    ),
    case(
        "confusion/pcie-thrash-wins-over-starved",
        lambda: one_gpu(SAWTOOTH, [PEGGED], gpu=G(rx=20e9, tx=10e9)),
        None,
        engine=["pcie-thrash"],
    ),
    case(
        "starved/process-sm-unknown-uses-device",
        lambda: one_gpu(SAWTOOTH, [P(sm=None)]),
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
        Expect(
            P0,
            Severity.WARNING,
            "num-workers-0",
            {"SM % (mean)": 20},
            Scope.PROCESS,
        ),
    ),
    case(
        "sawtooth-1s/sub-second-samples-see-it",
        lambda: one_gpu([45.0] * 12, [P(vram_gib=6.0)], samples=[HALF] * 12),
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
        None,
        engine=["small-batch"],
    ),
]


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_starved_device_fallback_names_the_processes_sharing_the_gpu() -> None:
    history = one_gpu(SAWTOOTH, [P(pid=4000), P(pid=4001, cpu=5.0, vram_gib=2.0)])
    found = {f.subject.pid: f for f in apply(RULE, history)}
    note = [e for e in found[4000].evidence if e.metric.startswith("per-process SM %")]
    assert note[0].metric.endswith("shared with 1 other process(es)")
    assert note[0].scope is Scope.DEVICE and note[0].met is None
    assert found[4000].evidence_scope is Scope.DEVICE


def test_starved_process_scope_evidence_is_marked_process() -> None:
    [f] = apply(RULE, one_gpu(SAWTOOTH, [P(sm=20.0)]))
    sm = [e for e in f.evidence if e.metric == "SM % (mean)"]
    assert sm[0].scope is Scope.PROCESS
    assert not any("not reported" in e.metric for e in f.evidence)


def test_starved_num_workers_advice_fits_the_allowed_cores() -> None:
    [f] = apply(RULE, one_gpu(SAWTOOTH, [PEGGED], H(cores=8)))
    assert "num_workers=7" in f.advice[0]


def test_more_workers_advice_never_asks_for_more_workers_than_fit() -> None:
    # 16 workers on 8 allowed cores: "Raise num_workers (now 16; up to 7 ...)" would
    # contradict itself; the advice turns to cheaper batches or more cores instead.
    many = P(cpu=40.0, state="S", workers=(W(60.0, "R"),) * 16)
    (finding,) = apply(RULE, one_gpu(SAWTOOTH, [many], H(cores=8, busy=40.0, iowait=2.0)))
    assert finding.subtype == "more-workers"
    assert not any(a.startswith("Raise num_workers") for a in finding.advice)
    assert any("already uses the 8 allowed cores" in a for a in finding.advice)
    few = apply(RULE, one_gpu(SAWTOOTH, [SLOW_WORKERS], H(busy=40.0, iowait=2.0)))
    assert any(a.startswith("Raise num_workers (now 2; up to 7") for a in few[0].advice)


INDUCTOR = (
    "/usr/bin/python3 /opt/venv/lib/python3.11/site-packages/torch/_inductor/compile_worker/"
    "__main__.py --pickler=torch._inductor.compile_worker.subproc_pool.SubprocPickler "
    "--kind=fork --workers=2 --parent=4242"
)


def _compiling(worker_cpu: float) -> P:
    """A job 10 min old whose two children are inductor's compile workers."""
    return P(cpu=40.0, state="S", started_s=600.0, workers=(W(worker_cpu, "R", INDUCTOR),) * 2)


def test_busy_torch_compile_workers_are_warm_up_not_a_slow_loader() -> None:
    # The same sawtooth and busy children as starved/more-workers, but the children run
    # torch/_inductor/compile_worker: autotuning bursts while kernels compile.
    history = one_gpu(SAWTOOTH, [_compiling(60.0)], H(busy=40.0, iowait=2.0))
    assert apply(RULE, history) == []
    [f] = apply(warm_up.SPEC, history)
    assert f.severity is Severity.INFO and "torch.compile" in f.summary


def test_idle_compile_workers_are_not_counted_as_dataloader_workers() -> None:
    # Compilation over, the pool idles: a starved job with 0 DataLoader workers, not 2.
    history = one_gpu(SAWTOOTH, [_compiling(0.5)], H(busy=40.0, iowait=2.0))
    [f] = apply(RULE, history)
    assert "busy DataLoader workers" in [e.metric for e in f.evidence]


def test_cores_saturated_over_the_latest_half_window_is_cpu_bound() -> None:
    """A window straddling start-up (cores half busy) and a loader that now saturates
    every allowed core: the subtype says what holds the pipeline back now, so the
    advice is more cores, not more workers on saturated ones."""
    ticks = [
        Tick((G(0, v),), (CPU_BOUND,), H(busy=50.0 if i < 9 else 100.0))
        for i, v in enumerate(SAWTOOTH)
    ]
    (found,) = apply(RULE, Run().feed(ticks).history)
    assert found.subtype == "cpu-bound"
    # Saturated only in the latest third: the window still says more workers.
    ticks = [
        Tick((G(0, v),), (CPU_BOUND,), H(busy=50.0 if i < 10 else 100.0))
        for i, v in enumerate(SAWTOOTH)
    ]
    (found,) = apply(RULE, Run().feed(ticks).history)
    assert found.subtype == "more-workers"


def _fetch_then_compute(fetch_state: str, iowait: float) -> list[Tick]:
    """A 12 s shard fetch (the main process reading, GPU idle), then 25 s of training."""
    ticks = []
    for i in range(148):
        fetching = i % 37 < 12
        proc = P(cpu=10.0 if fetching else 95.0, state=fetch_state if fetching else "R")
        host = H(busy=5.0, iowait=iowait if fetching else 0.0)
        ticks.append(Tick((G(sm=0.0 if fetching else 95.0),), (proc,), host))
    return ticks


def test_slow_reads_starve_a_gpu_that_averages_above_half() -> None:
    """Load-then-compute from NFS: a third of the time waits on reads though the mean SM
    is ~62 %; the slow window shows it as storage starvation."""
    (found,) = apply(RULE, Run().feed(_fetch_then_compute("D", 40.0)).history)
    assert found.subtype == "storage-bound"
    # The same cycle with the host doing nothing while the GPU waits (no reads, no
    # iowait): a pause, not a storage-bound loader -- no starvation above 50 % SM.
    assert apply(RULE, Run().feed(_fetch_then_compute("S", 0.0)).history) == []


# Without host data: the GPU-level duty cycle, its cause unknown


def gpu_only_trace(sm: list[float]) -> History:
    """A headerless utilization.gpu column replayed: one GPU row a second, nothing else."""
    ticks = [
        Tick((G(sm=v, vram_gib=11.0),), procs=(), host=H(busy=None), source="replay") for v in sm
    ]
    return Run().feed(ticks).history


@pytest.mark.parametrize(
    "pattern",
    [[0.0, 100.0], [100.0] * 4 + [0.0] * 4, [100.0] * 6 + [0.0] * 4],
    ids=["alternating-1s", "4s-on-4s-off", "mean-60"],
)
def test_bimodal_duty_cycle_is_an_input_stall_not_compute_bound(pattern: list[float]) -> None:
    history = gpu_only_trace(cycle(pattern, 60))
    [f] = apply(RULE, history)
    assert f.subtype == "cause-unknown" and f.subject.pid is None
    assert f.label == "starved? (no host data)"
    assert "input-stall signature" in f.summary and "unknown without host data" in f.summary
    # A GPU-only log cannot tell training from serving: the finding says so.
    assert "inference server bursts the same way" in f.summary
    assert any("nothing to fix on the GPU" in a for a in f.advice)
    assert not apply(compute_bound.SPEC, history)
    assert [s.rule for s in shown(history)] == ["input-starved"]


def table_trace(holders: list[tuple[int, float]]) -> History:
    """An nvidia-smi table log (process rows with VRAM, no host data), one snapshot per
    tick: ``(pid, SM %)`` of the one process on the GPU at each."""
    ticks = [
        Tick(
            (G(sm=sm, vram_gib=11.0),),
            procs=(P(pid=pid, vram_gib=10.5, cpu=None, state=None, user=None),),
            host=H(busy=None, iowait=None),
            source="replay",
        )
        for pid, sm in holders
    ]
    return Run().feed(ticks).history


def test_one_jobs_duty_cycle_in_a_table_log_is_a_stall() -> None:
    # the same process throughout, bursting and idling: its loop's duty cycle
    history = table_trace([(5000, v) for v in cycle([100.0] * 4 + [0.0] * 4, 60)])
    [f] = apply(RULE, history)
    assert f.subtype == "cause-unknown" and f.subject.pid is None


def test_busy_and_idle_readings_of_different_jobs_are_no_duty_cycle() -> None:
    """A cron log of snapshots far apart (one a day, a shared server): a job runs at
    100 % in some, another process holds the GPU idle in others. Gaps between readings
    of different jobs are not one loop's stalls -- idle-holding-vram speaks of the idle
    holder, and nothing says batches arrive late."""
    pids = [5000 + i // 4 for i in range(60)]  # a different job every 4 readings
    sm = cycle([100.0] * 2 + [0.0] * 2, 60)
    history = table_trace(list(zip(pids, sm, strict=True)))
    assert apply(RULE, history) == []


def test_one_pause_in_a_busy_trace_is_no_duty_cycle() -> None:
    # a checkpoint save of 8 s in a minute of full load: one gap, not a sawtooth
    history = gpu_only_trace([100.0] * 40 + [0.0] * 8 + [100.0] * 12)
    assert not apply(RULE, history)
    assert not apply(low_utilization.SPEC, history)
    assert apply(compute_bound.SPEC, history)


# --- beside a tenant that fills the GPU: its own evidence decides --------------------------
N = 8
BUSY = P(pid=6100, vram_gib=30.0, sm=62.0, cpu=13.0, workers=(W(30.0), W(30.0)))
"""The lab's other tenant (docs/lab.md, second-tenant): own share ~60 %, main ~13 %."""


def _shared_gpu(
    own: float = 31.0,
    other: P = BUSY,
    device: float | None = None,
    cpu: float = 92.0,
    vram_gib: float = 24.0,
    workers: tuple[W, ...] = (),
    alone: bool = False,
) -> History:
    """A num_workers=0 job (the lab's: own ~31 %, main ~92 %) on an 80 GiB GPU."""
    job = P(pid=4100, vram_gib=vram_gib, sm=own, cpu=cpu, workers=workers)
    sm = device if device is not None else own + (0.0 if alone else other.sm or 0.0)
    fine = [[sm] * 6] * N
    return one_gpu([sm] * N, [job] if alone else [job, other], samples=fine)


def test_starved_on_its_own_evidence_beside_a_tenant_that_fills_the_gpu() -> None:
    (f,) = [f for f in apply(RULE, _shared_gpu()) if f.subject.pid == 4100]
    assert f.subtype == "num-workers-0"
    assert f.severity is Severity.WARNING  # the duty cycle is not seen: never critical
    assert "fill this GPU" in f.summary and "launch" in f.summary
    assert evidence(f, "device SM %") == pytest.approx(93.0)
    assert evidence(f, "other tenants' own SM %") == pytest.approx(62.0)


@pytest.mark.parametrize(
    ("history", "why"),
    [
        (_shared_gpu(own=44.0, other=P(pid=6100, vram_gib=30.0, sm=50.0, cpu=13.0)), "even split"),
        (_shared_gpu(cpu=40.0), "main not pegged"),
        (_shared_gpu(workers=(W(5.0),)), "has workers"),
        (_shared_gpu(vram_gib=8.0), "small-batch's picture"),
        (_shared_gpu(device=70.0), "device has idle time"),
        (
            _shared_gpu(device=99.0, other=P(pid=6100, vram_gib=30.0, sm=40.0, cpu=13.0)),
            "unattributed busy time",
        ),
        (_shared_gpu(own=31.0, alone=True, device=31.0), "alone on the GPU"),
        (_shared_gpu(cpu=0.3, own=0.0, device=62.0), "an idle notebook (no kernels, ~0 % CPU)"),
    ],
)
def test_not_starved_beside_a_busy_tenant(history: History, why: str) -> None:
    assert not [f for f in apply(RULE, history) if f.subject.pid == 4100], why


def test_a_server_is_never_starved_beside_a_busy_tenant() -> None:
    server = P(pid=4100, vram_gib=24.0, sm=31.0, cpu=92.0, command="vllm serve meta-llama/x")
    history = one_gpu([93.0] * N, [server, BUSY], samples=[[93.0] * 6] * N)
    assert not apply(RULE, history)


def test_small_vram_is_left_to_small_batch() -> None:
    history = _shared_gpu(vram_gib=8.0)
    assert [f.subject.pid for f in apply(small_batch.SPEC, history)] == [4100]


def test_an_idle_tick_of_its_own_leaves_it_to_its_own_trace() -> None:
    """A cell run now and then (kernels in some ticks only) is no steady starved loop."""
    job = P(pid=4100, vram_gib=24.0, sm=31.0, cpu=92.0)
    idle = P(pid=4100, vram_gib=24.0, sm=None, cpu=92.0)
    alone = P(pid=6100, vram_gib=30.0, sm=93.0, cpu=13.0, workers=BUSY.workers)
    ticks = [[job, BUSY] if i % 4 else [idle, alone] for i in range(N)]
    run = Run().feed([Tick((G(0, 93.0, samples=(93.0,) * 6),), tuple(ps), H()) for ps in ticks])
    assert not [f for f in apply(RULE, run.history) if f.subject.pid == 4100]


def test_the_num_workers_advice_says_why_its_number() -> None:
    """Issue 44: 'num_workers=16 -- 32 cores are allowed, one stays with the main process'
    did not add up. Under the cap the cores decide; past it, the advice names the cap."""
    few = one_gpu(SAWTOOTH, [PEGGED], host=H(cores=8))
    [f] = [f for f in apply(RULE, few) if f.subtype == "num-workers-0"]
    assert "num_workers=7) -- 8 cores are allowed, one stays with the main process" in f.advice[0]
    many = one_gpu(SAWTOOTH, [PEGGED], host=H(cores=32))
    [f] = [f for f in apply(RULE, many) if f.subtype == "num-workers-0"]
    assert "num_workers=16) -- 32 cores are allowed, but past 16 workers" in f.advice[0]
    assert "max_suggested_workers" in f.advice[0]


def _forked_pool() -> P:
    """torch <= 2.3: inductor's compile workers forked from the main process, so they
    carry its command line (command=None here: a fork's) -- to /proc, DataLoader workers."""
    return P(cpu=40.0, state="S", started_s=600.0, workers=(W(60.0, "R"),) * 2)


def _stack(compiling: bool) -> StackReading:
    """What py-spy reads of that job: workers in inductor's compile (or the DataLoader's
    worker loop), the main thread waiting on them (or on its next batch)."""
    inductor = Frame(
        "_worker_compile", "/venv/lib/python3.10/site-packages/torch/_inductor/codecache.py", 2500
    )
    loader = Frame(
        "_worker_loop", "/venv/lib/python3.10/site-packages/torch/utils/data/_utils/worker.py", 308
    )
    frame = inductor if compiling else loader
    kind = "compile" if compiling else "dataloader"
    workers = tuple(
        WorkerReading(5000 + i, 15, 15, (FrameCount(frame, 15, False),), None, kind)
        for i in range(2)
    )
    main = "compiling" if compiling else "waiting-for-batch"
    return StackReading(
        PID, 15, (Category(main, 15, 1.0, (FrameCount(frame, 15, False),)),), workers
    )


def test_a_forked_compile_pool_told_by_its_stack_is_warm_up_not_starvation() -> None:
    """issue 41's shape: late in a long compile (age 600 s, past warm-up's 180 s), the
    forked compile workers busy and the GPU in autotuning bursts -- critical starvation by
    /proc alone. The process's stack (its workers in torch/_inductor) says compiling."""
    history = one_gpu(SAWTOOTH, [_forked_pool()], H(busy=40.0, iowait=2.0))
    assert [f.rule for f in apply(RULE, history)] == ["input-starved"]  # /proc alone
    assert apply(RULE, history, [_stack(compiling=True)]) == []
    [f] = apply(warm_up.SPEC, history, [_stack(compiling=True)])
    assert f.severity is Severity.INFO and "torch.compile" in f.summary


def test_a_stack_of_dataloader_workers_leaves_starvation_standing() -> None:
    history = one_gpu(SAWTOOTH, [_forked_pool()], H(busy=40.0, iowait=2.0))
    [f] = apply(RULE, history, [_stack(compiling=False)])
    assert f.rule == "input-starved"


def _pool_running(compiler: str | None) -> P:
    """The forked pool of ``_forked_pool``, one of its workers running ``compiler`` (a
    child of it: the job's descendants are its workers to /proc)."""
    pool = _forked_pool()
    if compiler is None:
        return pool
    return replace(pool, workers=(*pool.workers, W(95.0, "R", name=compiler)))


@pytest.mark.parametrize("compiler", ["ptxas", "cc1plus", "x86_64-linux-gn", "ninja"])
def test_a_forked_compile_pool_running_a_compiler_is_warm_up_without_py_spy(
    compiler: str,
) -> None:
    """The same forked pool, no stack: a compiler among its children (triton's ptxas,
    inductor's g++/cc1plus, an extension's ninja build) says compiling from /proc alone."""
    history = one_gpu(SAWTOOTH, [_pool_running(compiler)], H(busy=40.0, iowait=2.0))
    assert apply(RULE, history) == []
    [f] = apply(warm_up.SPEC, history)
    assert f.severity is Severity.INFO and f"{compiler} running under it" in f.summary


def test_a_compiler_seen_minutes_ago_no_longer_hides_starvation() -> None:
    """A compile ends; a job still starved minutes after its last compiler ran is
    starved. Within those minutes (a tick between two ptxas runs) it is still compiling."""
    run = Run(history_s=600.0)
    host = H(busy=40.0, iowait=2.0)

    def ticks(n: int, compiler: str | None) -> None:
        for i in range(n):
            sm = SAWTOOTH[i % len(SAWTOOTH)]
            run.tick(
                Tick(
                    (G(0, sm, vram_gib=11.0),), (_pool_running(compiler if i % 2 else None),), host
                )
            )

    ticks(60, "ptxas")  # the compile: a ptxas under the pool every other tick
    assert apply(RULE, run.history) == []
    ticks(int(COMPILE_FRESH_S) + 60, None)
    assert [f.rule for f in apply(RULE, run.history)] == ["input-starved"]
