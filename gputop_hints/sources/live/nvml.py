"""NVML through nvitop's Apache-2.0 ``api`` package: this machine's GPUs, learnt
once and sampled every tick.

:class:`NvmlGpus` finds the devices and what never changes about them (name,
UUID, max SM clock), then each tick reads per-device metrics (SM %, memory
access %, VRAM, PCIe, temperature, power, clocks, clock event reasons), the
utilization samples NVML buffered since the last tick, and the processes with
a context on each GPU with their VRAM and per-process utilization. MIG
instance ids resolve to their parent GPU here too.

Unknown is ``None``: nvitop's ``NA``, NVML's NotSupported / NoPermission, a
GPU that fell off the bus -- each leaves a ``None`` where the value would be.
A function a GPU does not support is asked once, never again. Each GPU's
work runs on its own :class:`~.gpu_worker.GpuWorker` under one deadline per
tick: a GPU whose call does not return in time is reported not answering
(``GpuSample.not_answering_s``) and asked nothing more until the call returns;
the other GPUs are not held up. Only the ``nvitop.api`` package is used --
never ``nvitop.tui`` (GPL-3.0).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from nvitop.api import Device, libnvml

from gputop_hints.model import GpuSample
from gputop_hints.sources.live import nvml_exit
from gputop_hints.sources.live.gpu_worker import GpuWorker
from gputop_hints.sources.live.nvml_processes import NvmlProcess
from gputop_hints.sources.live.nvml_query import (
    GpuState,
    int_or_none,
    known,
    learn_static,
    query,
)
from gputop_hints.sources.live.nvml_read import read_gpu

if TYPE_CHECKING:
    from gputop_hints.sources.live.slurm.membership import GpuId

log = logging.getLogger(__name__)

NVITOP_LIBNVML_LOGGER = "nvitop.api.libnvml"

DEMO_HINT = "Try --demo to see the monitor with simulated GPUs."

_GpuWork = tuple[GpuSample, Mapping[int, NvmlProcess]] | None


def answer_deadline_s(interval_s: float) -> float:
    """How long a tick waits for a GPU's NVML work: 80 % of the interval, kept
    between 0.5 s (a busy host must not make a healthy GPU miss it) and 2 s (a
    long interval must not keep a quit or a stop waiting)."""
    return min(max(0.8 * interval_s, 0.5), 2.0)


@contextlib.contextmanager
def _quiet_nvitop_init() -> Iterator[None]:
    """Silence libnvml's multi-line "FATAL ERROR" log while probing for NVML.

    nvitop logs it at CRITICAL, which Python's last-resort handler prints to
    stderr -- over the terminal the TUI is about to take. We report the same
    fact ourselves, once, in ``gpu_unavailable_reason``.
    """
    logger = logging.getLogger(NVITOP_LIBNVML_LOGGER)
    was_disabled = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was_disabled


class NvmlNotAnswering(Exception):
    """An NVML start-up call did not return by the deadline (a wedged driver)."""

    def __init__(self, waited_s: float, call: str) -> None:
        super().__init__(f"{call} has not returned after {waited_s:.1f} s")
        self.waited_s = waited_s
        self.call = call


def unavailable_reason(exc: BaseException) -> str:
    """A specific, actionable sentence for why NVML could not be used."""
    if isinstance(exc, NvmlNotAnswering):
        return (
            f"NVML is not answering: {exc.call} has not returned after {exc.waited_s:.1f} s "
            "(a wedged NVIDIA driver, or a GPU in a bad state; nvidia-smi will likely hang "
            "too). Showing the host only. " + DEMO_HINT
        )
    if isinstance(exc, libnvml.NVMLError_LibraryNotFound):
        lib = "nvml.dll" if sys.platform == "win32" else "libnvidia-ml.so.1"
        return (
            f"NVML could not be loaded ({lib} not found): no NVIDIA driver on this machine. "
            + DEMO_HINT
        )
    if isinstance(exc, libnvml.NVMLError_DriverNotLoaded):
        return (
            "NVML is installed but the NVIDIA kernel driver is not loaded "
            "(no /dev/nvidia* devices or the module failed to load). " + DEMO_HINT
        )
    if isinstance(exc, libnvml.NVMLError_LibRmVersionMismatch):
        return (
            "NVML and the loaded NVIDIA kernel driver have different versions "
            "(the driver was upgraded without reloading the kernel module): "
            "reboot or reload the nvidia modules."
        )
    if isinstance(exc, libnvml.NVMLError_NoPermission):
        return (
            "NVML refused access to the NVIDIA devices: permission denied "
            "(no permission on /dev/nvidia*). Check that your user may read and write "
            "/dev/nvidia* (ls -l /dev/nvidia*; often the 'video' group) and, inside a "
            "container, that the GPUs are passed through (docker run --gpus all, "
            "the NVIDIA container toolkit)."
        )
    if isinstance(exc, libnvml.NVMLError):
        return f"NVML failed to initialise ({exc}). " + DEMO_HINT
    return f"NVML could not be used ({type(exc).__name__}: {exc}). " + DEMO_HINT


def mig_parent(mig_uuid: str) -> int | None:
    """NVML index of the GPU a ``MIG-<uuid>`` instance lives on."""
    try:
        handle = libnvml.nvmlQuery("nvmlDeviceGetHandleByUUID", mig_uuid, ignore_errors=False)
        parent = libnvml.nvmlQuery(
            "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", handle, ignore_errors=False
        )
        return int_or_none(libnvml.nvmlQuery("nvmlDeviceGetIndex", parent))
    except libnvml.NVMLError:
        return None


# -- the GPUs --------------------------------------------------------------------


class NvmlGpus:
    """This machine's GPUs: found by :meth:`start`, read by :meth:`sample` each tick.

    ``interval_s`` is the expected time between ticks: the look-back for the
    first read of NVML's sample buffers, and what :func:`answer_deadline_s`
    derives the per-GPU deadline from.
    """

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.deadline_s = answer_deadline_s(interval_s)
        self._gpus: list[GpuState] = []
        self._workers: list[GpuWorker[_GpuWork]] = []
        self._not_answering: set[int] = set()
        self._logged_failures: set[tuple[int, str]] = set()
        self.driver_version: str | None = None
        self.cuda_driver_version: str | None = None
        self._start_step = "nvmlInit"

    def start(self) -> str | None:
        """Find the GPUs; why there are none to show when NVML works but sees none.

        Raises whatever NVML raised when it cannot be used at all, or cannot
        count the GPUs (:func:`unavailable_reason` turns that into a
        sentence). A GPU that fails on its own -- lost, or one transient
        error -- is listed with what is known, and asked again next tick: it
        does not hide the healthy GPUs.
        """
        # NVML's start-up calls run on a worker too, under the same deadline as a
        # tick: a driver that never answers (nvmlInit, nvmlDeviceGetCount, the
        # driver version) leaves the monitor CPU-only, saying so -- it does not
        # hold up start-up, --once or quitting.
        starter: GpuWorker[tuple[int, str | None, str | None]] = GpuWorker(
            "gputop-hints-nvml-start", lambda _: self._start_nvml()
        )
        nvml_exit.install()
        nvml_exit.watch(starter)
        starter.submit(None)
        answered = starter.wait(time.monotonic() + self.deadline_s)
        starter.close()  # its thread ends after the job (at once when it answered)
        if not answered:
            nvml_exit.install()  # nvitop's exit hook, if init returned since, must not wait
            raise NvmlNotAnswering(self.deadline_s, self._start_step)
        count, self.driver_version, self.cuda_driver_version = starter.result()
        if count <= 0:
            return (
                f"NVML works (driver {self.driver_version or 'unknown'}) but sees no GPUs: "
                "none is installed, or none is visible here (container device mapping, "
                "SLURM --gres, cgroup device rules)."
            )
        for index in range(count):
            state = GpuState(index, None, None, None, None)
            self._gpus.append(state)
            worker = GpuWorker(f"gputop-hints-gpu{index}", self._work_for(state))
            nvml_exit.watch(worker)
            self._workers.append(worker)
        # Each GPU learns its static facts on its own worker: one that hangs now
        # is reported not answering from the first tick, and hides no other.
        deadline = time.monotonic() + self.deadline_s
        for worker in self._workers:
            worker.submit(None)
        for worker in self._workers:
            worker.wait(deadline)
        return None

    def _start_nvml(self) -> tuple[int, str | None, str | None]:
        """NVML's start-up, on the start worker: the GPU count and driver versions.

        ``_start_step`` names the call in progress, for the message when one
        does not return.
        """
        with _quiet_nvitop_init():
            self._start_step = "nvmlInit / nvmlDeviceGetCount"
            # Not Device.count(): it answers 0 for any error, and "no GPUs" is
            # the wrong story when NVML said "no permission".
            count = libnvml.nvmlQuery("nvmlDeviceGetCount", ignore_errors=False)
        nvml_exit.install()  # nvitop registered its exit hook at init: take it over
        self._start_step = "nvmlSystemGetDriverVersion"
        driver = known(Device.driver_version())
        self._start_step = "nvmlSystemGetCudaDriverVersion"
        cuda = known(Device.cuda_driver_version())
        return int(count), driver, cuda

    def close(self) -> None:
        """Forget every GPU: later ticks report none. Returns at once: a worker
        stuck in a call is abandoned (a daemon thread), never waited for."""
        workers, self._workers, self._gpus = self._workers, [], []
        for worker in workers:
            worker.close()

    def _work_for(self, state: GpuState) -> Callable[[float | None], _GpuWork]:
        def work(timestamp: float | None) -> _GpuWork:
            if state.static_missing:  # at most one more try per GPU and tick
                self._learn_static(state)
            return None if timestamp is None else read_gpu(state, timestamp, self.interval_s)

        return work

    def gpu_ids(self) -> list[GpuId]:
        """Index, UUID and minor number of each GPU: what SLURM's GPU ids map onto."""
        # asked only for a job or --only-visible: a plain node never loads membership
        from gputop_hints.sources.live.slurm.membership import GpuId

        return [GpuId(s.index, s.uuid, self._minor_number(s)) for s in self._gpus]

    def _minor_number(self, state: GpuState) -> int | None:
        if state.handle is None or state.index in self._not_answering:
            return None
        if any(w.in_flight for w in self._workers[state.index : state.index + 1]):
            return None  # stuck at start-up: a call now would hang this thread too
        try:
            return int_or_none(query(state, "nvmlDeviceGetMinorNumber"))
        except libnvml.NVMLError:  # lost since start-up: unknown, like its other facts
            return None

    def _learn_static(self, state: GpuState) -> None:
        """:func:`learn_static`, with a failure kept to this GPU (and logged once)."""
        try:
            learn_static(state)
        except Exception as exc:  # one GPU's surprise must not hide the others
            self._log_gpu_failure(state, exc, "its name and values are unknown until it answers")

    def sample(
        self, timestamp: float
    ) -> tuple[list[GpuSample], list[tuple[int, int, NvmlProcess]]]:
        """Every GPU now, and ``(gpu index, pid, NVML's view)`` for each process on one.

        A surprise on one GPU leaves that GPU's values unknown this tick (logged
        once per GPU and kind of failure) and does not blank the others. The
        GPUs are read in parallel, each on its worker; one that has not
        answered by the deadline is reported not answering (its processes
        unknown) and asked nothing new until its call returns.
        """
        gpus: list[GpuSample] = []
        processes: list[tuple[int, int, NvmlProcess]] = []
        states, workers = self._gpus, self._workers
        deadline = time.monotonic() + self.deadline_s
        handed = [worker.submit(timestamp) for worker in workers]
        for state, worker, fresh in zip(states, workers, handed, strict=True):
            procs: Mapping[int, NvmlProcess] = {}
            if fresh and worker.wait(deadline):
                try:
                    work = worker.result()
                    assert work is not None  # a tick's job always samples
                    sample, procs = work
                except Exception as exc:  # a surprise on one GPU must not blank the rest
                    self._log_gpu_failure(state, exc, "its values are unknown this tick")
                    sample = GpuSample(state.index, state.name, state.uuid)
                self._answered(state)
            else:
                sample = self._not_answering_sample(state, worker.stuck_for())
            gpus.append(sample)
            processes.extend((state.index, pid, p) for pid, p in procs.items())
        return gpus, processes

    def _not_answering_sample(self, state: GpuState, stuck_s: float | None) -> GpuSample:
        if stuck_s is None:  # it returned just now, or the source is closing: unknown
            return GpuSample(state.index, state.name, state.uuid)
        if state.index not in self._not_answering:
            self._not_answering.add(state.index)
            log.info(  # not a warning: every view says it (the summary, the panel, stderr)
                "GPU %d: an NVML call has not returned after %.1f s; shown as not "
                "answering, and asked nothing more until it returns",
                state.index,
                stuck_s,
            )
        return GpuSample(state.index, state.name, state.uuid, not_answering_s=stuck_s)

    def _answered(self, state: GpuState) -> None:
        if state.index in self._not_answering:
            self._not_answering.discard(state.index)
            log.info("GPU %d: NVML answers again", state.index)

    def _log_gpu_failure(self, state: GpuState, exc: Exception, consequence: str) -> None:
        key = (state.index, type(exc).__name__)
        if key not in self._logged_failures:  # once per GPU and kind, not every tick
            self._logged_failures.add(key)
            if isinstance(exc, libnvml.NVMLError):  # NVML's own word: no traceback needed
                log.warning("GPU %d: NVML said %s; %s", state.index, exc, consequence)
            else:
                log.exception("GPU %d: %s", state.index, consequence)
