"""The rules: pure functions of a window of history and the thresholds.

Each rule looks at the window and returns the findings whose condition holds
*now*; the engine (``engine.py``) decides when a finding has held long enough
to show and when it has stopped long enough to clear. No I/O, no clocks, no
Textual: the same window always gives the same findings.

Every finding lists the metrics it used as :class:`Evidence`, with the
threshold each one crossed, so that a person can check the conclusion against
the numbers on screen. Per-process findings use the process's own NVML numbers
where the driver gives them, and the whole GPU's otherwise -- and say which.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import GIB, Gaps, Window
from gputop_hints.model import HOLDING_CLOCK_REASONS, GpuProcess

Rule = Callable[[Window, Thresholds], list[Finding]]


def _gib(value: float | None) -> str:
    return "n/a" if value is None else f"{value / GIB:.1f} GiB"


def _at_least(value: float | None, threshold: float) -> bool | None:
    return None if value is None else value >= threshold


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} %"


# --- overlap explained -------------------------------------------------------


def overlap_explained(win: Window, t: Thresholds) -> list[Finding]:
    """SM % + memory % over 100: explain that they overlap, once per GPU."""
    out: list[Finding] = []
    limit = t.overlap_explained.sum_above_percent
    for gpu in win.latest.gpus:
        total = gpu.utilization_sum_percent
        if total is None or total <= limit:
            continue
        assert gpu.sm_percent is not None and gpu.memory_access_percent is not None
        out.append(
            Finding(
                rule="overlap-explained",
                subject=Subject(gpu.index),
                severity=Severity.INFO,
                label=f"SM+mem {total:.0f}%: overlap",
                summary=(
                    f"SM {gpu.sm_percent:.0f} % + memory-access {gpu.memory_access_percent:.0f} % "
                    f"= {total:.0f} %: two overlapping fractions of the same time, not shares "
                    "of one whole -- kernels read memory while they run, so the sum can reach "
                    "200 %."
                ),
                advice=(
                    "Nothing to fix: this is how NVML's two counters work.",
                    "SM % counts time with at least one kernel running, not how full the SMs "
                    "are; occupancy needs DCGM profiling metrics (sm_active, sm_occupancy).",
                ),
                evidence=(
                    Evidence("SM %", gpu.sm_percent, "now"),
                    Evidence("memory-access %", gpu.memory_access_percent, "now"),
                    Evidence("sum", total, f"> {limit:g}"),
                ),
                anchor="overlap-explained",
            )
        )
    return out


# --- input starved -------------------------------------------------------------


def _suggested_workers(win: Window, t: Thresholds) -> int:
    return max(1, min(win.allowed_core_count - 1, t.input_starved.max_suggested_workers))


def _pcie_thrashing(win: Window, t: Thresholds, index: int) -> tuple[bool, list[Evidence]]:
    """Whether GPU ``index`` moves so much over PCIe that copies, not input, starve it."""
    c = t.pcie_thrash
    gpu = win.gpu(index)
    traffic = win.gpu_pcie_mean(index)
    sm = win.gpu_sm_mean(index)
    if gpu is None or traffic is None or sm is None:
        return False, []
    link = gpu.pcie_link_bytes_per_s
    if link is not None:
        limit = c.link_share_above * link
        what = f">= {c.link_share_above:g} x link ({link / 1e9:.1f} GB/s per direction)"
    else:
        limit = c.floor_gb_per_s * 1e9
        what = f">= {c.floor_gb_per_s:g} GB/s (link capacity unknown)"
    busy = win.gpu_pcie_busy_fraction(index, limit)
    if busy is None:
        return False, []
    hit = busy >= c.min_busy_fraction and sm < c.sm_below_percent
    return hit, [
        Evidence(
            f"readings with rx+tx {what}",
            busy * 100,
            f">= {c.min_busy_fraction * 100:g} % of readings",
            "%",
            Scope.DEVICE,
        ),
        Evidence("PCIe rx+tx (mean)", traffic, "for context", "B/s", Scope.DEVICE, met=None),
        Evidence("device SM % (mean)", sm, f"< {c.sm_below_percent:g}", "%", Scope.DEVICE),
    ]


def _sm_evidence(
    win: Window, proc: GpuProcess, t: Thresholds
) -> tuple[float | None, Scope, list[Evidence]]:
    """Mean SM for a process: its own when NVML has samples, else the device's."""
    own = win.process_sm_mean(proc)
    if own is not None:
        return own, Scope.PROCESS, []
    device = win.gpu_sm_mean(proc.gpu_index)
    sharing = [
        p
        for p in win.significant_processes_on(proc.gpu_index, t.general.min_vram_gib * GIB)
        if p.pid != proc.pid
    ]
    note = "per-process SM % not reported by the driver; using the whole GPU's" + (
        f", shared with {len(sharing)} other process(es)" if sharing else ""
    )
    return device, Scope.DEVICE, [Evidence(note, None, "fallback", "", Scope.DEVICE, met=None)]


def _gaps(
    win: Window, proc: GpuProcess, t: Thresholds, scope: Scope, need_burst: bool = False
) -> tuple[Gaps | None, Scope]:
    """Idle gaps as this process sees them.

    The device trace (with NVML's sub-second samples where there are any) is the
    finest, but on a GPU shared with other busy processes their kernels fill this
    one's gaps; then, when NVML reports the process's own SM %, its own trace
    (one value per tick) is the one that shows them.
    """
    c = t.input_starved
    others = [
        p
        for p in win.significant_processes_on(proc.gpu_index, t.general.min_vram_gib * GIB)
        if p.pid != proc.pid
    ]
    if others and scope is Scope.PROCESS:
        peak = win.process_sm_peak(proc)
        if need_burst and (peak is None or peak < c.busy_sm_above_percent):
            # No burst in its own trace (a light inference replica): no sawtooth to find.
            return None, Scope.PROCESS
        return win.process_gaps(proc, c.gap_sm_below_percent, c.min_gap_s), Scope.PROCESS
    return win.gpu_gaps(proc.gpu_index, c.gap_sm_below_percent, c.min_gap_s), Scope.DEVICE


def input_starved(win: Window, t: Thresholds) -> list[Finding]:
    """Low mean SM with idle gaps while the process holds VRAM: the GPU waits for input."""
    c = t.input_starved
    g = t.general
    out: list[Finding] = []
    for proc in win.processes():
        if (proc.vram_bytes or 0) < g.min_vram_gib * GIB:
            continue
        sm, scope, notes = _sm_evidence(win, proc, t)
        if sm is None or sm >= c.sm_mean_below_percent:
            continue
        gaps, gaps_scope = _gaps(win, proc, t, scope, need_burst=True)
        if gaps is None or gaps.fraction < c.min_gap_fraction or gaps.count < c.min_gaps:
            continue
        if gaps.peak_percent < c.busy_sm_above_percent:
            continue  # no bursts at all: idle, not starved (see idle-holding-vram)
        thrashing, _ = _pcie_thrashing(win, t, proc.gpu_index)
        if thrashing:
            continue  # copies, not input, are the bottleneck: pcie-thrash says so
        out.append(_starved_finding(win, t, proc, sm, scope, notes, gaps, gaps_scope))
    return out


def _starved_finding(
    win: Window,
    t: Thresholds,
    proc: GpuProcess,
    sm: float,
    scope: Scope,
    notes: list[Evidence],
    gaps: Gaps,
    gaps_scope: Scope,
) -> Finding:
    c = t.input_starved
    g = t.general
    main_cpu = win.process_cpu_mean(proc)
    busy_workers = win.process_busy_workers_mean(proc) or 0.0
    workers_cpu = win.process_workers_cpu_mean(proc)
    cores_busy = win.allowed_cores_busy_percent
    iowait = win.iowait_percent
    d_frac = win.process_d_state_fraction(proc)
    allowed = win.allowed_core_count
    job = win.latest.job
    n_workers = len(proc.workers)
    gap_fraction = gaps.fraction
    fine = gaps.fine
    evidence = [
        Evidence("SM % (mean)", sm, f"< {c.sm_mean_below_percent:g}", "%", scope),
        Evidence(
            "time in idle gaps" + (" (sub-second samples)" if fine else " (1 per tick)"),
            gap_fraction * 100,
            f">= {c.min_gap_fraction * 100:g} % of the window, gaps >= {c.min_gap_s:g} s",
            "%",
            gaps_scope,
        ),
        Evidence(
            "separate idle gaps",
            float(gaps.count),
            f">= {c.min_gaps} (a sawtooth)",
            "",
            gaps_scope,
        ),
        *notes,
        Evidence(
            "main process CPU (mean)",
            main_cpu,
            f"pegged at >= {g.main_pegged_percent:g}",
            "%",
            Scope.HOST,
            met=_at_least(main_cpu, g.main_pegged_percent),
        ),
        Evidence(
            f"busy workers (of {n_workers})",
            busy_workers,
            f"busy = above {g.worker_busy_percent:g} % of a core",
            "",
            Scope.HOST,
            met=None,
        ),
        Evidence(
            (
                f"job {job.job_id}'s cores busy ({allowed} allocated)"
                if job is not None
                else f"allowed cores busy ({allowed} cores)"
            ),
            cores_busy,
            f"saturated at >= {g.cores_busy_percent:g}",
            "%",
            Scope.HOST,
            met=_at_least(cores_busy, g.cores_busy_percent),
        ),
        Evidence(
            "iowait",
            iowait,
            f"storage-bound at >= {c.iowait_above_percent:g}",
            "%",
            Scope.HOST,
            met=_at_least(iowait, c.iowait_above_percent),
        ),
    ]
    n = _suggested_workers(win, t)
    advice: tuple[str, ...]
    if busy_workers < 0.5 and main_cpu is not None and main_cpu >= g.main_pegged_percent:
        subtype, label = "num-workers-0", "starved: num_workers=0?"
        summary = (
            f"The GPU idles in gaps ({gap_fraction * 100:.0f} % of the time) while the main "
            f"process is at {main_cpu:.0f} % of a core and no worker is busy: the batches "
            "are most likely loaded in the training process itself."
        )
        advice = (
            f"Set DataLoader(num_workers={n}) -- {allowed} cores are allowed, one stays with "
            "the main process.",
            "Add pin_memory=True and persistent_workers=True; prefetch_factor=2-4 keeps "
            "batches queued.",
        )
    elif cores_busy is not None and cores_busy >= g.cores_busy_percent:
        subtype, label = "cpu-bound", "starved: CPU-bound input"
        where = (
            f"{allowed} of {allowed} allocated cores"
            if job is not None
            else (f"all {allowed} allowed cores")
        )
        summary = (
            f"The GPU idles in gaps while {where} are {cores_busy:.0f} % busy: the input "
            "pipeline needs more CPU than the job has."
        )
        advice = (
            f"Ask for more cores (SLURM: --cpus-per-task, now {allowed})"
            + (f" -- job {job.job_id} has {allowed} on this node." if job is not None else "."),
            "Make augmentation cheaper or move it to the GPU (torchvision.transforms.v2 on "
            "GPU tensors, NVIDIA DALI).",
            "Decode / resize / tokenize once, offline, and train from the cached result.",
        )
    elif (iowait is not None and iowait >= c.iowait_above_percent) or d_frac >= c.d_state_fraction:
        subtype, label = "storage-bound", "starved: storage-bound"
        summary = (
            f"The GPU idles in gaps while the loader waits on storage (iowait {_pct(iowait)}, "
            f"{d_frac * 100:.0f} % of loader processes in D state) and cores are not saturated."
        )
        advice = (
            "Stage the dataset on node-local disk ($TMPDIR, NVMe) or in RAM before training.",
            "Pack many small files into larger shards (WebDataset tar, LMDB, Parquet).",
            f"More workers hide I/O latency: raise num_workers (now {n_workers}) and "
            "prefetch_factor.",
        )
        evidence.append(
            Evidence(
                "loader processes in D state",
                d_frac * 100,
                f">= {c.d_state_fraction * 100:g} points at storage",
                "%",
                Scope.HOST,
            )
        )
    else:
        subtype, label = "more-workers", "starved: loader too slow"
        summary = (
            f"The GPU idles in gaps; {n_workers} workers use {_pct(workers_cpu)} of a core in "
            f"total and cores are {_pct(cores_busy)} busy: the loader can't keep up, but "
            "there is CPU to spare."
        )
        advice = (
            f"Raise num_workers (now {n_workers}; up to {n} fits the {allowed} allowed cores) "
            "and prefetch_factor.",
            "pin_memory=True and persistent_workers=True avoid per-epoch worker start-up.",
            "Profile one worker (py-spy top --pid <worker pid>) to find the slow transform.",
        )
    severity = Severity.CRITICAL if sm < c.critical_sm_below_percent else Severity.WARNING
    return Finding(
        rule="input-starved",
        subtype=subtype,
        subject=Subject(proc.gpu_index, proc.pid),
        severity=severity,
        label=label,
        summary=summary,
        advice=advice,
        evidence=tuple(evidence),
        evidence_scope=scope,
        anchor="input-starved",
    )


# --- small batch -----------------------------------------------------------------


def small_batch(win: Window, t: Thresholds) -> list[Finding]:
    """Steady moderate SM, little VRAM, main process pegged, workers idle: launch-bound."""
    c = t.small_batch
    g = t.general
    out: list[Finding] = []
    for proc in win.processes():
        vram = proc.vram_bytes or 0
        gpu = win.gpu(proc.gpu_index)
        if gpu is None or not gpu.vram_total_bytes or vram < g.min_vram_gib * GIB:
            continue
        share = vram / gpu.vram_total_bytes
        if share >= c.vram_share_below:
            continue
        sm, scope, notes = _sm_evidence(win, proc, t)
        if sm is None or not c.sm_min_percent <= sm < c.sm_max_percent:
            continue
        gaps, gaps_scope = _gaps(win, proc, t, scope)
        if gaps is None or gaps.fraction > c.max_gap_fraction:
            continue
        main_cpu = win.process_cpu_mean(proc)
        if main_cpu is None or main_cpu < g.main_pegged_percent:
            continue
        busy_workers = win.process_busy_workers_mean(proc) or 0.0
        if busy_workers >= 0.5:
            continue
        factor = max(2, int(c.headroom_target * gpu.vram_total_bytes / vram))
        out.append(
            Finding(
                rule="small-batch",
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.WARNING,
                label="small batch/launch-bound",
                summary=(
                    f"SM is a steady {sm:.0f} % with no idle gaps, the process holds only "
                    f"{share * 100:.0f} % of VRAM, and its main thread is at {main_cpu:.0f} % "
                    "of a core launching kernels: each step is too small to fill the GPU."
                ),
                advice=(
                    f"Try a batch about {factor}x larger: it holds {_gib(vram)} of "
                    f"{_gib(gpu.vram_total_bytes)} (aiming at {c.headroom_target * 100:.0f} % of "
                    "VRAM; scale the learning rate with it).",
                    "Cut per-step launch overhead: torch.compile(mode='reduce-overhead') or "
                    "CUDA graphs.",
                    "Use bf16 autocast so each kernel does more per launch on tensor cores.",
                ),
                evidence=(
                    Evidence(
                        "SM % (mean)",
                        sm,
                        f"between {c.sm_min_percent:g} and {c.sm_max_percent:g}",
                        "%",
                        scope,
                    ),
                    Evidence(
                        "time in idle gaps"
                        + (" (sub-second samples)" if gaps.fine else " (1 per tick)"),
                        gaps.fraction * 100,
                        f"<= {c.max_gap_fraction * 100:g}",
                        "%",
                        gaps_scope,
                    ),
                    *notes,
                    Evidence(
                        "VRAM share of the card",
                        share * 100,
                        f"< {c.vram_share_below * 100:g}",
                        "%",
                        Scope.PROCESS,
                    ),
                    Evidence(
                        "main process CPU (mean)",
                        main_cpu,
                        f">= {g.main_pegged_percent:g}",
                        "%",
                        Scope.HOST,
                    ),
                    Evidence("busy workers", busy_workers, "< 0.5 (idle)", "", Scope.HOST),
                ),
                evidence_scope=scope,
                anchor="small-batch",
            )
        )
    return out


# --- PCIe thrash -----------------------------------------------------------------


def pcie_thrash(win: Window, t: Thresholds) -> list[Finding]:
    """Heavy PCIe traffic while SM is low: copies, not compute, set the pace."""
    out: list[Finding] = []
    min_vram = t.general.min_vram_gib * GIB
    for gpu in win.latest.gpus:
        hit, evidence = _pcie_thrashing(win, t, gpu.index)
        if not hit:
            continue
        procs = win.significant_processes_on(gpu.index, min_vram)
        # PCIe traffic is counted per GPU: with several processes on it, name the one
        # holding the most memory (the training job, usually) and say that it is a guess.
        for proc in sorted(procs, key=lambda p: p.vram_bytes or 0, reverse=True)[:1]:
            note = (
                []
                if len(procs) == 1
                else [
                    Evidence(
                        f"PCIe is per GPU: {len(procs)} processes share it; shown on the "
                        "one holding the most VRAM",
                        None,
                        "device evidence",
                        "",
                        Scope.DEVICE,
                        met=None,
                    )
                ]
            )
            out.append(
                Finding(
                    rule="pcie-thrash",
                    subject=Subject(gpu.index, proc.pid),
                    severity=Severity.WARNING,
                    label="PCIe thrash",
                    summary=(
                        f"GPU {gpu.index}'s PCIe link is busy in {evidence[0].value or 0:.0f} % of "
                        f"readings (mean {(evidence[1].value or 0) / 1e9:.1f} GB/s) while SM is "
                        f"{evidence[2].value or 0:.0f} %: host<->device copies, not kernels, set "
                        "the pace."
                    ),
                    advice=(
                        "Keep tensors on the GPU between steps; avoid .cpu(), .item(), .numpy() "
                        "or printing GPU tensors every step.",
                        "DataLoader(pin_memory=True) and .to(device, non_blocking=True) make "
                        "copies faster and overlap them with compute.",
                        "Check for CPU offload (optimizer / parameter offload, unified memory "
                        "paging) that streams weights every step.",
                    ),
                    evidence=(*evidence, *note),
                    evidence_scope=Scope.DEVICE,
                    anchor="pcie-thrash",
                )
            )
    return out


# --- memory-bound -------------------------------------------------------------------


def memory_bound(win: Window, t: Thresholds) -> list[Finding]:
    c = t.memory_bound
    out: list[Finding] = []
    for gpu in win.latest.gpus:
        mem = win.gpu_mem_mean(gpu.index)
        sm = win.gpu_sm_mean(gpu.index)
        if mem is None or sm is None or sm >= c.sm_below_percent:
            continue
        if mem < c.memory_above_percent or mem < sm - c.within_sm_points:
            continue
        out.append(
            Finding(
                rule="memory-bound",
                subject=Subject(gpu.index),
                severity=Severity.WARNING,
                label="memory-bound kernels",
                summary=(
                    f"Device memory is busy {mem:.0f} % of the time against {sm:.0f} % SM: the "
                    "kernels wait on memory bandwidth more than on arithmetic."
                ),
                advice=(
                    "Use bf16/fp16 autocast: half the bytes per value moved.",
                    "Fuse elementwise chains (torch.compile, fused optimizers such as "
                    "AdamW(fused=True), fused attention).",
                    "For convolutions, channels_last memory format.",
                ),
                evidence=(
                    Evidence("memory-access % (mean)", mem, f">= {c.memory_above_percent:g}"),
                    Evidence(
                        "SM % (mean)",
                        sm,
                        f"<= memory-access % + {c.within_sm_points:g}, < {c.sm_below_percent:g}",
                    ),
                ),
                anchor="memory-bound",
            )
        )
    return out


# --- idle holding VRAM -------------------------------------------------------------


def idle_holding_vram(win: Window, t: Thresholds) -> list[Finding]:
    c = t.idle_holding_vram
    out: list[Finding] = []
    for proc in win.processes():
        vram = proc.vram_bytes or 0
        if vram < c.min_vram_gib * GIB:
            continue
        idle_s = win.gpu_idle_for_s(proc.gpu_index, c.sm_below_percent)
        if idle_s < c.idle_for_s:
            continue
        own = win.process_sm_mean(proc)
        if own is not None and own >= c.sm_below_percent:
            continue
        cpu = win.process_cpu_mean(proc)
        critical = idle_s >= c.critical_after_s
        minutes = idle_s / 60
        age = f"{idle_s:.0f} s" if idle_s < 120 else f"{minutes:.0f} min"
        out.append(
            Finding(
                rule="idle-holding-vram",
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.CRITICAL if critical else Severity.WARNING,
                label=f"idle {age}, holds {vram / GIB:.0f}G",
                summary=(
                    f"GPU {proc.gpu_index} has run no kernel for {age} while this process holds "
                    f"{_gib(vram)} of its memory (main process CPU {_pct(cpu)})."
                ),
                advice=(
                    "A notebook or interactive session you are done with? Free the GPU: "
                    "del the model and call torch.cuda.empty_cache(), or restart the kernel.",
                    "A distributed job? One rank may be stuck in a collective: check the other "
                    f"ranks, NCCL_DEBUG=INFO, and py-spy dump --pid {proc.pid}.",
                ),
                evidence=(
                    Evidence(
                        "device SM idle for",
                        idle_s,
                        f">= {c.idle_for_s:g} s below {c.sm_below_percent:g} %",
                        "s",
                        Scope.DEVICE,
                    ),
                    Evidence(
                        "VRAM held", float(vram), f">= {c.min_vram_gib:g} GiB", "B", Scope.PROCESS
                    ),
                    Evidence(
                        "main process CPU (mean)", cpu, "for context", "%", Scope.HOST, met=None
                    ),
                ),
                evidence_scope=Scope.DEVICE if own is None else Scope.PROCESS,
                anchor="idle-holding-vram",
            )
        )
    return out


# --- VRAM near limit ---------------------------------------------------------------


def vram_near_limit(win: Window, t: Thresholds) -> list[Finding]:
    c = t.vram_near_limit
    out: list[Finding] = []
    for gpu in win.latest.gpus:
        frac = gpu.vram_fraction
        if frac is None or frac < c.used_fraction_above:
            continue
        critical = frac >= c.critical_fraction_above
        out.append(
            Finding(
                rule="vram-near-limit",
                subject=Subject(gpu.index),
                severity=Severity.CRITICAL if critical else Severity.WARNING,
                label=f"VRAM {frac * 100:.0f}%: OOM risk",
                summary=(
                    f"GPU {gpu.index} has {_gib(gpu.vram_used_bytes)} of "
                    f"{_gib(gpu.vram_total_bytes)} in use: one larger batch or a fragmentation "
                    "spike away from CUDA out-of-memory."
                ),
                advice=(
                    "Lower the batch size and keep the effective batch with gradient accumulation.",
                    "Activation checkpointing (torch.utils.checkpoint) trades compute for memory.",
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation; "
                    "bf16 halves activation memory.",
                ),
                evidence=(
                    Evidence(
                        "VRAM used / total", frac * 100, f">= {c.used_fraction_above * 100:g}"
                    ),
                ),
                anchor="vram-near-limit",
            )
        )
    return out


# --- compute-bound (healthy) ---------------------------------------------------------


def compute_bound(win: Window, t: Thresholds) -> list[Finding]:
    c = t.compute_bound
    out: list[Finding] = []
    # Peers of a straggler read busy while they spin in collectives waiting for
    # it: calling them healthy would mislead.
    waiting = {p for _, _, _, peers, _ in _stragglers(win, t) for p in peers}
    for gpu in win.latest.gpus:
        if gpu.index in waiting:
            continue
        sm = win.gpu_sm_mean(gpu.index)
        low = win.gpu_sm_min(gpu.index)
        if sm is None or low is None or sm < c.sm_above_percent or low < c.min_sm_percent:
            continue
        out.append(
            Finding(
                rule="compute-bound",
                subject=Subject(gpu.index),
                severity=Severity.INFO,
                label="compute-bound: healthy",
                summary=(
                    f"Kernels run {sm:.0f} % of the time (never below {low:.0f} %): the input "
                    "pipeline keeps up and the GPU sets the pace."
                ),
                advice=(
                    "Next gains are in the model: bf16 autocast on tensor cores, "
                    "torch.compile, fused kernels (e.g. scaled_dot_product_attention).",
                    "SM % is time busy, not SMs filled: DCGM's sm_occupancy tells how full.",
                ),
                evidence=(
                    Evidence("SM % (mean)", sm, f">= {c.sm_above_percent:g}"),
                    Evidence("SM % (lowest tick)", low, f">= {c.min_sm_percent:g}"),
                ),
                anchor="compute-bound",
            )
        )
    return out


# --- throttled ------------------------------------------------------------------------


def throttled(win: Window, t: Thresholds) -> list[Finding]:
    c = t.throttled
    out: list[Finding] = []
    reasons = frozenset(HOLDING_CLOCK_REASONS)
    for gpu in win.latest.gpus:
        fraction, seen = win.throttle_fraction(gpu.index, reasons)
        sm = win.gpu_sm_mean(gpu.index)
        if fraction < c.min_fraction or sm is None or sm < c.busy_sm_above_percent:
            continue
        kinds = sorted({HOLDING_CLOCK_REASONS[r] for r in seen})
        subtype = (
            "power"
            if kinds == ["power"]
            else "thermal"
            if kinds == ["thermal"]
            else ("power-thermal")
        )
        clock = (
            f" at {gpu.sm_clock_mhz} of {gpu.max_sm_clock_mhz} MHz"
            if gpu.sm_clock_mhz and gpu.max_sm_clock_mhz
            else ""
        )
        out.append(
            Finding(
                rule="throttled",
                subtype=subtype,
                subject=Subject(gpu.index),
                severity=Severity.WARNING,
                label=f"throttled: {subtype}",
                summary=(
                    f"GPU {gpu.index} runs its clocks{clock} held down by "
                    f"{', '.join(sorted(seen))} in {fraction * 100:.0f} % of ticks while busy."
                ),
                advice=(
                    "Power: check the power limit (nvidia-smi -q -d POWER) against the card's "
                    "default; a capped node is slower for everyone.",
                    "Thermal: check fans, airflow and inlet temperature with the admins.",
                ),
                evidence=(
                    Evidence(
                        "ticks with power/thermal reasons",
                        fraction * 100,
                        f">= {c.min_fraction * 100:g}",
                    ),
                    Evidence("SM % (mean)", sm, f">= {c.busy_sm_above_percent:g}"),
                    Evidence("temperature", gpu.temperature_c, "for context", "C", met=None),
                    Evidence(
                        "power",
                        gpu.power_watts,
                        f"limit {gpu.power_limit_watts or 0:.0f} W",
                        "W",
                        met=None,
                    ),
                ),
                anchor="throttled",
            )
        )
    return out


# --- straggler ---------------------------------------------------------------------


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


def _stragglers(
    win: Window, t: Thresholds
) -> list[tuple[int, float, float, list[int], tuple[str | None, str]]]:
    """(gpu, its SM mean, peers' median, peer gpus, job) for each straggling GPU."""
    c = t.straggler
    out = []
    for job, gpus in _jobs(win, t).items():
        known = {i: m for i in gpus if (m := win.gpu_sm_mean(i)) is not None}
        for index, sm in known.items():
            peers = [m for i, m in known.items() if i != index]
            if not peers:
                continue
            median = statistics.median(peers)
            if median >= c.peers_sm_above_percent and sm <= median - c.below_peers_points:
                out.append((index, sm, median, sorted(i for i in known if i != index), job))
    return out


def straggler(win: Window, t: Thresholds) -> list[Finding]:
    """One GPU of a multi-GPU job well below its peers' median SM %."""
    c = t.straggler
    out: list[Finding] = []
    for index, sm, median, peers, (user, command) in _stragglers(win, t):
        out.append(
            Finding(
                rule="straggler",
                subject=Subject(index),
                severity=Severity.WARNING,
                label=f"straggler: {sm:.0f}% vs {median:.0f}%",
                summary=(
                    f"GPU {index} runs kernels {sm:.0f} % of the time while the other "
                    f"{len(peers)} GPU(s) of the same job ({user or 'n/a'}: {command[:40]}) "
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
                anchor="straggler",
            )
        )
    return out


# --- low utilization (nothing more specific applies) -------------------------------


def low_utilization(win: Window, t: Thresholds) -> list[Finding]:
    """A GPU in use but nearly idle, when no specific rule explains it (see the engine)."""
    c = t.low_utilization
    out: list[Finding] = []
    # Imported logs (nvidia-smi, W&B) have no per-process rows at all: the specific
    # rules cannot run, so a higher bar says "underused, and this data cannot say why".
    no_process_data = not win.latest.processes and win.latest.source == "replay"
    limit = c.without_process_data_below_percent if no_process_data else c.sm_mean_below_percent
    for gpu in win.latest.gpus:
        sm = win.gpu_sm_mean(gpu.index)
        if sm is None or sm >= limit:
            continue
        procs = [p for p in win.processes() if p.gpu_index == gpu.index]
        if procs:
            held = float(sum(p.vram_bytes or 0 for p in procs))
            why = f"{len(procs)} process(es) hold {_gib(held)}"
        elif not win.latest.processes and (gpu.vram_used_bytes or 0) >= c.in_use_vram_gib * GIB:
            why = f"{_gib(gpu.vram_used_bytes)} of VRAM in use (no per-process data)"
        elif no_process_data and gpu.vram_used_bytes is None:
            why = "the logged run holds it (VRAM use not in this log)"
        else:
            continue
        cores = win.allowed_cores_busy_percent
        host = f"; host cores {cores:.0f} % busy" if cores is not None else "; no host CPU data"
        out.append(
            Finding(
                rule="low-utilization",
                subject=Subject(gpu.index),
                severity=Severity.WARNING,
                label=f"GPU busy only {sm:.0f}%",
                summary=(
                    f"GPU {gpu.index} runs kernels {sm:.0f} % of the time while {why}{host}: "
                    + (
                        "this data has no per-process or host-side rows, so it cannot tell "
                        "input starvation from a small batch or CPU-side work."
                        if no_process_data
                        else "the job's time goes elsewhere, and no more specific pattern "
                        "(input gaps, small batch, copies) was found to say where."
                    )
                ),
                advice=(
                    *(
                        (
                            "Watch or record the job with gputop-hints ('gputop-hints record "
                            "-o run.jsonl.gz'): its per-process and host-side data tell input "
                            "starvation, a small batch and CPU-side work apart.",
                        )
                        if no_process_data
                        else ()
                    ),
                    "Profile a few steps (torch.profiler, or py-spy top on the main process) "
                    "to see where the time goes: CPU-side work such as an RL environment, "
                    "Python overhead, logging, or waiting on I/O or other ranks.",
                    "Batch the CPU-side work (vectorized environments, larger inference "
                    "batches) so each GPU call does more.",
                    "If the job cannot use more, a smaller or shared GPU (MIG) frees this one.",
                ),
                evidence=(
                    Evidence(
                        "SM % (mean)",
                        sm,
                        f"< {limit:g}" + (" (no process data)" if no_process_data else ""),
                    ),
                    Evidence(
                        "host cores busy (mean)", cores, "for context", "%", Scope.HOST, met=None
                    ),
                ),
                anchor="low-utilization",
            )
        )
    return out


# --- the job's cores are loaded by others --------------------------------------------


def cores_contended(win: Window, t: Thresholds) -> list[Finding]:
    """Processes outside the attached job use a large share of the job's own cores."""
    c = t.cores_contended
    job = win.latest.job
    if job is None or not job.cpus:
        return []
    shares = [
        s.job.foreign_cpu_percent
        for s in list(win.history.snapshots)[-win.ticks :]
        if s.job is not None and s.job.foreign_cpu_percent is not None
    ]
    if not shares:
        return []
    share = sum(shares) / len(shares)
    if share < c.foreign_share_above_percent:
        return []
    out: list[Finding] = []
    for proc in win.processes():
        if proc.in_job is False:
            continue
        out.append(
            Finding(
                rule="cores-contended",
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.WARNING,
                label=f"cores shared: {share:.0f}% other",
                summary=(
                    f"Processes outside job {job.job_id} use {share:.0f} % of the "
                    f"{len(job.cpus)} cores allocated to it: its DataLoader workers and main "
                    "process get less CPU than the job asked for."
                ),
                advice=(
                    "Tell the admins: another job (or a login-node process) runs on cores "
                    "SLURM gave to this one -- a missing cgroup/affinity constraint.",
                    "Until fixed, fewer DataLoader workers than allocated cores avoids "
                    "fighting over the shared ones.",
                ),
                evidence=(
                    Evidence(
                        "job's cores used by other processes (mean)",
                        share,
                        f">= {c.foreign_share_above_percent:g}",
                        "%",
                        Scope.HOST,
                    ),
                ),
                anchor="cores-contended",
            )
        )
    return out


LOW_UTILIZATION_EXPLAINED_BY = frozenset(
    {"input-starved", "small-batch", "pcie-thrash", "idle-holding-vram", "straggler"}
)
"""Rules whose finding on a GPU (or a process on it) already says why it is underused."""


ALL_RULES: tuple[tuple[str, Rule], ...] = (
    ("overlap-explained", overlap_explained),
    ("input-starved", input_starved),
    ("small-batch", small_batch),
    ("pcie-thrash", pcie_thrash),
    ("memory-bound", memory_bound),
    ("idle-holding-vram", idle_holding_vram),
    ("vram-near-limit", vram_near_limit),
    ("compute-bound", compute_bound),
    ("throttled", throttled),
    ("straggler", straggler),
    ("low-utilization", low_utilization),
    ("cores-contended", cores_contended),
)


def hysteresis_for(rule: str, t: Thresholds) -> tuple[float, float]:
    """(raise_after_s, clear_after_s) of a rule."""
    section = getattr(t, rule.replace("-", "_"))
    h = section.hysteresis
    return h.raise_after_s, h.clear_after_s
