"""The lab's training loop: a real input pipeline feeding a modelled GPU step.

Run as a child process (``python -m pipelab.trainer CONFIG_JSON``). What is real:

* the dataset: sample files on disk (uint8 images, written by :func:`make_dataset`),
  each read with ``open().read()`` for every sample, every epoch;
* the per-sample CPU work: decode (bytes -> float32), a random crop and flip, a
  normalisation and ``cpu_reps`` rounds of a 3-tap blur -- pure Python, on this CPU;
* the DataLoader shape: with ``num_workers=0`` the main process loads each batch itself;
  otherwise ``num_workers`` ``multiprocessing`` worker processes (fork, as
  torch.utils.data on Linux) each build whole batches from an index queue, with
  ``prefetch`` batches in flight per worker, and send them back pickled;
* the launch cost: each step the main process spends ``kernels x launch_us`` of real
  CPU launching kernels, then spin-waits for the step to finish (CUDA's default
  synchronisation spins when there are few contexts per core).

What is modelled: the GPU. A step keeps it busy for ``kernels x kernel_us +
batch x gpu_us_per_sample`` from its first launch (so a small batch is launch-bound:
the launches take longer than the kernels), holds ``vram_base + batch x
vram_per_sample`` bytes and copies the batch's bytes over PCIe. Each busy interval is
written to the :class:`~pipelab.board.Board` when it is launched.
"""

from __future__ import annotations

import json
import mmap
import multiprocessing as mp
import os
import queue
import random
import sys
import time
from array import array
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipelab.board import (
    COPY_FROM,
    COPY_RATE,
    COPY_TO,
    DONE,
    EPOCH,
    PCIE_BYTES,
    READY,
    SAMPLES,
    STEPS,
    VRAM,
    Board,
    GpuQueue,
)

SIDE = 48
"""Samples are SIDE x SIDE x 3 uint8 images; the model sees CROP x CROP crops."""
CROP = 40
MIB = 1024**2
CLOSE_S = 3.0
"""The most a loader takes to stop its workers (then they are killed)."""

Batch = list["array[float]"]


@dataclass(frozen=True)
class Config:
    """One configuration of the training program (a scenario)."""

    data_dir: str
    board: str
    num_workers: int = 0
    batch_size: int = 32
    cpu_reps: int = 2
    """Rounds of the blur per sample: the knob for the per-sample CPU cost."""
    duration_s: float = 10.0
    kernels: int = 50
    """Launches per step. With ``launch_us`` these are launch *groups* at the lab's time
    scale: 50 x 1 ms of host-side launch work per step (eager PyTorch's per-op Python
    and dispatch overhead over a model's ~1000s of ops), so a small batch is
    launch-bound in a run of seconds."""
    launch_us: float = 1000.0
    kernel_us: float = 100.0
    gpu_us_per_sample: float = 8000.0
    vram_base: int = 15 * 1024 * MIB
    """Weights, gradients and optimizer state (fixed), then activations per sample."""
    vram_per_sample: int = 256 * MIB
    prefetch: int = 2
    pin_memory: bool = False
    """Pageable batches are copied synchronously, staged by a CPU memcpy (main-thread CPU
    at ``pageable_gbps``); pinned ones by DMA at ``pinned_gbps``, overlapping the step."""
    h2d_mib_per_sample: float = 0.0
    """Bytes a sample takes on the GPU (0: the real decoded sample's, ~6 KiB)."""
    pageable_gbps: float = 11.0
    """~35 % of a Gen4 x16 link (CUDA Best Practices, "Pinned Memory"), pinned ~80 %."""
    pinned_gbps: float = 25.0
    blocking_sync: bool = False
    """Wait for a step by sleeping (``cudaDeviceScheduleBlockingSync``) instead of spinning."""
    sync_item: bool = False
    """Read the step's loss as a Python number every step (``loss_value = loss.item()``):
    the host waits in :meth:`Loss.item` until the GPU's queued work is done."""
    sample_mib: float = 0.0
    """Each sample file's size on disk (0: the 48x48x3 image alone). The image is at the
    start of the file; the rest is the payload a real loader also reads (full-resolution
    data), and the loader reads all of it."""
    direct_io: bool = False
    """Read samples with ``O_DIRECT``: past the page cache, from the disk every time, as
    for a dataset larger than RAM (real reads; the loader waits for them in D state)."""
    gpu_queue: str = ""
    """A :class:`~pipelab.board.GpuQueue` file when the GPU is shared with another program
    (its steps then queue behind the other's); empty: the GPU is this program's alone."""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Config:
        return cls(**json.loads(text))


def make_dataset(directory: Path, samples: int, seed: int = 0, sample_mib: float = 0.0) -> None:
    """Write ``samples`` raw image files into ``directory`` (each ``sample_mib`` long when
    set: the image, then a payload)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    pad = max(0, int(sample_mib * MIB) - SIDE * SIDE * 3)
    for i in range(samples):
        with open(directory / f"{i:05d}.raw", "wb") as f:
            f.write(rng.randbytes(SIDE * SIDE * 3))
            for _ in range(pad // MIB):
                f.write(bytes(MIB))
            f.write(bytes(pad % MIB))
    if pad:
        os.sync()  # on the disk, so that O_DIRECT reads come from it


_BUFFERS: dict[int, mmap.mmap] = {}


def read_large(path: str, direct: bool) -> bytes:
    """A large sample: the whole file read into a reused page-aligned buffer -- with
    ``O_DIRECT`` from the disk (which needs the alignment), else from the page cache --
    and its image's bytes."""
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
    try:
        size = -(-os.fstat(fd).st_size // 4096) * 4096
        buf = _BUFFERS.get(size)
        if buf is None:
            buf = _BUFFERS[size] = mmap.mmap(-1, size)
        os.readv(fd, [buf])  # the whole file (with O_DIRECT: the disk's time, in D state)
        return bytes(buf[: SIDE * SIDE * 3])
    finally:
        os.close(fd)


def load_sample(
    path: str, reps: int, rng: random.Random, large: bool = False, direct: bool = False
) -> array[float]:
    """Read one sample from disk and decode / augment it (real CPU work, pure Python)."""
    if large:
        raw = read_large(path, direct)
    else:
        with open(path, "rb") as f:
            raw = f.read()
    y, x = rng.randrange(SIDE - CROP + 1), rng.randrange(SIDE - CROP + 1)
    row = SIDE * 3
    flip = rng.random() < 0.5
    out: list[float] = []
    for r in range(y, y + CROP):  # crop (and flip), decode to floats, normalise
        line = raw[r * row + x * 3 : r * row + (x + CROP) * 3]
        if flip:
            line = bytes(line[k * 3 + c] for k in range(CROP - 1, -1, -1) for c in range(3))
        out.extend((v - 127.5) / 64.0 for v in line)
    n = len(out)
    for _ in range(reps):  # a 3-tap blur along the flattened image: the augmentation cost
        out = [(out[i - 1] + out[i] + out[(i + 1) % n]) / 3.0 for i in range(n)]
    return array("f", out)


REFERENCE_ROUND_MS = 0.36
"""One blur round per sample on the 2-core host the scenarios were tuned on (each sample
also costs ~0.45 ms to read, decode and crop). :func:`round_ms` measures this host's."""


def round_ms(files: list[str], reps: int = 8, tries: int = 3) -> float:
    """This host's CPU time for one blur round of one sample (ms): the best of ``tries``
    passes over ``files`` with ``reps`` rounds less one with none. The lab scales
    ``cpu_reps`` by REFERENCE_ROUND_MS / this, so that a scenario's augmentation costs
    the same against the modelled GPU step on a slower or faster CPU."""
    rng = random.Random(0)

    def best(n: int) -> float:
        times = []
        for _ in range(tries):
            start = time.thread_time()
            for path in files:
                load_sample(path, n, rng)
            times.append(time.thread_time() - start)
        return min(times)

    per_round = (best(reps) - best(0)) / (reps * len(files))
    return max(per_round * 1000.0, 1e-3)


def load_batch(
    files: list[str],
    indices: list[int],
    reps: int,
    rng: random.Random,
    large: bool = False,
    direct: bool = False,
) -> Batch:
    return [load_sample(files[i], reps, rng, large, direct) for i in indices]


def batch_bytes(batch: Batch) -> int:
    return sum(len(a) * a.itemsize for a in batch)


def _worker(
    files: list[str],
    reps: int,
    seed: int,
    tasks: Any,
    results: Any,
    large: bool = False,
    direct: bool = False,
) -> None:  # pragma: no cover - runs in a worker process
    rng = random.Random(seed)
    while True:
        task = tasks.get()
        if task is None:
            return
        number, indices = task
        results.put((number, load_batch(files, indices, reps, rng, large, direct)))


class Loader:
    """A DataLoader-like iterator over batches (in order), with or without workers."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.files = sorted(str(p) for p in Path(cfg.data_dir).iterdir())
        self.rng = random.Random(1)
        self._next_task = 0
        self._next_out = 0
        self._ready: dict[int, Batch] = {}
        self._workers: list[Any] = []
        if cfg.num_workers > 0:
            ctx = mp.get_context("fork")
            self._tasks: Any = ctx.Queue()
            self._results: Any = ctx.Queue()
            for w in range(cfg.num_workers):
                p = ctx.Process(
                    target=_worker,
                    args=(
                        self.files,
                        cfg.cpu_reps,
                        100 + w,
                        self._tasks,
                        self._results,
                        cfg.sample_mib > 0,
                        cfg.direct_io,
                    ),
                    daemon=True,
                    name=f"pt_data_worker_{w}",
                )
                p.start()
                self._workers.append(p)
            for _ in range(cfg.num_workers * cfg.prefetch):
                self._submit()

    def _indices(self, number: int) -> list[int]:
        n, b = len(self.files), self.cfg.batch_size
        return [(number * b + k) % n for k in range(b)]

    def _submit(self) -> None:
        self._tasks.put((self._next_task, self._indices(self._next_task)))
        self._next_task += 1

    def next_batch(self) -> Batch:
        number = self._next_out
        self._next_out += 1
        if not self._workers:
            return load_batch(
                self.files,
                self._indices(number),
                self.cfg.cpu_reps,
                self.rng,
                self.cfg.sample_mib > 0,
                self.cfg.direct_io,
            )
        while number not in self._ready:
            try:
                got, batch = self._results.get(timeout=1.0)
            except queue.Empty:
                dead = [p.name for p in self._workers if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"data loader worker(s) exited: {dead}") from None
                continue
            self._ready[got] = batch
        self._submit()
        return self._ready.pop(number)

    def close(self) -> None:
        """Stop the workers within :data:`CLOSE_S`; never block on a queue.

        The hang this replaces: the main process stopped reading ``results``, so a
        worker's queue feeder thread sat in the middle of writing a pickled batch
        (~200 KB) into the 64 KB pipe, and the worker could not exit (a process joins
        its queues' feeder threads at exit). ``join(timeout)`` then killed it mid-write,
        and draining ``results`` afterwards read the half message's length header and
        blocked forever on bytes that would never come. So: send the sentinels, keep
        reading ``results`` (with a timeout) while any worker is alive so their writes
        can finish, kill what is left at the deadline, and read nothing after a kill.
        """
        if not self._workers:
            return
        for _ in self._workers:
            self._tasks.put(None)
        deadline = time.monotonic() + CLOSE_S
        while any(p.is_alive() for p in self._workers) and time.monotonic() < deadline:
            with suppress(queue.Empty):
                self._results.get(timeout=0.05)
        for p in self._workers:
            if p.is_alive():
                p.kill()
            p.join(timeout=1)
        for q in (self._tasks, self._results):
            q.cancel_join_thread()  # our own unflushed puts must not hold up exit
            q.close()
        self._workers = []


def spin_until(deadline: float) -> None:
    """Busy-wait (real CPU) until ``deadline``: a kernel launch, or CUDA's spinning sync."""
    while time.time() < deadline:
        pass


def spin_cpu(seconds: float) -> None:
    """Burn ``seconds`` of this thread's CPU time: launching kernels is host work, so a
    launcher descheduled on a contended core launches late."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class Model:
    """The model as its step's host work sees it: ``forward`` issues the step's kernels
    from Python (in PyTorch, under ``nn.Module.forward`` and autograd's ``backward``),
    which is host CPU time per kernel."""

    def forward(self, launch_s: float) -> None:
        spin_cpu(launch_s)  # launching the step's kernels


class Pageable:
    """A batch in pageable host memory: ``.to(device)`` has the CPU stage it into a
    pinned buffer before the DMA, so the copy is the calling thread's own time (what
    PyTorch's ``Tensor.to`` does for a non-pinned tensor)."""

    def __init__(self, batch: Batch) -> None:
        self.batch = batch

    def to(self, device: str, copy_s: float) -> Batch:
        end = time.thread_time() + copy_s
        while time.thread_time() < end:  # staging the pages
            pass
        return self.batch


class Loss:
    """A tensor-like loss on the simulated GPU: ready once the work queued before it
    is (``ready_at``, the step's end)."""

    def __init__(self, value: float, ready_at: float) -> None:
        self.value, self.ready_at = value, ready_at

    def item(self) -> float:
        """The loss as a Python number. Like CUDA's ``Tensor.item()``: the host blocks
        until the device queue has drained (spinning, CUDA's default sync), then copies
        the value back."""
        while time.time() < self.ready_at:
            pass
        return self.value


def _shared_step(
    gpu: GpuQueue, board: Board, model: Model, gpu_s: float, launch_s: float, kernel_tail_s: float
) -> float:
    """One step on a GPU shared with other programs; when it is done. Its work starts
    when the GPU is free of theirs; launches that outlast it queue a last kernel."""
    submitted = time.time()
    start = gpu.take(submitted, gpu_s)
    board.add_busy(start, start + gpu_s)
    model.forward(launch_s)
    done = start + gpu_s
    if time.time() - submitted > gpu_s:  # the kernels waited for their launches
        tail = gpu.take(time.time(), kernel_tail_s)
        board.add_busy(tail, tail + kernel_tail_s)
        done = max(done, tail + kernel_tail_s)
    return done


def train(cfg: Config) -> None:
    board = Board.attach(Path(cfg.board))
    gpu = GpuQueue(Path(cfg.gpu_queue)) if cfg.gpu_queue else None
    loader = Loader(cfg)
    model = Model()
    device = "cuda:0"
    try:
        board.slots[VRAM] = cfg.vram_base + cfg.batch_size * cfg.vram_per_sample
        board.slots[READY] = 1.0
        end = float(board.slots[EPOCH]) + cfg.duration_s
        gpu_s = (cfg.kernels * cfg.kernel_us + cfg.batch_size * cfg.gpu_us_per_sample) / 1e6
        launch_s = cfg.kernels * cfg.launch_us / 1e6
        kernel_tail_s = cfg.kernel_us / 1e6  # the last kernel runs after its launch
        running_loss = 0.0
        while time.time() < end:
            batch = loader.next_batch()
            copied = cfg.h2d_mib_per_sample * MIB * len(batch) or batch_bytes(batch)
            board.slots[PCIE_BYTES] += copied
            rate = (cfg.pinned_gbps if cfg.pin_memory else cfg.pageable_gbps) * 1e9
            copy_s = copied / rate
            now = time.time()
            board.slots[COPY_RATE] = rate
            board.slots[COPY_FROM], board.slots[COPY_TO] = now, now + copy_s
            if not cfg.pin_memory:  # .to(device) from pageable memory: the CPU stages it
                batch = Pageable(batch).to(device, copy_s)
                board.slots[COPY_TO] = time.time()
            start = time.time()
            if gpu is None:
                board.add_busy(start, start + gpu_s)  # queued work: busy from its first launch
                model.forward(launch_s)
                if time.time() - start > gpu_s:  # the kernels waited for their launches
                    board.add_busy(start + gpu_s, start + gpu_s + kernel_tail_s)
                done = max(start + gpu_s, time.time() + kernel_tail_s)
            else:  # a shared GPU: the step runs after what the other programs queued
                done = _shared_step(gpu, board, model, gpu_s, launch_s, kernel_tail_s)
            if cfg.pin_memory:  # the DMA overlaps the step; the next one waits for it
                done = max(done, now + copy_s)
            if cfg.blocking_sync:
                time.sleep(max(0.0, done - time.time()))
            elif cfg.sync_item:
                loss = Loss(1.0 / (1 + board.slots[STEPS]), done)
                loss_value = loss.item()
                running_loss += loss_value
            else:
                spin_until(done)  # the step's end: CUDA's spinning sync (queue depth one step)
            board.slots[STEPS] += 1
            board.slots[SAMPLES] += len(batch)
    finally:
        loader.close()
        board.slots[DONE] = 1.0
        board.close()
        if gpu is not None:
            gpu.close()


def main(argv: list[str]) -> int:
    train(Config.from_json(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
