"""One sentence per rule: what it means. Shown by ``?`` in the monitor and in docs/hints.md."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RuleInfo:
    rule: str
    title: str
    sentence: str
    subject: str
    """"process" or "gpu": what the finding is attached to."""

    @property
    def anchor(self) -> str:
        return self.rule


CATALOGUE: tuple[RuleInfo, ...] = (
    RuleInfo(
        "overlap-explained",
        "SM % + memory % over 100",
        "SM % and memory-access % are two overlapping fractions of the same time (kernels read "
        "memory while they run), so their sum can reach 200 %; SM % is time with a kernel "
        "running, not how full the SMs are.",
        "gpu",
    ),
    RuleInfo(
        "input-starved",
        "Input starved",
        "The GPU idles in repeated gaps (a sawtooth) while the process holds VRAM: batches "
        "arrive too slowly; the subtype says why -- num_workers=0, a CPU-bound pipeline, "
        "storage, or too few workers.",
        "process",
    ),
    RuleInfo(
        "small-batch",
        "Small batch / launch-bound",
        "Steady, moderate SM with no gaps, little VRAM used and the main thread pegged at one "
        "core: each step is too small to fill the GPU and kernel launches set the pace.",
        "process",
    ),
    RuleInfo(
        "pcie-thrash",
        "PCIe thrash",
        "The PCIe link is busy a large share of the time while SM is low: host<->device copies, "
        "not kernels, set the pace.",
        "process",
    ),
    RuleInfo(
        "memory-bound",
        "Memory-bound kernels",
        "Memory-access % is high and at or above SM %: kernels wait on memory bandwidth more "
        "than on arithmetic.",
        "gpu",
    ),
    RuleInfo(
        "idle-holding-vram",
        "Idle, holding VRAM",
        "The process holds device memory but the GPU has run no kernel for a while: a "
        "forgotten notebook, a finished job that did not exit, or a rank stuck in a collective.",
        "process",
    ),
    RuleInfo(
        "vram-near-limit",
        "VRAM near its limit",
        "Device memory is almost full: a larger batch or an allocator spike ends in CUDA "
        "out-of-memory.",
        "gpu",
    ),
    RuleInfo(
        "compute-bound",
        "Compute-bound (healthy)",
        "Kernels run nearly all the time and never drop far: the input keeps up and the GPU "
        "sets the pace; further gains are in the model.",
        "gpu",
    ),
    RuleInfo(
        "throttled",
        "Throttled",
        "The driver holds the clocks down for power or heat while the GPU is busy.",
        "gpu",
    ),
    RuleInfo(
        "straggler",
        "Straggler",
        "One GPU of a multi-GPU job runs kernels far less than its peers, which wait for it "
        "in collectives: that rank sets the pace of the whole job.",
        "gpu",
    ),
    RuleInfo(
        "low-utilization",
        "Low utilization",
        "The GPU is in use but runs kernels only a small share of the time and no specific "
        "pattern explains it: the time goes to CPU-side work, I/O or waiting -- profile a few "
        "steps to see where.",
        "gpu",
    ),
    RuleInfo(
        "cores-contended",
        "Job's cores shared",
        "Attached to a SLURM job, processes outside it use a large share of the cores the job "
        "was allocated: its workers get less CPU than it asked for.",
        "process",
    ),
)

BY_RULE = {info.rule: info for info in CATALOGUE}
