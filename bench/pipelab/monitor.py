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

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from signal import SIGKILL
from typing import Any

import psutil

from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.hints.findings import Finding
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.stacks import StackReading, classify, sample
from pipelab.board import DONE, EPOCH, READY, SAMPLE_S, STEPS, VRAM, Board, GpuQueue
from pipelab.trainer import CLOSE_S, REFERENCE_ROUND_MS, Config, make_dataset, round_ms
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
LARGE_SAMPLES = 16
"""Files in a dataset of large samples (``sample_mib``): 16 x 32 MiB is 512 MiB on disk."""
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
    device_busy: list[float] = field(default_factory=list)
    """Every bin's device busy % (``busy`` is this program's own share of it)."""
    tenant: Run | None = None
    """The second program on the same GPU, when there was one."""
    cli: dict[str, Any] | None = None
    """With ``cli=True``: the JSON document ``gputop-hints --once --json`` printed,
    run in this process (the fake NVML is in-process) over the run's steady part."""
    stacks: StackReading | None = None
    """With ``stacks=True``: where the trainer's main thread waited, read with py-spy
    (``gputop_hints.stacks.sample``) over the :data:`STACK_SAMPLES` samples before the
    end of the run's duration, its workers with it."""

    def cli_verdict(self) -> str | None:
        """``rule/subtype`` of the worst warning-or-worse finding ``--once --json`` gave on
        this program's pid (None: none, or no CLI run)."""
        if self.cli is None:
            return None
        pid = self.cli.get("_pid")
        rank = {"info": 0, "warning": 1, "critical": 2}
        mine = [
            f
            for f in self.cli.get("findings", [])
            if f["subject"].get("pid") == pid and rank.get(f["severity"], 0) >= 1
        ]
        if not mine:
            return None
        worst = max(mine, key=lambda f: rank.get(f["severity"], 0))
        return str(worst["rule"]) + (f"/{worst['subtype']}" if worst.get("subtype") else "")

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
        """The mean simulated utilization (this program's own) after the first ``skip_s``
        (start-up)."""
        values = self.busy[int(skip_s / SAMPLE_S) :] or self.busy
        return sum(values) / len(values) if values else 0.0

    def raised(self) -> set[str]:
        """Every ``rule/subtype`` visible at any tick."""
        return {f.rule_label for t in self.ticks for f in t.findings}


CALIBRATION_SAMPLES = 12
"""Samples timed to calibrate the augmentation's cost on this host (about 0.5 s)."""


class Lab:
    """The lab's dataset and workspace (a temp dir), shared by its runs."""

    def __init__(self, samples: int = 256) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="gputop-lab-")
        self.root = Path(self._tmp.name)
        self.data = self.root / "data"
        make_dataset(self.data, samples)
        self._runs = 0
        files = sorted(str(p) for p in self.data.iterdir())[:CALIBRATION_SAMPLES]
        self.reps_scale = REFERENCE_ROUND_MS / round_ms(files)
        """Scenarios' ``cpu_reps`` are rounds on the host they were tuned on; this host
        runs ``reps_scale`` times as many in the same time (under 1: a slower CPU)."""

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def config(self, **kwargs: object) -> Config:
        self._runs += 1
        board = self.root / f"board-{self._runs}"
        data = self.data
        mib = float(kwargs.get("sample_mib", 0) or 0)  # type: ignore[arg-type]
        if mib:  # large samples: a smaller dataset of its own, written once
            data = self.root / f"data-{mib:g}mib"
            if not data.exists():
                make_dataset(data, LARGE_SAMPLES, sample_mib=mib)
        if reps := kwargs.get("cpu_reps"):
            kwargs["cpu_reps"] = max(1, round(float(reps) * self.reps_scale))  # type: ignore[arg-type]
        return Config(data_dir=str(data), board=str(board), **kwargs)  # type: ignore[arg-type]

    def run(
        self,
        config: Config,
        *,
        interval_s: float = 1.0,
        hogs: int = 0,
        job: bool = False,
        tenant: Config | None = None,
        cli: bool = False,
        stacks: bool = False,
    ) -> Run:
        """Run the trainer under ``config`` for its duration, monitored; its findings.

        ``hogs``: that many busy processes outside the trainer, pinned to the cores its
        processes may use, from when it is ready to the end of the run. ``job``: run the
        trainer as SLURM job :data:`LAB_JOB_ID` (its environment only) and attach the
        monitor to it, so that the job's cores and the load on them from outside it are
        measured. ``tenant``: a second trainer, started at the same time, sharing the one
        simulated GPU (a :class:`~pipelab.board.GpuQueue`); its run is ``Run.tenant``.
        ``cli``: the real command line, ``gputop-hints --once --json``, watches too
        (``Run.cli``), from the third second to the end of the configured duration.
        ``stacks``: the trainer's stacks are sampled near the end of the run (``Run.stacks``)."""
        configs = [config] if tenant is None else [config, tenant]
        if tenant is not None:
            self._runs += 1
            queue = GpuQueue.create(self.root / f"gpu-{self._runs}")
            queue.close()
            configs = [replace(c, gpu_queue=str(queue.path)) for c in configs]
        boards = [Board.create(Path(c.board)) for c in configs]
        host_busy = psutil.cpu_percent(interval=HOST_PROBE_S)
        epoch = time.time()
        try:
            with ExitStack() as stack:
                programs = [
                    (c, b, stack.enter_context(_trainer(c, b, job, epoch)))
                    for c, b in zip(configs, boards, strict=True)
                ]
                runs = _monitor(programs, interval_s, hogs=hogs, job=job, cli=cli, stacks=stacks)
            for run in runs:
                run.host_busy_before = host_busy
            if len(runs) > 1:
                runs[0].tenant = runs[1]
            return runs[0]
        finally:
            for board in boards:
                board.close()


@contextmanager
def _trainer(
    config: Config,
    board: Board,
    job: bool = False,
    epoch: float | None = None,
    *,
    wait: bool = True,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start the trainer (and so its workers) in a session of its own; kill it all after
    (with ``wait``, once it has had time to finish on its own)."""
    env = dict(os.environ)
    env.pop("SLURM_JOB_ID", None)
    if job:
        env["SLURM_JOB_ID"] = LAB_JOB_ID
    env["PYTHONPATH"] = os.pathsep.join(
        [str(BENCH), str(REPO), *filter(None, [env.get("PYTHONPATH")])]
    )
    board.slots[EPOCH] = time.time() if epoch is None else epoch
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelab.trainer", config.to_json()],
        env=env,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        yield proc
        if wait:
            proc.wait(timeout=CLOSE_S + 2)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, SIGKILL)  # the trainer and any worker left behind
        proc.wait()


@dataclass(frozen=True)
class Started:
    """A trainer running on its own, for a monitor outside the lab's process to watch
    (bench/pipelab/watch.py in a terminal)."""

    board: Path
    pid: int
    proc: subprocess.Popen[bytes]


@contextmanager
def start_trainer(config: Config) -> Iterator[Started]:
    """Start the trainer under ``config`` and wait until its loop runs; no monitor here.
    On leaving, the trainer and every process it started are killed (finished or not)."""
    board = Board.create(Path(config.board))
    try:
        with _trainer(config, board, wait=False) as proc:
            deadline = time.time() + START_TIMEOUT_S
            while not board.slots[READY] and not board.slots[DONE]:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("the lab's trainer did not start")
                time.sleep(0.05)
            yield Started(Path(config.board), proc.pid, proc)
    finally:
        board.close()


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


def lab_gpu(pids: list[int]) -> tuple[FakeGpu, list[FakeProc]]:
    """The lab's simulated GPU (on a Gen4 x16 host) listing ``pids`` as its consumers,
    each holding a CUDA context; what :class:`_Feeder` then moves the boards into."""
    gpu = FakeGpu(0, vram_used=CONTEXT_BYTES, link_gen=4, max_link_gen=4)
    consumers = [FakeProc(pid, used_bytes=CONTEXT_BYTES, sm_util=0, mem_util=0) for pid in pids]
    gpu.processes.extend(consumers)
    return gpu, consumers


def _monitor(
    programs: list[tuple[Config, Board, subprocess.Popen[bytes]]],
    interval_s: float,
    *,
    hogs: int = 0,
    job: bool = False,
    cli: bool = False,
    stacks: bool = False,
) -> list[Run]:
    """Watch the programs (the first, and any tenant sharing its GPU) until they finish;
    one :class:`Run` each, with the findings on its own pid."""
    stack_reader: _StackReader | None = None
    gpu, consumers = lab_gpu([proc.pid for _, _, proc in programs])
    runs = [Run(config, hogs=hogs) for config, _, _ in programs]
    first_board = programs[0][1]
    with FakeNvml([gpu]), ExitStack() as stack:
        if job:
            source = LiveSource(interval_s, environ={"SLURM_JOB_ID": LAB_JOB_ID})
        else:
            source = LiveSource(interval_s, detect_job=False)
        diagnoser = Diagnoser(interval_s=interval_s)
        try:
            deadline = time.time() + START_TIMEOUT_S
            for _, board, proc in programs:
                while not board.slots[READY] and not board.slots[DONE]:
                    if time.time() > deadline or proc.poll() is not None:
                        raise RuntimeError("the lab's trainer did not start")
                    time.sleep(0.05)
            if hogs:
                cores = stack.enter_context(_hogs(hogs, programs[0][2].pid))
                for run in runs:
                    run.hog_cores = cores
            feeder = _Feeder([board for _, board, _ in programs], gpu, consumers)
            next_tick = time.time()
            duration = max(config.duration_s for config, _, _ in programs)
            watcher = None
            if cli:
                start_s = CLI_START_S - (time.time() - first_board.slots[EPOCH])
                watcher = _CliWatch(max(0.0, start_s), duration - CLI_START_S, interval_s)
            end = first_board.slots[EPOCH] + duration + CLOSE_S + END_GRACE_S
            stacks_given = False
            while not all(board.slots[DONE] for _, board, _ in programs):
                for _, board, proc in programs:
                    if proc.poll() is not None and not board.slots[DONE]:
                        raise RuntimeError(f"the lab's trainer died (exit {proc.returncode})")
                if time.time() > end:
                    raise RuntimeError("the lab's trainer did not finish in time")
                next_tick += interval_s
                time.sleep(max(0.0, next_tick - time.time()))
                feeder.update(time.time())
                snap = source.sample()
                if stack_reader is not None and not stacks_given and stack_reader.done():
                    # As the live monitor does with a reading it took: the rules see it
                    # from this tick on (host-device-sync, and evidence on the others).
                    reading = stack_reader.result()
                    if reading is not None:
                        diagnoser.engine.set_stacks(reading, snap.timestamp)
                    stacks_given = True
                fed = diagnoser.feed(snap)
                at_s = time.time() - first_board.slots[EPOCH]
                if stacks and stack_reader is None and at_s >= duration - STACK_LEAD_S:
                    stack_reader = _StackReader(programs[0][2].pid)

                foreign = None if snap.job is None else snap.job.foreign_cpu_percent
                for run, consumer in zip(runs, consumers, strict=True):
                    pid = consumer.pid
                    row = next((p for p in snap.processes if p.pid == pid), None)
                    if foreign is not None:
                        run.foreign.append(foreign)
                    run.ticks.append(
                        Tick(
                            at_s=at_s,
                            sm=float(consumer.sm_util or 0),
                            findings=tuple(f for f in fed if f.subject.pid in (pid, None)),
                            cpu=None if row is None else row.cpu_percent,
                            workers=0 if row is None else len(row.workers),
                        )
                    )
            if stack_reader is not None:
                runs[0].stacks = stack_reader.result()
            if watcher is not None:
                doc = watcher.result()
                for run, consumer in zip(runs, consumers, strict=True):
                    run.cli = {**doc, "_pid": consumer.pid}
            for run, own, (_, board, _) in zip(runs, feeder.own, programs, strict=True):
                run.busy = own
                run.device_busy = feeder.busy
                run.steps = int(board.slots[STEPS])
        finally:
            source.close()
    return runs


STACK_SAMPLES = 12
STACK_PERIOD_S = 0.2
STACK_LEAD_S = 3.5
"""The trainer's stacks are read over its last seconds: 12 samples 0.2 s apart (2.4 s at
py-spy's ~11 ms a dump, docs/stacks.md), started this long before its duration ends so
that every sample falls in its loop, before its loader closes."""


class _StackReader:
    """``gputop_hints.stacks.sample`` of a trainer and its worker processes (its children
    now), in a thread; :meth:`result` classifies what it read."""

    def __init__(self, pid: int) -> None:
        workers: list[int] = []
        with suppress(psutil.Error):
            workers = [c.pid for c in psutil.Process(pid).children()]
        self._samples: Any = None
        self._thread = threading.Thread(
            target=self._read, args=(pid, workers), name="lab-stacks", daemon=True
        )
        self._thread.start()

    def _read(self, pid: int, workers: list[int]) -> None:
        self._samples = sample(pid, workers, samples=STACK_SAMPLES, period_s=STACK_PERIOD_S)

    def done(self) -> bool:
        """Whether the reading is taken (:meth:`result` then returns at once)."""
        return not self._thread.is_alive()

    def result(self) -> StackReading | None:
        self._thread.join(CLI_JOIN_S)
        return None if self._samples is None else classify(self._samples)


CLI_START_S = 3.0
"""The CLI's watch starts this long after the trainer's epoch (past its start-up)."""


class _CliWatch:
    """``gputop-hints --once --json --duration D`` run in a thread of this process, so
    that it reads the same in-process fake NVML the feeder drives (as bench/fake_node.py
    runs the real CLI for the side-by-side bench): the command line a user would type."""

    def __init__(self, delay_s: float, duration_s: float, interval_s: float) -> None:
        self._out = io.StringIO()
        self._error: BaseException | None = None
        args = ["--once", "--json", "--duration", f"{duration_s:g}"]
        args += ["--interval", f"{interval_s:g}"]
        self._thread = threading.Thread(target=self._run, args=(delay_s, args), daemon=True)
        self._thread.start()

    def _run(self, delay_s: float, args: list[str]) -> None:
        from gputop_hints.cli import main

        time.sleep(delay_s)
        try:
            with contextlib.redirect_stdout(self._out):
                main(args)
        except BaseException as exc:  # reported by result()
            self._error = exc

    def result(self) -> dict[str, Any]:
        self._thread.join(CLI_JOIN_S)
        if self._thread.is_alive():
            raise RuntimeError("gputop-hints --once --json did not finish")
        if self._error is not None:
            raise RuntimeError(f"gputop-hints --once --json failed: {self._error!r}")
        doc: dict[str, Any] = json.loads(self._out.getvalue())
        return doc


CLI_JOIN_S = 30.0


class _Feeder:
    """Moves what the boards hold into the fake GPU, one tick at a time: the device's
    samples are the programs' busy bins summed (at most 100 %), each consumer's
    per-process utilization its own."""

    def __init__(self, boards: list[Board], gpu: FakeGpu, consumers: list[FakeProc]) -> None:
        self.boards, self.gpu, self.consumers = boards, gpu, consumers
        self.next_bin = 0
        self.busy: list[float] = []
        """The device's bins."""
        self.own: list[list[float]] = [[] for _ in boards]
        """Each program's own bins."""

    def update(self, now: float) -> None:
        gpu, first = self.gpu, self.boards[0]
        while first.bin_end(self.next_bin) <= now:
            values = [b.busy_percent(self.next_bin) for b in self.boards]
            for own, value in zip(self.own, values, strict=True):
                own.append(value)
            total = min(100.0, sum(values))
            gpu.sm_sample_buffer.append((int(first.bin_end(self.next_bin) * 1e6), round(total)))
            self.busy.append(total)
            self.next_bin += 1
        sm = _last_second(self.busy)
        held = 0
        for board, consumer, own in zip(self.boards, self.consumers, self.own, strict=True):
            mine = int(board.slots[VRAM])
            held += mine
            consumer.used_bytes = CONTEXT_BYTES + mine
            consumer.sm_util = _last_second(own)
            consumer.mem_util = round(consumer.sm_util * 0.4)
        gpu.sm, gpu.mem = sm, round(sm * 0.4)
        gpu.power_mw = IDLE_MW + (BUSY_MW - IDLE_MW) * sm // 100
        gpu.vram_used = CONTEXT_BYTES * len(self.boards) + held
        rate = sum(b.copy_rate_at(now) for b in self.boards)
        gpu.pcie_rx_kib = int(rate / 1024)  # NVML: a ~20 ms reading
        del gpu.sm_sample_buffer[:-120]  # the driver's ring holds the last ~20 s


def _last_second(bins: list[float]) -> int:
    last_s = bins[-6:]
    return round(sum(last_s) / len(last_s)) if last_s else 0


def verdict(findings: tuple[Finding, ...]) -> Finding | None:
    """The worst finding (what the process row's hint column shows)."""
    return max(findings, key=lambda f: f.severity, default=None)


__all__ = ["Lab", "Run", "Started", "Tick", "lab_gpu", "replace", "start_trainer", "verdict"]
