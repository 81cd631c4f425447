"""The lab's scenarios -- configurations of the one training program -- and the closed loop.

Every scenario runs the same trainer on the same simulated GPU (``Config``'s defaults:
50 launch groups of 1 ms and 100 us of kernel each per step, 8 ms of GPU work per
sample). They differ only in what a user sets: ``num_workers``, ``batch_size`` and the
augmentation's cost (``cpu_reps``: ~0.45 ms + ~0.36 ms per round per sample on the
2-core host this was tuned on; the lab scales the rounds to this host's CPU, see
:func:`pipelab.trainer.round_ms`). Which resource runs out follows from those numbers; no
scenario says what the monitor should find.

:func:`apply_advice` is the closed loop: it reads the advice of the monitor's verdict,
takes the first line the lab has a knob for, and returns the changed configuration. It
never looks at the scenario's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gputop_hints.hints.findings import Finding
from pipelab.trainer import Config


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    """What the user did, in words (not what the monitor should say)."""
    settings: dict[str, float]
    hogs: int = 0
    """Busy processes outside the program, pinned to its cores (the host, not the user)."""
    job: bool = False
    """Run the program as a SLURM job (its environment only) and attach the monitor to it."""
    tenant: dict[str, float] | None = None
    """A second program's settings, run beside it on the same simulated GPU (another
    user's job; the closed loop changes only the first program)."""


SCENARIOS = (
    Scenario(
        "num-workers-0",
        "batch 32, loads in the training process, ~12 ms of augmentation per sample",
        # ~390 ms of loading per batch against a ~310 ms step (1.25x): in-process the GPU
        # idles over half the time (41 % busy here); one worker, all a 2-core host has to
        # spare, overlaps the loading with the step, and the GPU is busy ~65 % (measured
        # 2026-12-04). Loading must outlast the step for in-process loading to starve
        # the GPU below input-starved's 50 %, and stay under twice it for one worker to
        # lift it above: 1.25x sits between. Rounds are scaled to this host's CPU.
        {"num_workers": 0, "batch_size": 32, "cpu_reps": 32},
    ),
    Scenario(
        "too-few-workers",
        "batch 32, 1 worker, ~20 ms of augmentation per sample",
        {"num_workers": 1, "batch_size": 32, "cpu_reps": 55},
    ),
    Scenario(
        "healthy",
        "batch 32, 1 worker, ~5 ms of augmentation per sample",
        {"num_workers": 1, "batch_size": 32, "cpu_reps": 12},
    ),
    Scenario(
        "small-batch",
        "batch 2, loads in the training process, no augmentation (~0.5 ms per sample)",
        # With cpu_reps=12 (~5 ms per sample, in-process) the loop is as much input- as
        # launch-bound: x4 batch took it from 36 % to 59 % and small-batch stayed (the
        # serial load caps it near 62 % at any batch; its idle stretches are shorter
        # than NVML's 1/6 s sample, so input-starved cannot see them). See docs/lab.md.
        {"num_workers": 0, "batch_size": 2, "cpu_reps": 0},
    ),
    Scenario(
        "pageable-copies",
        "batch 32 of 128 MiB samples (volumes) from pageable memory, 1 worker, no augmentation",
        {"num_workers": 1, "batch_size": 32, "cpu_reps": 0, "h2d_mib_per_sample": 128},
    ),
    Scenario(
        "foreign-hog",
        "a SLURM job: batch 32, 1 worker, ~7 ms of augmentation per sample; another "
        "user's busy process pinned to the job's cores",
        {"num_workers": 1, "batch_size": 32, "cpu_reps": 18},
        hogs=1,
        job=True,
    ),
    Scenario(
        "slow-storage",
        "batch 8 of 32 MiB samples read past the page cache (O_DIRECT, the dataset larger "
        "than RAM), 1 worker, no augmentation",
        {"num_workers": 1, "batch_size": 8, "cpu_reps": 0, "sample_mib": 32, "direct_io": True},
    ),
    Scenario(
        "sync-every-step",
        "batch 32, 1 worker, no augmentation, a model of few large kernels (10 launches a "
        "step); reads the loss with loss.item() every step",
        {"num_workers": 1, "batch_size": 32, "cpu_reps": 0, "kernels": 10, "sync_item": True},
    ),
    Scenario(
        "second-tenant",
        "batch 32, loads in the training process, ~11 ms of augmentation per sample; "
        "another user's job (batch 32, 1 worker, no augmentation, blocking sync) on the same GPU",
        {"num_workers": 0, "batch_size": 32, "cpu_reps": 28},
        tenant={"num_workers": 1, "batch_size": 32, "cpu_reps": 0, "blocking_sync": True},
    ),
)
BY_NAME = {s.name: s for s in SCENARIOS}

MAX_BATCH = 256
"""The largest batch the lab applies (the dataset's size: one batch per epoch)."""

_SET_WORKERS = re.compile(r"num_workers=(\d+)\)")
_UP_TO = re.compile(r"up to (\d+) fits")
_BATCH_X = re.compile(r"batch about (\d+)x larger")
_CHEAPER = ("make each batch cheaper", "augmentation cheaper")


def apply_advice(config: Config, finding: Finding) -> tuple[Config, str] | None:
    """The configuration after following ``finding``'s advice, and the step in words;
    None when no advice line names a knob the lab has."""
    for line in finding.advice:
        low = line.lower()
        if "dataset" in low and "in ram" in low and config.direct_io:
            # staged in RAM: the same reads, from the page cache instead of the disk
            return replace(config, direct_io=False), "dataset in RAM (page cache, no O_DIRECT)"
        if any(c in low for c in _CHEAPER):
            # "move it to the GPU" / "decode once, offline": the per-sample CPU work
            # left is the read and the decode
            return replace(config, cpu_reps=0), "augmentation off the CPU (cpu_reps=0)"
        if m := _SET_WORKERS.search(line) or _UP_TO.search(line):
            n = int(m.group(1))
            if n > config.num_workers:
                return replace(config, num_workers=n), f"num_workers={n}"
        if "raise num_workers" in low:
            n = config.num_workers + 1
            return replace(config, num_workers=n), f"num_workers={n} (one more)"
        if "pin_memory=true" in low and not config.pin_memory:
            return replace(config, pin_memory=True), "pin_memory=True"
        if m := _BATCH_X.search(line):
            b = min(MAX_BATCH, config.batch_size * int(m.group(1)))
            return replace(config, batch_size=b), f"batch_size={b}"
    return None


_FOREIGN = ("runs on cores slurm gave to this one", "other work off the job's cores")


def apply_host_advice(finding: Finding, hogs: int) -> tuple[int, str] | None:
    """The foreign load left after following ``finding``'s advice, and the step in words;
    None when no advice line is about work outside the program. The admins' fix (an
    affinity or cgroup constraint for the other work) moves it off the job's cores; on a
    host whose every core is the job's that means it stops."""
    if hogs and any(any(f in line.lower() for f in _FOREIGN) for line in finding.advice):
        return 0, f"foreign load off the job's cores ({hogs} hog stopped)"
    return None


def settings_text(config: Config) -> str:
    return f"w={config.num_workers} b={config.batch_size} reps={config.cpu_reps}"
