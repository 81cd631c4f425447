"""The mechanisms, written as timelines: what a training loop, a server, a rank do.

Each function appends segments to a :class:`TimelineBuilder` from a small set of
physical parameters (seconds of GPU work per step, CPU seconds to make a batch,
bytes copied per step, DataLoader workers) and lets the timing follow:

* A DataLoader with ``num_workers=0`` loads each batch in the training process
  itself, between steps: the GPU idles while the main process is busy
  (PyTorch "Data loading": single-process loading blocks the loop).
* With N workers, batches are made in parallel; the loop waits only when N
  workers together make batches slower than the GPU uses them. Waiting
  workers on storage sit in D state and show as iowait.
* A copy from pageable memory is synchronous: the GPU waits for it. A pinned,
  ``non_blocking`` copy on a prefetching loader overlaps the previous step.
* Ranks of a data-parallel job meet in an all-reduce every step; NCCL's kernel
  is launched at once and spins on the GPU until every peer arrives, so a
  waiting rank reads as busy at low power (NCCL docs, "NCCL_BLOCKING_WAIT" and
  the user guide's note on kernels waiting on peers).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from field.timeline import IDLE, Activity, TimelineBuilder


def _jitter(rng: random.Random, value: float, spread: float) -> float:
    """``value`` perturbed by a relative normal spread, never below 10 % of it."""
    return max(0.1 * value, value * (1.0 + rng.gauss(0.0, spread)))


@dataclass(frozen=True, slots=True)
class TrainLoop:
    """One training process's step, from its physical costs."""

    step_gpu_s: float
    """GPU time of one step's kernels (forward, backward, optimizer)."""
    kernel_fill: float = 0.97
    """Share of that time with a kernel running: launch gaps and syncs take the rest."""
    power: float = 0.85
    """Power demand of its kernels (see Activity.power)."""
    memory: float = 0.5
    """Memory-access share while its kernels run."""
    main_cpu: float = 70.0
    """Main process CPU while the GPU computes (launching kernels, Python)."""
    batch_cpu_s: float = 0.0
    """CPU seconds to make one batch (decode, augment, collate) on one core."""
    storage_s: float = 0.0
    """Seconds one batch waits on storage (reads from NFS, object stores)."""
    workers: int = 0
    """DataLoader num_workers; 0 loads in the main process."""
    copy_bytes: float = 0.0
    """Host -> device bytes per step."""
    copy_rate: float = 25e9
    """Bytes/s the copy reaches (pinned or pageable, per link)."""
    copy_overlapped: bool = True
    """Pinned and non_blocking with prefetch: the copy hides under the previous step."""
    d2h_bytes: float = 0.0
    """Device -> host bytes per step (losses, metrics, offloaded gradients)."""
    cores: int = 32
    """Cores of the host: one task blocked on storage is 100/cores % iowait."""
    jitter: float = 0.06

    def step(self, b: TimelineBuilder, rng: random.Random) -> None:
        """Append one step's segments."""
        gpu_s = _jitter(rng, self.step_gpu_s, self.jitter)
        compute = Activity(
            kernel=self.kernel_fill,
            memory=self.memory * self.kernel_fill,
            power=self.power * self.kernel_fill,
            main_cpu=self.main_cpu,
        )
        copy_s = self.copy_bytes / self.copy_rate if self.copy_bytes else 0.0
        d2h_s = self.d2h_bytes / self.copy_rate if self.d2h_bytes else 0.0
        if self.workers == 0:
            self._inline_load(b, rng)
            worker_cpu, worker_state, iowait = 0.0, "S", 0.0
        else:
            produce_s = _jitter(rng, self.batch_cpu_s + self.storage_s, self.jitter)
            sync_copy = 0.0 if self.copy_overlapped else copy_s
            period = max(produce_s / self.workers, gpu_s + sync_copy + d2h_s)
            wait_s = period - (gpu_s + sync_copy + d2h_s)
            busy = self.batch_cpu_s / (self.workers * period) if self.batch_cpu_s else 0.0
            blocked = self.storage_s / period if self.storage_s else 0.0
            worker_cpu = min(100.0, 100.0 * busy)
            worker_state = (
                "D" if self.storage_s > self.batch_cpu_s else ("R" if busy > 0.5 else "S")
            )
            iowait = min(100.0, 100.0 * blocked / self.cores)
            b.add(
                wait_s,
                Activity(
                    main_cpu=4.0,
                    worker_cpu=worker_cpu,
                    worker_state=worker_state,
                    iowait=iowait,
                ),
            )
        loader = {"worker_cpu": worker_cpu, "iowait": iowait}
        if copy_s and not (self.copy_overlapped and self.workers):
            copying = Activity(h2d=self.copy_rate, memory=0.05, main_cpu=100.0, main_state="R")
            b.add(copy_s, _with(copying, worker_state=worker_state, **loader))
            b.add(gpu_s, _with(compute, worker_state=worker_state, **loader))
        elif copy_s:
            hidden = min(copy_s, gpu_s)
            b.add(hidden, _with(compute, h2d=self.copy_rate, worker_state=worker_state, **loader))
            b.add(gpu_s - hidden, _with(compute, worker_state=worker_state, **loader))
        else:
            b.add(gpu_s, _with(compute, worker_state=worker_state, **loader))
        if d2h_s:
            fetching = Activity(d2h=self.copy_rate, memory=0.05, main_cpu=100.0, main_state="R")
            b.add(d2h_s, _with(fetching, worker_state=worker_state, **loader))

    def _inline_load(self, b: TimelineBuilder, rng: random.Random) -> None:
        """num_workers=0: the main process reads and decodes the batch between steps."""
        if self.storage_s:
            b.add(
                _jitter(rng, self.storage_s, self.jitter),
                Activity(main_cpu=6.0, main_state="D", iowait=100.0 / self.cores),
            )
        if self.batch_cpu_s:
            b.add(
                _jitter(rng, self.batch_cpu_s, self.jitter),
                Activity(main_cpu=99.0, main_state="R"),
            )

    def run(self, b: TimelineBuilder, rng: random.Random, until_s: float) -> None:
        """Steps until the builder's clock reaches ``until_s``."""
        while b.now < until_s:
            self.step(b, rng)


def _with(activity: Activity, **changes: Any) -> Activity:
    """``activity`` with some fields replaced."""
    return replace(activity, **changes)


def steady(
    b: TimelineBuilder,
    rng: random.Random,
    until_s: float,
    activity: Activity,
    wander: float = 0.04,
    hold_s: tuple[float, float] = (0.5, 3.0),
) -> None:
    """A level with slow, small wander (kernels issued back to back: no gaps)."""
    while b.now < until_s:
        k = min(1.0, max(0.0, activity.kernel * (1.0 + rng.gauss(0.0, wander))))
        share = k / activity.kernel if activity.kernel else 1.0
        b.add(
            rng.uniform(*hold_s),
            _with(
                activity,
                kernel=k,
                memory=min(1.0, activity.memory * share),
                power=activity.power * share,
                main_cpu=min(100.0, activity.main_cpu * (1.0 + rng.gauss(0.0, wander / 2))),
            ),
        )


def pause(b: TimelineBuilder, seconds: float, activity: Activity = IDLE) -> None:
    """A stretch with no kernels: a checkpoint write, a dataset scan, a stall."""
    b.add(seconds, activity)


@dataclass(frozen=True, slots=True)
class Server:
    """An inference server under bursty load: continuous batching, idle between bursts.

    While requests are in flight the engine loop runs decode steps back to back
    (memory-bound: every step reads the weights and the KV cache), so the GPU is
    busy with a kernel share that rises with the batch; between bursts it runs
    nothing and the process's CPU drops to its event loop's few percent.
    """

    busy_s: float = 20.0
    """Mean length of a burst of requests."""
    idle_s: float = 40.0
    """Mean idle stretch between bursts."""
    peak_kernel: float = 0.9
    power: float = 0.55
    memory: float = 0.8
    main_cpu_busy: float = 95.0
    main_cpu_idle: float = 2.0
    worker_cpu_busy: float = 0.0
    """CPU of each child (tokenizer, engine core) while serving."""

    def run(self, b: TimelineBuilder, rng: random.Random, until_s: float) -> None:
        while b.now < until_s:
            b.add(
                rng.expovariate(1.0 / self.idle_s),
                Activity(main_cpu=self.main_cpu_idle, worker_cpu=0.5),
            )
            burst_end = b.now + rng.expovariate(1.0 / self.busy_s)
            while b.now < burst_end and b.now < until_s:
                load = rng.uniform(0.25, 1.0)
                k = self.peak_kernel * load
                b.add(
                    rng.uniform(0.3, 2.0),
                    Activity(
                        kernel=k,
                        memory=self.memory * k,
                        power=self.power * k,
                        h2d=rng.uniform(2e6, 2e7),
                        d2h=rng.uniform(1e6, 1e7),
                        main_cpu=self.main_cpu_busy,
                        main_state="R",
                        worker_cpu=self.worker_cpu_busy,
                        worker_state="R" if self.worker_cpu_busy > 50 else "S",
                    ),
                )


SPIN = Activity(kernel=1.0, memory=0.01, power=0.05, main_cpu=100.0, main_state="R")
"""A rank inside an all-reduce whose peers have not arrived: NCCL's kernel spins."""


def lockstep(
    builders: list[TimelineBuilder],
    rng: random.Random,
    until_s: float,
    loops: list[TrainLoop],
    allreduce_s: float = 0.04,
) -> None:
    """Data-parallel ranks: each runs its own step, then all meet in an all-reduce.

    A rank that finishes first waits inside NCCL's kernel (busy at low power) for
    the slowest; the slowest rank never waits. Every rank ends each step together.
    """
    while builders[0].now < until_s:
        start = builders[0].now
        for b, loop in zip(builders, loops, strict=False):
            loop.step(b, rng)
        slowest = max(b.now for b in builders)
        for b in builders:
            b.add(slowest - b.now, SPIN)
            b.add(allreduce_s, Activity(kernel=1.0, memory=0.4, power=0.3, main_cpu=100.0))
        assert all(abs(b.now - builders[0].now) < 1e-9 for b in builders), start
