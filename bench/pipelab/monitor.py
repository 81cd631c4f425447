"""The lab's monitor side: a fake NVML fed from the trainer's board, the real monitor on it.

Each tick the :class:`FakeGpu` takes what the trainer recorded since the last one: the
completed 1/6 s busy bins become the driver's sample buffer (``nvmlDeviceGetSamples``),
their mean over the last second the device and per-process utilization, the held bytes
its VRAM and the consumer's, the copied bytes its PCIe rx rate, the utilization its
power. Then the project's :class:`LiveSource` takes a tick as the monitor does -- with
the real ``/proc`` view of the real trainer and its worker processes -- and a
:class:`Diagnoser` with the default thresholds judges it. Nothing here knows what the
scenario is meant to show.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from signal import SIGKILL

import psutil

from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.hints.findings import Finding
from gputop_hints.sources.live.source import LiveSource
from pipelab.board import DONE, EPOCH, READY, SAMPLE_S, STEPS, VRAM, Board
from pipelab.trainer import CLOSE_S, Config, make_dataset
from tests.support.fake_nvml import GIB, FakeGpu, FakeNvml, FakeProc

BENCH = Path(__file__).resolve().parents[1]
REPO = BENCH.parent
CONTEXT_BYTES = GIB // 2
"""What a CUDA context holds before the program allocates anything."""
IDLE_MW, BUSY_MW = 90_000, 650_000
START_TIMEOUT_S = 20.0
END_GRACE_S = 3.0
HOST_PROBE_S = 0.5
"""Past its duration and its loader's close, a trainer that has not finished is a failure."""
LAB_JOB_ID = "4242"
"""The SLURM job id a run "as a job" gets: only ``SLURM_JOB_ID`` in the trainer's (and so its
workers') environment and in the monitor's ``environ`` -- no slurmd, no cgroup, no scontrol.
The monitor then finds the job's processes by their environment and its cores by its own
affinity (the trainer's too: nothing here narrows it), as it does on a node without
proctrack/cgroup."""
HOG_CODE = "while True: pass  # pipelab-hog"
"""A foreign CPU hog: a busy loop, started by the lab (not by the trainer), outside the job."""


@dataclass
class Tick:
    """What the monitor saw in one tick."""

    at_s: float
    """Seconds since the trainer's epoch."""
    sm: float
    findings: tuple[Finding, ...]
    cpu: float | None
    workers: int


@dataclass
class Run:
    """One run of the trainer under the monitor."""

    config: Config
    ticks: list[Tick] = field(default_factory=list)
    steps: int = 0
    busy: list[float] = field(default_factory=list)
    """Every 1/6 s bin's busy %, in order."""
    host_busy_before: float = 0.0
    """% of the host's CPU in use (by other work) over the half second before the run:
    on a 2-core host a neighbour using one core moves the verdicts (docs/lab.md)."""
    hogs: int = 0
    """Busy processes outside the trainer, pinned to its cores, during the run."""
    hog_cores: tuple[int, ...] = ()
    """The cores they were pinned to: the trainer's and its workers' affinity."""
    foreign: list[float] = field(default_factory=list)
    """Per tick, the job's cores used by processes outside it (%), when run as a job."""

    @property
    def final(self) -> tuple[Finding, ...]:
        """The findings visible at the last tick."""
        return self.ticks[-1].findings if self.ticks else ()

    @property
    def steady(self) -> tuple[Finding, ...]:
        """The findings at the last tick inside the configured duration (the loop's
        steady state; later ticks see the trainer shutting its loader down)."""
        inside = [t for t in self.ticks if t.at_s <= self.config.duration_s]
        return inside[-1].findings if inside else self.final

    def utilization(self, skip_s: float = 3.0) -> float:
        """The mean simulated utilization after the first ``skip_s`` (start-up)."""
        values = self.busy[int(skip_s / SAMPLE_S) :] or self.busy
        return sum(values) / len(values) if values else 0.0

    def raised(self) -> set[str]:
        """Every ``rule/subtype`` visible at any tick."""
        return {f.rule_label for t in self.ticks for f in t.findings}


class Lab:
    """The lab's dataset and workspace (a temp dir), shared by its runs."""

    def __init__(self, samples: int = 256) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="gputop-lab-")
        self.root = Path(self._tmp.name)
        self.data = self.root / "data"
        make_dataset(self.data, samples)
        self._runs = 0

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def config(self, **kwargs: object) -> Config:
        self._runs += 1
        board = self.root / f"board-{self._runs}"
        return Config(data_dir=str(self.data), board=str(board), **kwargs)  # type: ignore[arg-type]

    def run(
        self, config: Config, *, interval_s: float = 1.0, hogs: int = 0, job: bool = False
    ) -> Run:
        """Run the trainer under ``config`` for its duration, monitored; its findings.

        ``hogs``: that many busy processes outside the trainer, pinned to the cores its
        processes may use, from when it is ready to the end of the run. ``job``: run the
        trainer as SLURM job :data:`LAB_JOB_ID` (its environment only) and attach the
        monitor to it, so that the job's cores and the load on them from outside it are
        measured."""
        board = Board.create(Path(config.board))
        host_busy = psutil.cpu_percent(interval=HOST_PROBE_S)
        try:
            with _trainer(config, board, job) as proc:
                run = _monitor(config, board, proc, interval_s, hogs=hogs, job=job)
                run.host_busy_before = host_busy
                return run
        finally:
            board.close()


@contextmanager
def _trainer(
    config: Config, board: Board, job: bool = False
) -> Iterator[subprocess.Popen[bytes]]:
    """Start the trainer (and so its workers) in a session of its own; kill it all after."""
    env = dict(os.environ)
    env.pop("SLURM_JOB_ID", None)
    if job:
        env["SLURM_JOB_ID"] = LAB_JOB_ID
    env["PYTHONPATH"] = os.pathsep.join(
        [str(BENCH), str(REPO), *filter(None, [env.get("PYTHONPATH")])]
    )
    board.slots[EPOCH] = time.time()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelab.trainer", config.to_json()],
        env=env,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        yield proc
        proc.wait(timeout=CLOSE_S + 2)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, SIGKILL)  # the trainer and any worker left behind
        proc.wait()


@contextmanager
def _hogs(count: int, trainer: int) -> Iterator[tuple[int, ...]]:
    """``count`` busy processes (the lab's children, not the trainer's, in sessions of
    their own) pinned with ``sched_setaffinity`` to the cores the trainer and its workers
    may use; killed after. Yields those cores."""
    cores: set[int] = set()
    family = [psutil.Process(trainer)]
    with suppress(psutil.Error):
        family += family[0].children(recursive=True)
    for p in family:
        with suppress(psutil.Error):
            cores |= set(p.cpu_affinity())
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            hog = subprocess.Popen([sys.executable, "-c", HOG_CODE], start_new_session=True)
            hogs.append(hog)
            os.sched_setaffinity(hog.pid, cores)
        yield tuple(sorted(cores))
    finally:
        for hog in hogs:
            with suppress(ProcessLookupError):
                os.killpg(hog.pid, SIGKILL)
            hog.wait()


def _monitor(
    config: Config,
    board: Board,
    proc: subprocess.Popen[bytes],
    interval_s: float,
    *,
    hogs: int = 0,
    job: bool = False,
) -> Run:
    pid = proc.pid
    gpu = FakeGpu(0, vram_used=CONTEXT_BYTES, link_gen=4, max_link_gen=4)  # Gen4 x16 host
    consumer = FakeProc(pid, used_bytes=CONTEXT_BYTES, sm_util=0, mem_util=0)
    gpu.processes.append(consumer)
    run = Run(config, hogs=hogs)
    with FakeNvml([gpu]), ExitStack() as stack:
        if job:
            source = LiveSource(interval_s, environ={"SLURM_JOB_ID": LAB_JOB_ID})
        else:
            source = LiveSource(interval_s, detect_job=False)
        diagnoser = Diagnoser(interval_s=interval_s)
        try:
            deadline = time.time() + START_TIMEOUT_S
            while not board.slots[READY] and not board.slots[DONE]:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("the lab's trainer did not start")
                time.sleep(0.05)
            if hogs:
                run.hog_cores = stack.enter_context(_hogs(hogs, pid))
            feeder = _Feeder(board, gpu, consumer)
            next_tick = time.time()
            end = board.slots[EPOCH] + config.duration_s + CLOSE_S + END_GRACE_S
            while not board.slots[DONE]:
                if proc.poll() is not None:
                    raise RuntimeError(f"the lab's trainer died (exit {proc.returncode})")
                if time.time() > end:
                    raise RuntimeError("the lab's trainer did not finish in time")
                next_tick += interval_s
                time.sleep(max(0.0, next_tick - time.time()))
                feeder.update(time.time())
                snap = source.sample()
                findings = tuple(
                    f for f in diagnoser.feed(snap) if f.subject.pid in (pid, None)
                )
                row = next((p for p in snap.processes if p.pid == pid), None)
                if snap.job is not None and snap.job.foreign_cpu_percent is not None:
                    run.foreign.append(snap.job.foreign_cpu_percent)
                run.ticks.append(
                    Tick(
                        at_s=time.time() - board.slots[EPOCH],
                        sm=float(gpu.sm),
                        findings=findings,
                        cpu=None if row is None else row.cpu_percent,
                        workers=0 if row is None else len(row.workers),
                    )
                )
            run.busy = feeder.busy
            run.steps = int(board.slots[STEPS])
        finally:
            source.close()
    return run


class _Feeder:
    """Moves what the board holds into the fake GPU, one tick at a time."""

    def __init__(self, board: Board, gpu: FakeGpu, consumer: FakeProc) -> None:
        self.board, self.gpu, self.consumer = board, gpu, consumer
        self.next_bin = 0
        self.busy: list[float] = []

    def update(self, now: float) -> None:
        b, gpu = self.board, self.gpu
        fresh: list[float] = []
        while b.bin_end(self.next_bin) <= now:
            value = b.busy_percent(self.next_bin)
            gpu.sm_sample_buffer.append((int(b.bin_end(self.next_bin) * 1e6), round(value)))
            fresh.append(value)
            self.next_bin += 1
        self.busy.extend(fresh)
        last_s = self.busy[-6:]
        sm = round(sum(last_s) / len(last_s)) if last_s else 0
        held = int(b.slots[VRAM])
        gpu.sm, gpu.mem = sm, round(sm * 0.4)
        gpu.power_mw = IDLE_MW + (BUSY_MW - IDLE_MW) * sm // 100
        gpu.vram_used = CONTEXT_BYTES + held
        self.consumer.used_bytes = CONTEXT_BYTES + held
        self.consumer.sm_util, self.consumer.mem_util = sm, round(sm * 0.4)
        gpu.pcie_rx_kib = int(b.copy_rate_at(now) / 1024)  # NVML: a ~20 ms reading
        del gpu.sm_sample_buffer[:-120]  # the driver's ring holds the last ~20 s


def verdict(findings: tuple[Finding, ...]) -> Finding | None:
    """The worst finding (what the process row's hint column shows)."""
    return max(findings, key=lambda f: f.severity, default=None)


__all__ = ["Lab", "Run", "Tick", "replace", "verdict"]
