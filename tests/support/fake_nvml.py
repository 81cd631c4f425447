"""A small in-memory NVML, installed where nvitop looks NVML functions up.

nvitop's ``nvitop.api.libnvml`` copies every ``nvml*`` name out of ``pynvml`` at
import time and calls them by name through ``libnvml.nvmlQuery``, so patching
``pynvml`` alone has no effect on it. :class:`FakeNvml` therefore

* replaces ``pynvml.nvmlInitWithFlags`` / ``pynvml.nvmlShutdown`` (libnvml's
  own init wrappers call those on the pynvml module),
* replaces *every* ``nvml*`` function attribute of ``nvitop.api.libnvml``: the
  ones modelled here answer from :class:`FakeGpu` objects, all others raise
  ``NVMLError_NotSupported`` (what a real GPU answers for a metric it lacks,
  and what nvitop maps to ``NA`` even where it calls with
  ``ignore_errors=False``),
* resets the state nvitop keeps between calls: libnvml's init flags, its
  unknown-function log cache, ``device._PHYSICAL_DEVICE_ATTRS``, the lru_cache
  of ``_parse_cuda_visible_devices`` and the process instance caches,

and puts everything back on exit. Tests mutate the :class:`FakeGpu` objects
between ticks; the same fake lets unmodified nvitop run for benchmarks::

    gpus = make_gpus(8, pids_per_gpu=[[...], ...])
    with FakeNvml(gpus) as nvml:
        source = LiveSource()
        gpus[0].sm = 97
        snapshot = source.sample()
        assert nvml.calls["nvmlDeviceGetSamples"] == 1

Only NVML is faked: processes listed here are looked up with psutil for real.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any

import nvitop.api.device as nvitop_device
import nvitop.api.libnvml as libnvml
import nvitop.api.process as nvitop_process
import pynvml

GIB = 1024**3

_RELEASED_THREAD_JOIN_S = 30.0
"""How long uninstalling waits for a thread released from a hung function to end. Such
a thread finishes in milliseconds, but under load (a full suite beside other work on 2
cores) it was seen to outlive 5 s and then mark nvitop's NVML initialised behind the
next test's back: that test's hung init was never called (blocked_function_calls 0)."""

# Groups of NVML calls that a FakeGpu can mark unsupported / permission-denied.
GROUPS: dict[str, tuple[str, ...]] = {
    "utilization": ("nvmlDeviceGetUtilizationRates",),
    "memory": ("nvmlDeviceGetMemoryInfo",),
    "pcie": ("nvmlDeviceGetPcieThroughput",),
    "pcie_link": (
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetMaxPcieLinkWidth",
    ),
    "temperature": ("nvmlDeviceGetTemperature",),
    "power": ("nvmlDeviceGetPowerUsage",),
    "power_limit": ("nvmlDeviceGetPowerManagementLimit", "nvmlDeviceGetEnforcedPowerLimit"),
    "clocks": ("nvmlDeviceGetClockInfo", "nvmlDeviceGetMaxClockInfo"),
    "clock_reasons": (
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
    ),
    "samples": ("nvmlDeviceGetSamples",),
    "process_utilization": ("nvmlDeviceGetProcessUtilization",),
    "processes": (
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetGraphicsRunningProcesses",
    ),
    "fan": ("nvmlDeviceGetFanSpeed",),
    "gpm": (
        "nvmlGpmQueryDeviceSupport",
        "nvmlGpmSampleGet",
        "nvmlGpmMigSampleGet",
        "nvmlGpmMetricsGet",
    ),
}

_NO_INSTANCE = 0xFFFFFFFF
"""What NVML's process info carries for gpuInstanceId / computeInstanceId off MIG."""

_MIG_UNSUPPORTED = frozenset(
    {"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetProcessUtilization", "nvmlDeviceGetSamples"}
)
"""What NVML answers NotSupported for on a GPU in MIG mode (and on its MIG handles):
there is no device-wide or per-process utilization under MIG."""

# nvitop's own helpers that live under nvml* names in libnvml: never replaced.
_NVITOP_OWN = frozenset(
    {
        "nvmlInit",
        "nvmlInitWithFlags",
        "nvmlShutdown",
        "nvmlQuery",
        "nvmlQueryFieldValues",
        "nvmlCheckReturn",
        "nvmlExceptionClass",
        "nvmlStructToFriendlyObject",
        "nvmlFriendlyObjectToStruct",
        "nvmlErrorString",
    }
)


def _error(code: int) -> pynvml.NVMLError:
    """The real pynvml exception subclass for ``code`` (NVMLError maps codes to subclasses)."""
    err: pynvml.NVMLError = pynvml.NVMLError(code)
    return err


def fake_uuid(index: int) -> str:
    """A GPU UUID in NVIDIA's format that nvitop's UUID pattern accepts."""
    return f"GPU-{index:08x}-0000-4000-8000-{index:012x}"


@dataclass
class FakeProc:
    """A process holding a context on a fake GPU.

    ``sm_util=None`` means NVML has no process-utilization sample for it (the
    pid is left out of ``nvmlDeviceGetProcessUtilization``).
    """

    pid: int
    used_bytes: int | None = 1 * GIB
    sm_util: int | None = None
    mem_util: int | None = None
    graphics: bool = False
    mig: tuple[int, int] | None = None
    """``(gpu instance id, compute instance id)`` it runs on, on a GPU in MIG mode."""


@dataclass(eq=False)
class FakeMig:
    """One MIG instance of a fake GPU in MIG mode; also serves as its MIG device handle.

    ``gpm`` as on :class:`FakeGpu`, for ``nvmlGpmMigSampleGet`` on its GPU instance.
    ``parent`` is set by the GPU that lists it.
    """

    gpu_instance_id: int
    compute_instance_id: int = 0
    profile: str = "1g.10gb"
    vram_used: int = 0
    vram_total: int = 10 * GIB
    gpm: dict[int, float] | None = None
    parent: FakeGpu | None = field(default=None, repr=False)
    gpm_counters: dict[int, float] = field(default_factory=dict, repr=False)
    gpm_counted_at: float | None = field(default=None, repr=False)

    @property
    def uuid(self) -> str:
        index = 0 if self.parent is None else self.parent.index
        gi, ci = self.gpu_instance_id, self.compute_instance_id
        return f"MIG-{index:08x}-{gi:04x}-4000-8000-{ci:012x}"

    def gpm_advance(self, now: float) -> dict[int, float]:
        """Integrate the current GPM values up to ``now`` (see :meth:`FakeGpu.gpm_advance`)."""
        return _gpm_advance(self, now)


def _gpm_advance(owner: FakeGpu | FakeMig, now: float) -> dict[int, float]:
    if owner.gpm_counted_at is not None and owner.gpm:
        dt = max(0.0, now - owner.gpm_counted_at)
        for metric, value in owner.gpm.items():
            owner.gpm_counters[metric] = owner.gpm_counters.get(metric, 0.0) + value * dt
    owner.gpm_counted_at = now
    return dict(owner.gpm_counters)


@dataclass(eq=False)
class FakeGpu:
    """One fake GPU; also serves as its own NVML handle.

    Units are NVML's: PCIe in KiB/s (as nvitop documents it), power in mW,
    clocks in MHz, memory in bytes. ``unsupported`` / ``no_permission`` hold
    names from :data:`GROUPS`; ``lost=True`` makes every call raise
    ``NVMLError_GpuIsLost``. ``sm_sample_buffer`` is the driver's buffer of
    ``(timestamp_us, percent)`` readings behind ``nvmlDeviceGetSamples``.
    ``errors`` holds injected faults, see :meth:`fail_next`. :meth:`hang` makes
    every later NVML call on this GPU block until :meth:`release` (a call that
    never returns, as a wedged driver does); :class:`FakeNvml` releases its GPUs
    on exit so no test leaves a thread hanging.
    """

    index: int
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = ""
    sm: int = 0
    mem: int = 0
    vram_used: int = 1 * GIB
    vram_total: int = 80 * GIB
    pcie_rx_kib: int = 0
    pcie_tx_kib: int = 0
    link_gen: int = 5
    link_width: int = 16
    max_link_gen: int = 5
    max_link_width: int = 16
    temperature: int = 40
    power_mw: int = 90_000
    power_limit_mw: int = 700_000
    default_power_limit_mw: int | None = None
    """The board's default limit; None: the same as ``power_limit_mw`` (not lowered)."""
    sm_clock_mhz: int = 1980
    max_sm_clock_mhz: int = 1980
    mem_clock_mhz: int = 2619
    fan_percent: int | None = None
    clock_event_reasons: int = 0
    processes: list[FakeProc] = field(default_factory=list)
    unsupported: set[str] = field(default_factory=set)
    no_permission: set[str] = field(default_factory=set)
    lost: bool = False
    sm_sample_buffer: list[tuple[int, int]] = field(default_factory=list)
    errors: dict[str, list[int | None]] = field(default_factory=dict)
    answering: threading.Event = field(default_factory=threading.Event, repr=False)
    """Set while calls on this GPU return; cleared by :meth:`hang`."""
    blocked_calls: int = 0
    """Calls that blocked because the GPU hung (how a test knows the hang was hit)."""
    gpm: dict[int, float] | None = None
    """GPM metrics (``NVML_GPM_METRIC_*`` id -> % now) on a GPU that has GPM (Hopper
    and newer); None: ``nvmlGpmQueryDeviceSupport`` says unsupported. The fake keeps,
    as the hardware does, counters that integrate each metric over time: a metric is
    what accumulated between two samples over the time between them."""
    gpm_counters: dict[int, float] = field(default_factory=dict, repr=False)
    gpm_counted_at: float | None = field(default=None, repr=False)
    mig: list[FakeMig] | None = None
    """Its MIG instances when the GPU is in MIG mode (``nvmlDeviceGetMigMode`` answers
    enabled; an empty list: MIG mode with no instance created); None: a GPU without
    MIG (``nvmlDeviceGetMigMode`` answers NotSupported). In MIG mode NVML gives no
    device or per-process utilization (:data:`_MIG_UNSUPPORTED`)."""
    mig_parent_lists_processes: bool = True
    """In MIG mode, whether the GPU's own handle lists the processes of every instance
    (NVML does so only for privileged callers; otherwise each MIG handle lists its own)."""

    def gpm_advance(self, now: float) -> dict[int, float]:
        """Integrate the current GPM values up to ``now``; the counters after it."""
        return _gpm_advance(self, now)

    def __post_init__(self) -> None:
        if not self.uuid:
            self.uuid = fake_uuid(self.index)
        for instance in self.mig or ():
            instance.parent = self
        self.answering.set()
        unknown = (self.unsupported | self.no_permission) - GROUPS.keys()
        if unknown:
            raise ValueError(f"unknown NVML groups {sorted(unknown)}; known: {sorted(GROUPS)}")

    def fail_next(self, function: str, error: int, times: int = 1) -> None:
        """Make the next ``times`` calls of ``function`` on this GPU raise NVML ``error``.

        A transient fault (``NVML_ERROR_UNKNOWN`` once at start-up) or a GPU
        falling off the bus between two calls (``NVML_ERROR_GPU_IS_LOST`` from
        one static query); after ``times`` calls the function answers normally.
        ``nvmlDeviceGetHandleByIndex`` / ``...ByUUID`` count as calls on the
        GPU they would return.
        """
        self.errors.setdefault(function, []).extend([error] * times)

    def fail_after(self, function: str, error: int, *, answers: int, times: int = 10_000) -> None:
        """Let ``function`` answer normally ``answers`` more times, then raise NVML
        ``error`` for the next ``times`` calls: a reading that worked, then fails."""
        self.errors.setdefault(function, []).extend([None] * answers + [error] * times)

    def hang(self) -> None:
        """From now on every NVML call on this GPU blocks until :meth:`release`."""
        self.answering.clear()

    def release(self) -> None:
        """Let blocked and later calls on this GPU return again."""
        self.answering.set()

    def wait_if_hung(self) -> None:
        """Block here while the GPU is hung (called first by every call on it)."""
        if not self.answering.is_set():
            self.blocked_calls += 1
            self.answering.wait()

    def raise_injected(self, function: str) -> None:
        """Raise the next fault queued by :meth:`fail_next` / :meth:`fail_after` for
        ``function``, if any."""
        queued = self.errors.get(function)
        if queued:
            error = queued.pop(0)
            if error is not None:
                raise _error(error)

    def add_sm_samples(self, percents: Iterable[int], *, period_s: float = 1 / 6) -> None:
        """Append readings ``period_s`` apart to the driver's sample buffer.

        The newest lands at "now", or later if the buffer already holds readings
        that recent: timestamps only ever increase, as the driver's do.
        """
        values = list(percents)
        now_us = time.time_ns() // 1000
        step_us = int(period_s * 1e6)
        start = now_us - step_us * (len(values) - 1)
        if self.sm_sample_buffer:  # the driver's clock never runs backwards
            start = max(start, self.sm_sample_buffer[-1][0] + step_us)
        self.sm_sample_buffer.extend((start + i * step_us, v) for i, v in enumerate(values))


def make_gpus(
    count: int,
    pids_per_gpu: Sequence[Sequence[int]] = (),
    **kwargs: Any,
) -> list[FakeGpu]:
    """``count`` GPUs; GPU ``i`` lists the pids in ``pids_per_gpu[i]`` (if given).

    Keyword arguments are passed to every :class:`FakeGpu`; each process gets
    1 GiB of VRAM and a per-process SM sample of 50 %.
    """
    gpus = []
    for i in range(count):
        pids = pids_per_gpu[i] if i < len(pids_per_gpu) else ()
        procs = [FakeProc(pid, sm_util=50, mem_util=20) for pid in pids]
        gpus.append(FakeGpu(i, processes=procs, **kwargs))
    return gpus


class FakeNvml:
    """Context manager installing fake NVML for ``gpus`` into nvitop (see module doc).

    ``init_error`` (e.g. ``pynvml.NVML_ERROR_LIBRARY_NOT_FOUND``) makes NVML
    fail to initialise, as on a machine without the driver; ``count_error``
    (e.g. ``pynvml.NVML_ERROR_NO_PERMISSION``) makes NVML initialise but fail
    to count the GPUs. ``missing_functions``
    names functions the "driver" lacks (they raise ``NVMLError_FunctionNotFound``).
    ``calls`` counts calls per function name.
    """

    def __init__(
        self,
        gpus: Sequence[FakeGpu] = (),
        *,
        driver_version: str = "550.54.15",
        cuda_driver_version: int = 12040,
        init_error: int | None = None,
        count_error: int | None = None,
        missing_functions: Iterable[str] = (),
    ) -> None:
        self.gpus: list[FakeGpu] = list(gpus)
        self.driver_version = driver_version
        self.cuda_driver_version = cuda_driver_version
        self.init_error = init_error
        self.count_error = count_error
        self.missing_functions: set[str] = set(missing_functions)
        self.calls: Counter[str] = Counter()
        self.hung_functions: set[str] = set()
        """Functions whose calls block until exit, see :meth:`hang_function`."""
        self._functions_answer = threading.Event()
        self._functions_answer.set()
        self.blocked_function_calls = 0
        self._blocked_threads: set[threading.Thread] = set()
        self._saved_libnvml: dict[str, Any] = {}
        self._added_libnvml: list[str] = []
        self._saved_pynvml: dict[str, Any] = {}
        self._saved_state: dict[str, Any] = {}
        self._installed = False

    # -- installation --------------------------------------------------------

    def __enter__(self) -> FakeNvml:
        self.install()
        return self

    def __exit__(self, *exc: object) -> None:
        self.uninstall()

    def install(self) -> None:
        """Patch nvitop and pynvml; idempotent per instance, not re-entrant across instances."""
        if self._installed:
            return
        with _INSTALL_LOCK:
            _reset_nvitop_caches()
            self._saved_state = _save_libnvml_state()
            _set_libnvml_state(flags=[], initialized=False)

            for name in ("nvmlInitWithFlags", "nvmlShutdown"):
                self._saved_pynvml[name] = getattr(pynvml, name)
            pynvml.nvmlInitWithFlags = self._init_with_flags
            pynvml.nvmlShutdown = self._shutdown

            implemented = self._implementations()
            module_vars = vars(libnvml)
            names = {n for n, v in vars(pynvml).items() if n.startswith("nvml") and callable(v)}
            names.update(n for n, v in module_vars.items() if n.startswith("nvml") and callable(v))
            for name in sorted(names - _NVITOP_OWN):
                if name in module_vars:
                    self._saved_libnvml[name] = module_vars[name]
                else:
                    self._added_libnvml.append(name)
                impl = implemented.get(name)
                setattr(libnvml, name, self._wrap(name, impl))
            self._installed = True

    def hang_function(self, *functions: str) -> None:
        """From now on every call of ``functions`` blocks until exit, on any GPU or none:
        one call that never returns (``nvmlInitWithFlags``, ``nvmlDeviceGetCount``,
        ``nvmlDeviceGetName``...), as a wedged driver does."""
        self.hung_functions.update(functions)
        self._functions_answer.clear()

    def _wait_if_hung(self, name: str) -> None:
        if name in self.hung_functions and not self._functions_answer.is_set():
            self.blocked_function_calls += 1
            self._blocked_threads.add(threading.current_thread())
            self._functions_answer.wait()

    def uninstall(self) -> None:
        """Put nvitop and pynvml back as they were and forget NVML's fake init.

        Every hung GPU and function is released first: no thread stays blocked in
        a fake call. A thread released from a hung function is let finish (it may
        still be inside nvitop's init) before nvitop's state is put back: else it
        would mark the real NVML initialised behind the next test's back.
        """
        self._functions_answer.set()
        for gpu in self.gpus:
            gpu.release()
        for thread in self._blocked_threads - {threading.current_thread()}:
            thread.join(_RELEASED_THREAD_JOIN_S)
        self._blocked_threads.clear()
        if not self._installed:
            return
        with _INSTALL_LOCK:
            for name, value in self._saved_libnvml.items():
                setattr(libnvml, name, value)
            for name in self._added_libnvml:
                delattr(libnvml, name)
            for name, value in self._saved_pynvml.items():
                setattr(pynvml, name, value)
            self._saved_libnvml.clear()
            self._added_libnvml.clear()
            self._saved_pynvml.clear()
            _restore_libnvml_state(self._saved_state)
            _reset_nvitop_caches()
            self._installed = False

    def _wrap(self, name: str, impl: Callable[..., Any] | None) -> Callable[..., Any]:
        calls = self.calls
        missing = self.missing_functions

        if impl is None:

            def not_supported(*args: Any, **kwargs: Any) -> Any:
                calls[name] += 1
                self._wait_if_hung(name)
                if name in missing:
                    raise _error(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
                raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)

            return not_supported

        @functools.wraps(impl)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            self._wait_if_hung(name)
            if name in missing:
                raise _error(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
            return impl(*args, **kwargs)

        return wrapper

    # -- NVML library lifecycle ----------------------------------------------

    def _init_with_flags(self, flags: int) -> None:
        self.calls["nvmlInitWithFlags"] += 1
        self._wait_if_hung("nvmlInitWithFlags")
        if self.init_error is not None:
            raise _error(self.init_error)

    def _shutdown(self) -> None:
        self.calls["nvmlShutdown"] += 1

    # -- per-GPU helpers -----------------------------------------------------

    def _gpu(self, handle: Any, name: str) -> FakeGpu:
        if not isinstance(handle, FakeGpu) or handle not in self.gpus:
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        handle.wait_if_hung()
        if handle.lost:
            raise _error(pynvml.NVML_ERROR_GPU_IS_LOST)
        handle.raise_injected(name)
        if handle.mig is not None and name in _MIG_UNSUPPORTED:
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        for group in handle.unsupported:
            if name in GROUPS[group]:
                raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        for group in handle.no_permission:
            if name in GROUPS[group]:
                raise _error(pynvml.NVML_ERROR_NO_PERMISSION)
        return handle

    def _mig(self, handle: Any, name: str) -> FakeMig:
        """The MIG instance behind a MIG device handle (its GPU's faults apply)."""
        if not isinstance(handle, FakeMig) or handle.parent is None:
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        parent = self._gpu(handle.parent, name)
        if parent.mig is None or handle not in parent.mig:
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)  # destroyed since
        if name in _MIG_UNSUPPORTED:
            raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return handle

    def _implementations(self) -> dict[str, Callable[..., Any]]:
        gpu = self._gpu
        mig_of = self._mig

        def get_count() -> int:
            if self.count_error is not None:
                raise _error(self.count_error)
            return len(self.gpus)

        def handle_by_index(index: int) -> FakeGpu:
            if not 0 <= index < len(self.gpus):
                raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            g = self.gpus[index]
            g.wait_if_hung()
            if g.lost:
                raise _error(pynvml.NVML_ERROR_GPU_IS_LOST)
            g.raise_injected("nvmlDeviceGetHandleByIndex")
            return g

        def handle_by_uuid(uuid: str | bytes) -> FakeGpu | FakeMig:
            text = uuid.decode() if isinstance(uuid, bytes) else uuid
            for g in self.gpus:
                instance = next((m for m in g.mig or () if m.uuid == text), None)
                if g.uuid == text or instance is not None:
                    g.wait_if_hung()
                    if g.lost:
                        raise _error(pynvml.NVML_ERROR_GPU_IS_LOST)
                    g.raise_injected("nvmlDeviceGetHandleByUUID")
                    return g if instance is None else instance
            raise _error(pynvml.NVML_ERROR_NOT_FOUND)

        def get_index(h: Any) -> int:
            return gpu(h, "nvmlDeviceGetIndex").index

        def get_name(h: Any) -> str:
            if isinstance(h, FakeMig):
                instance = mig_of(h, "nvmlDeviceGetName")
                assert instance.parent is not None
                return f"{instance.parent.name} MIG {instance.profile}"
            return gpu(h, "nvmlDeviceGetName").name

        def get_uuid(h: Any) -> str:
            if isinstance(h, FakeMig):
                return mig_of(h, "nvmlDeviceGetUUID").uuid
            return gpu(h, "nvmlDeviceGetUUID").uuid

        def mig_mode(h: Any) -> list[int]:
            g = gpu(h, "nvmlDeviceGetMigMode")
            if g.mig is None:
                raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
            return [pynvml.NVML_DEVICE_MIG_ENABLE, pynvml.NVML_DEVICE_MIG_ENABLE]

        def max_mig_count(h: Any) -> int:
            g = gpu(h, "nvmlDeviceGetMaxMigDeviceCount")
            if g.mig is None:
                raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
            return 7

        def mig_handle_by_index(h: Any, index: int) -> FakeMig:
            g = gpu(h, "nvmlDeviceGetMigDeviceHandleByIndex")
            if g.mig is None:
                raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
            if not 0 <= index < 7:
                raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            if index >= len(g.mig):
                raise _error(pynvml.NVML_ERROR_NOT_FOUND)
            return g.mig[index]

        def gpu_instance_id(h: Any) -> int:
            return mig_of(h, "nvmlDeviceGetGpuInstanceId").gpu_instance_id

        def compute_instance_id(h: Any) -> int:
            return mig_of(h, "nvmlDeviceGetComputeInstanceId").compute_instance_id

        def is_mig_handle(h: Any) -> int:
            if isinstance(h, FakeMig):
                mig_of(h, "nvmlDeviceIsMigDeviceHandle")
                return 1
            gpu(h, "nvmlDeviceIsMigDeviceHandle")
            return 0

        def parent_of_mig(h: Any) -> FakeGpu:
            instance = mig_of(h, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle")
            assert instance.parent is not None
            return instance.parent

        def get_pci_info(h: Any) -> SimpleNamespace:
            g = gpu(h, "nvmlDeviceGetPciInfo")
            bus_id = f"00000000:{g.index + 0x10:02X}:00.0"
            return SimpleNamespace(busId=bus_id, busIdLegacy=bus_id, bus=g.index + 0x10)

        def memory_info(h: Any, version: int | None = None) -> SimpleNamespace:
            g: FakeGpu | FakeMig = (
                mig_of(h, "nvmlDeviceGetMemoryInfo")
                if isinstance(h, FakeMig)
                else gpu(h, "nvmlDeviceGetMemoryInfo")
            )
            return SimpleNamespace(
                total=g.vram_total,
                used=g.vram_used,
                free=g.vram_total - g.vram_used,
                reserved=0,
            )

        def utilization(h: Any) -> SimpleNamespace:
            g = gpu(h, "nvmlDeviceGetUtilizationRates")
            return SimpleNamespace(gpu=g.sm, memory=g.mem)

        def codec_utilization(h: Any) -> list[int]:
            gpu(h, "nvmlDeviceGetEncoderUtilization")
            return [0, 167_000]

        def clock_info(h: Any, clock_type: int) -> int:
            g = gpu(h, "nvmlDeviceGetClockInfo")
            if clock_type == pynvml.NVML_CLOCK_MEM:
                return g.mem_clock_mhz
            return g.sm_clock_mhz

        def max_clock_info(h: Any, clock_type: int) -> int:
            g = gpu(h, "nvmlDeviceGetMaxClockInfo")
            if clock_type == pynvml.NVML_CLOCK_MEM:
                return g.mem_clock_mhz
            return g.max_sm_clock_mhz

        def temperature(h: Any, sensor: int = 0) -> int:
            return gpu(h, "nvmlDeviceGetTemperature").temperature

        def fan_speed(h: Any) -> int:
            g = gpu(h, "nvmlDeviceGetFanSpeed")
            if g.fan_percent is None:
                raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
            return g.fan_percent

        def power_usage(h: Any) -> int:
            return gpu(h, "nvmlDeviceGetPowerUsage").power_mw

        def power_limit(h: Any) -> int:
            return gpu(h, "nvmlDeviceGetPowerManagementLimit").power_limit_mw

        def enforced_power_limit(h: Any) -> int:
            return gpu(h, "nvmlDeviceGetEnforcedPowerLimit").power_limit_mw

        def default_power_limit(h: Any) -> int:
            g = gpu(h, "nvmlDeviceGetPowerManagementDefaultLimit")
            default = g.default_power_limit_mw
            return g.power_limit_mw if default is None else default

        def pcie_throughput(h: Any, counter: int) -> int:
            g = gpu(h, "nvmlDeviceGetPcieThroughput")
            if counter == pynvml.NVML_PCIE_UTIL_TX_BYTES:
                return g.pcie_tx_kib
            if counter == pynvml.NVML_PCIE_UTIL_RX_BYTES:
                return g.pcie_rx_kib
            raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)

        def link_gen(h: Any) -> int:
            return gpu(h, "nvmlDeviceGetCurrPcieLinkGeneration").link_gen

        def link_width(h: Any) -> int:
            return gpu(h, "nvmlDeviceGetCurrPcieLinkWidth").link_width

        def max_link_gen(h: Any) -> int:
            return gpu(h, "nvmlDeviceGetMaxPcieLinkGeneration").max_link_gen

        def max_link_width(h: Any) -> int:
            return gpu(h, "nvmlDeviceGetMaxPcieLinkWidth").max_link_width

        def clocks_event_reasons(h: Any) -> int:
            return gpu(h, "nvmlDeviceGetCurrentClocksEventReasons").clock_event_reasons

        def clocks_throttle_reasons(h: Any) -> int:
            return gpu(h, "nvmlDeviceGetCurrentClocksThrottleReasons").clock_event_reasons

        def get_samples(h: Any, sampling_type: int, last_seen_us: int) -> tuple[int, list[Any]]:
            g = gpu(h, "nvmlDeviceGetSamples")
            if sampling_type != pynvml.NVML_GPU_UTILIZATION_SAMPLES:
                raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED)
            newer = [(ts, v) for ts, v in g.sm_sample_buffer if ts > last_seen_us]
            if not newer:
                # What the driver answers when nothing was recorded after last_seen.
                raise _error(pynvml.NVML_ERROR_NOT_FOUND)
            samples = []
            for ts, value in newer:
                sample = pynvml.c_nvmlSample_t()
                sample.timeStamp = ts
                sample.sampleValue.uiVal = value
                samples.append(sample)
            return pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, samples

        def running_processes(graphics: bool) -> Callable[[Any], list[SimpleNamespace]]:
            fn_name = (
                "nvmlDeviceGetGraphicsRunningProcesses"
                if graphics
                else "nvmlDeviceGetComputeRunningProcesses"
            )

            def running(h: Any) -> list[SimpleNamespace]:
                instance: tuple[int, int] | None = None
                if isinstance(h, FakeMig):
                    m = mig_of(h, fn_name)
                    assert m.parent is not None
                    g, instance = m.parent, (m.gpu_instance_id, m.compute_instance_id)
                else:
                    g = gpu(h, fn_name)
                    if g.mig is not None and not g.mig_parent_lists_processes:
                        return []
                return [
                    SimpleNamespace(
                        pid=p.pid,
                        usedGpuMemory=p.used_bytes,
                        gpuInstanceId=_NO_INSTANCE if p.mig is None else p.mig[0],
                        computeInstanceId=_NO_INSTANCE if p.mig is None else p.mig[1],
                    )
                    for p in g.processes
                    if p.graphics == graphics and (instance is None or p.mig == instance)
                ]

            return running

        def process_utilization(h: Any, last_seen_us: int) -> list[SimpleNamespace]:
            g = gpu(h, "nvmlDeviceGetProcessUtilization")
            now_us = time.time_ns() // 1000
            samples = [
                SimpleNamespace(
                    pid=p.pid,
                    timeStamp=now_us,
                    smUtil=p.sm_util,
                    memUtil=p.mem_util if p.mem_util is not None else 0,
                    encUtil=0,
                    decUtil=0,
                )
                for p in g.processes
                if p.sm_util is not None
            ]
            if not samples:
                raise _error(pynvml.NVML_ERROR_NOT_FOUND)
            return samples

        def mps_processes(h: Any) -> list[SimpleNamespace]:
            gpu(h, "nvmlDeviceGetMPSComputeRunningProcesses")
            return []

        def driver_version() -> str:
            return self.driver_version

        def cuda_driver_version() -> int:
            return self.cuda_driver_version

        def zero(fn_name: str) -> Callable[..., int]:
            def answer(h: Any, *args: Any) -> int:
                gpu(h, fn_name)
                return 0

            return answer

        def compute_capability(h: Any) -> tuple[int, int]:
            gpu(h, "nvmlDeviceGetCudaComputeCapability")
            return (9, 0)

        def persistence_mode(h: Any) -> int:
            gpu(h, "nvmlDeviceGetPersistenceMode")
            return 1

        # GPM: samples are opaque handles (real ctypes pointers, as pynvml's are);
        # a sample holds the GPU, the time and its counters; metrics come from two.
        gpm_samples: dict[int, tuple[FakeGpu | FakeMig, float, dict[int, float]] | None] = {}

        def gpm_support(h: Any) -> Any:
            g = gpu(h, "nvmlGpmQueryDeviceSupport")
            support = pynvml.c_nvmlGpmSupport_t()
            support.version = pynvml.NVML_GPM_SUPPORT_VERSION
            support.isSupportedDevice = int(g.gpm is not None)
            return support

        def gpm_alloc() -> Any:
            sample = pynvml.c_nvmlGpmSample_t(pynvml.struct_c_nvmlGpmSample_t())
            gpm_samples[ctypes.addressof(sample.contents)] = None
            return sample

        def gpm_free(sample: Any) -> None:
            gpm_samples.pop(ctypes.addressof(sample.contents), None)

        def gpm_sample_get(h: Any, sample: Any) -> Any:
            g = gpu(h, "nvmlGpmSampleGet")
            key = ctypes.addressof(sample.contents)
            if g.gpm is None or key not in gpm_samples:
                raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED if g.gpm is None else
                             pynvml.NVML_ERROR_INVALID_ARGUMENT)
            now = time.monotonic()
            gpm_samples[key] = (g, now, g.gpm_advance(now))
            return sample

        def gpm_mig_sample_get(h: Any, gpu_instance: int, sample: Any) -> Any:
            g = gpu(h, "nvmlGpmMigSampleGet")
            key = ctypes.addressof(sample.contents)
            owner = next(
                (m for m in g.mig or () if m.gpu_instance_id == gpu_instance), None
            )
            if g.gpm is None or owner is None or key not in gpm_samples:
                raise _error(pynvml.NVML_ERROR_NOT_SUPPORTED if g.gpm is None else
                             pynvml.NVML_ERROR_INVALID_ARGUMENT)
            now = time.monotonic()
            gpm_samples[key] = (owner, now, owner.gpm_advance(now))
            return sample

        def gpm_metrics_get(metrics_get: Any) -> Any:
            first = gpm_samples.get(ctypes.addressof(metrics_get.sample1.contents))
            second = gpm_samples.get(ctypes.addressof(metrics_get.sample2.contents))
            if first is None or second is None or first[0] is not second[0]:
                raise _error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            owner = first[0]
            gpu(owner.parent if isinstance(owner, FakeMig) else owner, "nvmlGpmMetricsGet")
            if metrics_get.version != pynvml.NVML_GPM_METRICS_GET_VERSION:
                raise _error(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
            dt = second[1] - first[1]
            for i in range(metrics_get.numMetrics):
                metric = metrics_get.metrics[i]
                if dt <= 0 or metric.metricId not in second[2]:
                    metric.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
                    continue
                gained = second[2][metric.metricId] - first[2].get(metric.metricId, 0.0)
                metric.value = gained / dt
                metric.nvmlReturn = pynvml.NVML_SUCCESS
            return metrics_get

        return {
            "nvmlGpmQueryDeviceSupport": gpm_support,
            "nvmlGpmSampleAlloc": gpm_alloc,
            "nvmlGpmSampleFree": gpm_free,
            "nvmlGpmSampleGet": gpm_sample_get,
            "nvmlGpmMetricsGet": gpm_metrics_get,
            "nvmlGpmMigSampleGet": gpm_mig_sample_get,
            "nvmlDeviceGetMigMode": mig_mode,
            "nvmlDeviceGetMaxMigDeviceCount": max_mig_count,
            "nvmlDeviceGetMigDeviceHandleByIndex": mig_handle_by_index,
            "nvmlDeviceGetGpuInstanceId": gpu_instance_id,
            "nvmlDeviceGetComputeInstanceId": compute_instance_id,
            "nvmlDeviceGetDeviceHandleFromMigDeviceHandle": parent_of_mig,
            "nvmlDeviceGetCount": get_count,
            "nvmlDeviceGetCount_v2": get_count,
            "nvmlDeviceGetHandleByIndex": handle_by_index,
            "nvmlDeviceGetHandleByIndex_v2": handle_by_index,
            "nvmlDeviceGetHandleByUUID": handle_by_uuid,
            "nvmlDeviceGetIndex": get_index,
            "nvmlDeviceGetName": get_name,
            "nvmlDeviceGetUUID": get_uuid,
            "nvmlDeviceGetPciInfo": get_pci_info,
            "nvmlDeviceGetPciInfo_v3": get_pci_info,
            "nvmlDeviceGetMemoryInfo": memory_info,
            "nvmlDeviceGetUtilizationRates": utilization,
            "nvmlDeviceGetEncoderUtilization": codec_utilization,
            "nvmlDeviceGetDecoderUtilization": codec_utilization,
            "nvmlDeviceGetClockInfo": clock_info,
            "nvmlDeviceGetMaxClockInfo": max_clock_info,
            "nvmlDeviceGetTemperature": temperature,
            "nvmlDeviceGetFanSpeed": fan_speed,
            "nvmlDeviceGetPowerUsage": power_usage,
            "nvmlDeviceGetPowerManagementLimit": power_limit,
            "nvmlDeviceGetEnforcedPowerLimit": enforced_power_limit,
            "nvmlDeviceGetPowerManagementDefaultLimit": default_power_limit,
            "nvmlDeviceGetPcieThroughput": pcie_throughput,
            "nvmlDeviceGetCurrPcieLinkGeneration": link_gen,
            "nvmlDeviceGetCurrPcieLinkWidth": link_width,
            "nvmlDeviceGetMaxPcieLinkGeneration": max_link_gen,
            "nvmlDeviceGetMaxPcieLinkWidth": max_link_width,
            "nvmlDeviceGetCurrentClocksEventReasons": clocks_event_reasons,
            "nvmlDeviceGetCurrentClocksThrottleReasons": clocks_throttle_reasons,
            "nvmlDeviceGetSamples": get_samples,
            "nvmlDeviceGetComputeRunningProcesses": running_processes(graphics=False),
            "nvmlDeviceGetGraphicsRunningProcesses": running_processes(graphics=True),
            "nvmlDeviceGetMPSComputeRunningProcesses": mps_processes,
            "nvmlDeviceGetProcessUtilization": process_utilization,
            "nvmlSystemGetDriverVersion": driver_version,
            "nvmlSystemGetCudaDriverVersion": cuda_driver_version,
            "nvmlSystemGetCudaDriverVersion_v2": cuda_driver_version,
            "nvmlDeviceIsMigDeviceHandle": is_mig_handle,
            "nvmlDeviceGetPerformanceState": zero("nvmlDeviceGetPerformanceState"),
            "nvmlDeviceGetDisplayActive": zero("nvmlDeviceGetDisplayActive"),
            "nvmlDeviceGetDisplayMode": zero("nvmlDeviceGetDisplayMode"),
            "nvmlDeviceGetComputeMode": zero("nvmlDeviceGetComputeMode"),
            "nvmlDeviceGetTotalEccErrors": zero("nvmlDeviceGetTotalEccErrors"),
            "nvmlDeviceGetPersistenceMode": persistence_mode,
            "nvmlDeviceGetCudaComputeCapability": compute_capability,
        }


@contextmanager
def fake_nvml(gpus: Sequence[FakeGpu] = (), **kwargs: Any) -> Iterator[FakeNvml]:
    """``with fake_nvml(gpus) as nvml:``, the fixture-friendly form of :class:`FakeNvml`."""
    nvml = FakeNvml(gpus, **kwargs)
    with nvml:
        yield nvml


# -- nvitop state --------------------------------------------------------------

_INSTALL_LOCK = threading.Lock()

# libnvml keeps its init state in module globals with double-underscore names;
# at module level Python does not mangle them, so they are plain attributes.
_FLAGS = "__flags"
_INITIALIZED = "__initialized"


def _libnvml_module() -> ModuleType:
    return sys.modules[libnvml.__name__]


def _save_libnvml_state() -> dict[str, Any]:
    module_vars = vars(_libnvml_module())
    return {
        _FLAGS: list(module_vars[_FLAGS]),
        _INITIALIZED: module_vars[_INITIALIZED],
        "UNKNOWN_FUNCTIONS": dict(module_vars["UNKNOWN_FUNCTIONS"]),
    }


def _set_libnvml_state(*, flags: list[int], initialized: bool) -> None:
    module_vars = vars(_libnvml_module())
    # Mutate the list in place: libnvml's functions refer to this very object.
    module_vars[_FLAGS][:] = flags
    module_vars[_INITIALIZED] = initialized
    module_vars["UNKNOWN_FUNCTIONS"].clear()


def _restore_libnvml_state(saved: dict[str, Any]) -> None:
    _set_libnvml_state(flags=saved[_FLAGS], initialized=saved[_INITIALIZED])
    vars(_libnvml_module())["UNKNOWN_FUNCTIONS"].update(saved["UNKNOWN_FUNCTIONS"])


def _reset_nvitop_caches() -> None:
    """Forget what nvitop learnt from the previous (fake or real) NVML."""
    nvitop_device._PHYSICAL_DEVICE_ATTRS = None
    nvitop_device._GLOBAL_PHYSICAL_DEVICE = None
    nvitop_device._parse_cuda_visible_devices.cache_clear()
    with nvitop_process.GpuProcess.INSTANCE_LOCK:
        nvitop_process.GpuProcess.INSTANCES.clear()
    with nvitop_process.HostProcess.INSTANCE_LOCK:
        nvitop_process.HostProcess.INSTANCES.clear()
