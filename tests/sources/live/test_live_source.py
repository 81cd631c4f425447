"""The live source against a fake NVML and real processes.

Only NVML is faked (tests/fake_nvml.py, installed where nvitop looks NVML up).
Processes are real: a small tree of Python children whose CPU use psutil reads
for real, listed as GPU processes of the fake GPUs.
"""

from __future__ import annotations

import contextlib
import ctypes
import getpass
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psutil
import pynvml
import pytest

from gputop_hints.model import Snapshot
from gputop_hints.sources import Source, SourceUnavailable
from gputop_hints.sources.live import source as live
from gputop_hints.sources.live.source import LiveSource, decode_clock_event_reasons
from tests.support.fake_nvml import GIB, FakeGpu, FakeNvml, FakeProc, make_gpus

TICK_S = 0.8

# Busy for 6 ms, asleep for 14 ms: ~30 % of a core, so a tree of one spinning
# main process and two such workers stays under the 2 cores CI has.
WORKER_SOURCE = """
import time
while True:
    end = time.perf_counter() + 0.006
    while time.perf_counter() < end:
        pass
    time.sleep(0.014)
"""

MAIN_SOURCE = f"""
import subprocess, sys
busy = [subprocess.Popen([sys.executable, "-c", {WORKER_SOURCE!r}]) for _ in range(2)]
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(" ".join(str(p.pid) for p in [*busy, sleeper]), flush=True)
while True:
    pass
"""


@dataclass
class Tree:
    """A training-job look-alike: a spinning main process, 2 busy workers, 1 sleeper."""

    main: int
    busy_workers: tuple[int, int]
    sleeper: int

    @property
    def pids(self) -> list[int]:
        return [self.main, *self.busy_workers, self.sleeper]


def _kill_tree(main: subprocess.Popen[str], descendants: list[int]) -> None:
    """Kill the main process and its children, and wait until none of them runs."""
    procs = [p for p in map(_process_or_none, descendants) if p is not None]
    main.kill()
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    main.wait(timeout=5)
    deadline = time.monotonic() + 5
    while procs and time.monotonic() < deadline:  # dead, even if init has not reaped it yet
        procs = [p for p in procs if _alive(p)]
        time.sleep(0.01)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _process_or_none(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


@pytest.fixture(scope="module")
def tree() -> Iterator[Tree]:
    main = subprocess.Popen([sys.executable, "-c", MAIN_SOURCE], stdout=subprocess.PIPE, text=True)
    pids = [main.pid]
    try:
        assert main.stdout is not None
        line = main.stdout.readline()
        busy_a, busy_b, sleeper = (int(x) for x in line.split())
        pids += [busy_a, busy_b, sleeper]
        yield Tree(main.pid, (busy_a, busy_b), sleeper)
    finally:
        _kill_tree(main, pids[1:])
        if main.stdout is not None:
            main.stdout.close()


SLEEPER_SOURCE = "import time; print('ready', flush=True); time.sleep(600)"


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[str]]]:
    procs = [
        subprocess.Popen([sys.executable, "-c", SLEEPER_SOURCE], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        for p in procs:  # past interpreter start-up, about to sleep
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        time.sleep(0.1)
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=5)
            if p.stdout is not None:
                p.stdout.close()


def _unused_pid() -> int:
    """A pid that no process has (pid_max is at most 2**22 on Linux)."""
    pid = 4_194_000
    while psutil.pid_exists(pid):
        pid -= 1
    return pid


def two_ticks(source: LiveSource, gap_s: float = TICK_S) -> tuple[Snapshot, Snapshot]:
    first = source.sample()
    time.sleep(gap_s)
    return first, source.sample()


# -- no NVML -----------------------------------------------------------------------


def test_without_nvml_the_source_runs_cpu_only_and_says_why(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with FakeNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND):
        source = LiveSource()
        _, second = two_ticks(source, 0.2)
    assert isinstance(source, Source)
    assert second.gpus == ()
    assert second.processes == ()
    reason = second.gpu_unavailable_reason
    assert reason is not None
    assert "libnvidia-ml.so.1 not found" in reason
    assert "--demo" in reason
    # The host side still works: that is the point of CPU-only mode.
    assert len(second.host.cpu_percent_per_core) == psutil.cpu_count()
    assert all(v is not None for v in second.host.cpu_percent_per_core)
    # nvitop's multi-line "FATAL ERROR" banner must not reach the terminal.
    assert "FATAL ERROR" not in capfd.readouterr().err


def test_require_gpu_without_nvml_raises_source_unavailable_with_the_reason() -> None:
    with (
        FakeNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
        pytest.raises(SourceUnavailable, match=r"libnvidia-ml\.so\.1 not found"),
    ):
        LiveSource(require_gpu=True)


@pytest.mark.parametrize(
    ("error", "phrase"),
    [
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "kernel driver is not loaded"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "reload the nvidia modules"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "no permission on /dev/nvidia"),
    ],
)
def test_each_way_nvml_can_fail_gets_its_own_explanation(error: int, phrase: str) -> None:
    with FakeNvml(init_error=error):
        snapshot = LiveSource().sample()
    assert snapshot.gpu_unavailable_reason is not None
    assert phrase in snapshot.gpu_unavailable_reason


def _real_nvml_loadable() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


@pytest.mark.skipif(_real_nvml_loadable(), reason="this machine has an NVIDIA driver")
def test_on_this_driverless_machine_the_real_nvml_path_goes_cpu_only() -> None:
    snapshot = LiveSource().sample()
    assert snapshot.gpus == ()
    assert snapshot.gpu_unavailable_reason is not None
    assert "libnvidia-ml.so.1 not found" in snapshot.gpu_unavailable_reason


def test_nvml_without_any_gpu_says_none_is_visible() -> None:
    with FakeNvml([]):
        snapshot = LiveSource().sample()
        assert snapshot.gpus == ()
        assert snapshot.gpu_unavailable_reason is not None
        assert "sees no GPUs" in snapshot.gpu_unavailable_reason
        with pytest.raises(SourceUnavailable):
            LiveSource(require_gpu=True)


# -- GPU metrics ---------------------------------------------------------------------


def test_gpu_metrics_arrive_in_model_units() -> None:
    gpu = FakeGpu(
        0,
        name="NVIDIA A100-SXM4-80GB",
        sm=97,
        mem=61,
        vram_used=70 * GIB,
        vram_total=80 * GIB,
        pcie_rx_kib=2_000_000,
        pcie_tx_kib=1_000,
        link_gen=4,
        link_width=16,
        temperature=71,
        power_mw=312_500,
        power_limit_mw=400_000,
        sm_clock_mhz=1410,
        max_sm_clock_mhz=1410,
    )
    with FakeNvml([gpu], driver_version="535.104.05", cuda_driver_version=12020):
        snapshot = LiveSource().sample()
    (g,) = snapshot.gpus
    assert g.name == "NVIDIA A100-SXM4-80GB"
    assert g.uuid == gpu.uuid
    assert (g.sm_percent, g.memory_access_percent) == (97.0, 61.0)
    assert g.utilization_sum_percent == 158.0
    assert (g.vram_used_bytes, g.vram_total_bytes) == (70 * GIB, 80 * GIB)
    assert g.pcie_rx_bytes_per_s == 2_000_000 * 1024
    assert g.pcie_tx_bytes_per_s == 1_000 * 1024
    assert (g.pcie_generation, g.pcie_width) == (4, 16)
    assert g.pcie_link_bytes_per_s == pytest.approx(16 * 16e9 * 128 / 130 / 8)
    assert g.temperature_c == 71.0
    assert g.power_watts == 312.5
    assert g.power_limit_watts == 400.0
    assert (g.sm_clock_mhz, g.max_sm_clock_mhz) == (1410, 1410)
    assert g.throttle_reasons == ()
    assert snapshot.driver_version == "535.104.05"
    assert snapshot.cuda_driver_version == "12.2"
    assert snapshot.source == "live"
    assert snapshot.sample_duration_s is not None and snapshot.sample_duration_s > 0


def test_gpu_values_follow_the_device_from_tick_to_tick() -> None:
    gpu = FakeGpu(0, sm=5, pcie_rx_kib=10)
    with FakeNvml([gpu]):
        source = LiveSource()
        before = source.sample().gpus[0]
        gpu.sm, gpu.pcie_rx_kib, gpu.link_gen = 88, 500, 1
        after = source.sample().gpus[0]
    assert (before.sm_percent, after.sm_percent) == (5.0, 88.0)
    assert (before.pcie_rx_bytes_per_s, after.pcie_rx_bytes_per_s) == (10 * 1024, 500 * 1024)
    assert (before.pcie_generation, after.pcie_generation) == (5, 1)


def test_unsupported_metrics_are_none_not_zero() -> None:
    gpu = FakeGpu(0, sm=40, unsupported={"pcie", "pcie_link", "temperature", "power"})
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        for _ in range(3):
            g = source.sample().gpus[0]
    assert g.pcie_rx_bytes_per_s is None
    assert g.pcie_tx_bytes_per_s is None
    assert g.pcie_generation is None and g.pcie_width is None
    assert g.pcie_link_bytes_per_s is None
    assert g.temperature_c is None
    assert g.power_watts is None
    assert g.sm_percent == 40.0  # the rest of the GPU is still there
    assert g.power_limit_watts == 700.0
    # A GPU that said "not supported" is not asked again every tick.
    assert nvml.calls["nvmlDeviceGetTemperature"] == 1
    assert nvml.calls["nvmlDeviceGetPcieThroughput"] == 1


def test_no_permission_on_a_metric_is_none() -> None:
    gpu = FakeGpu(0, no_permission={"power_limit", "clocks"})
    with FakeNvml([gpu]):
        g = LiveSource().sample().gpus[0]
    assert g.power_limit_watts is None
    assert g.sm_clock_mhz is None and g.max_sm_clock_mhz is None
    assert g.power_watts == 90.0


def test_a_lost_gpu_leaves_the_other_gpu_and_its_processes_complete() -> None:
    pid = os.getpid()
    gpus = make_gpus(2, [[pid], [pid]], sm=70)
    with FakeNvml(gpus):
        source = LiveSource()
        source.sample()
        gpus[1].lost = True
        snapshot = source.sample()
    ok, lost = snapshot.gpus
    assert ok.sm_percent == 70.0 and ok.vram_total_bytes == 80 * GIB
    assert lost.index == 1
    assert lost.name == gpus[1].name  # still known from before it was lost
    assert lost.sm_percent is None
    assert lost.vram_used_bytes is None
    assert lost.temperature_c is None
    assert [(p.pid, p.gpu_index) for p in snapshot.processes] == [(pid, 0)]


def test_a_gpu_lost_before_start_is_listed_with_nothing_known() -> None:
    gpus = make_gpus(2)
    gpus[0].lost = True
    with FakeNvml(gpus):
        snapshot = LiveSource().sample()
    lost, ok = snapshot.gpus
    assert (lost.index, lost.name, lost.sm_percent, lost.vram_total_bytes) == (0, None, None, None)
    assert ok.name == gpus[1].name and ok.vram_total_bytes is not None


# -- clock event reasons ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("mask", "names"),
    [
        (0, ()),
        (0x1, ("gpu_idle",)),
        (0x4 | 0x40, ("sw_power_cap", "hw_thermal")),
        (0x8 | 0x20 | 0x80, ("hw_slowdown", "sw_thermal", "hw_power_brake")),
        (
            0x2 | 0x10 | 0x100,
            ("applications_clocks_setting", "sync_boost", "display_clocks_setting"),
        ),
        (0x4 | 0x10000, ("sw_power_cap", "unknown_0x10000")),
    ],
)
def test_clock_event_reasons_decode_to_names(mask: int, names: tuple[str, ...]) -> None:
    assert decode_clock_event_reasons(mask) == names


def test_throttle_reasons_reach_the_snapshot_and_unknown_is_none() -> None:
    throttled = FakeGpu(0, clock_event_reasons=0x4 | 0x40)
    free = FakeGpu(1, clock_event_reasons=0)
    unknown = FakeGpu(2, unsupported={"clock_reasons"})
    with FakeNvml([throttled, free, unknown]):
        gpus = LiveSource().sample().gpus
    assert gpus[0].throttle_reasons == ("sw_power_cap", "hw_thermal")
    assert gpus[1].throttle_reasons == ()
    assert gpus[2].throttle_reasons is None


def test_drivers_before_r535_fall_back_to_throttle_reasons() -> None:
    gpu = FakeGpu(0, clock_event_reasons=0x20)
    with FakeNvml([gpu], missing_functions={"nvmlDeviceGetCurrentClocksEventReasons"}) as nvml:
        source = LiveSource()
        first = source.sample().gpus[0]
        second = source.sample().gpus[0]
    assert first.throttle_reasons == second.throttle_reasons == ("sw_thermal",)
    assert nvml.calls["nvmlDeviceGetCurrentClocksEventReasons"] == 1
    assert nvml.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 2


# -- buffered utilization samples ------------------------------------------------------


def test_buffered_sm_samples_are_delivered_once_each() -> None:
    gpu = FakeGpu(0)
    now_us = time.time_ns() // 1000
    gpu.sm_sample_buffer.append((now_us - 60_000_000, 99))  # a minute old: before our time
    gpu.add_sm_samples([10, 90, 10])
    with FakeNvml([gpu]):
        source = LiveSource()
        first = source.sample().gpus[0].sm_samples
        again = source.sample().gpus[0].sm_samples
        gpu.add_sm_samples([55, 66])
        later = source.sample().gpus[0].sm_samples
    assert [s.percent for s in first] == [10.0, 90.0, 10.0]
    assert again == ()
    assert [s.percent for s in later] == [55.0, 66.0]
    # Seconds since the epoch, oldest first, strictly after what came before.
    assert abs(first[-1].timestamp - time.time()) < 30
    assert first[0].timestamp < first[1].timestamp < first[2].timestamp < later[0].timestamp


def test_no_new_samples_is_not_mistaken_for_unsupported() -> None:
    gpu = FakeGpu(0)
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        source.sample()
        source.sample()
        gpu.add_sm_samples([42])
        samples = source.sample().gpus[0].sm_samples
    assert [s.percent for s in samples] == [42.0]
    assert nvml.calls["nvmlDeviceGetSamples"] == 3


def test_unsupported_samples_are_empty_and_not_asked_for_again() -> None:
    gpu = FakeGpu(0, sm=30, unsupported={"samples"})
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        ticks = [source.sample().gpus[0] for _ in range(4)]
    assert all(g.sm_samples == () for g in ticks)
    assert ticks[-1].sm_percent == 30.0
    assert nvml.calls["nvmlDeviceGetSamples"] == 1


# -- GPU processes ----------------------------------------------------------------------


def test_per_process_sm_without_a_sample_is_unknown_not_idle() -> None:
    me = os.getpid()
    parent = os.getppid()
    idle = _unused_pid()
    gpu = FakeGpu(
        0,
        processes=[
            FakeProc(me, used_bytes=3 * GIB, sm_util=42, mem_util=7),
            FakeProc(parent, used_bytes=2 * GIB, sm_util=None),
            FakeProc(idle, used_bytes=1 * GIB, sm_util=0, mem_util=0),
        ],
    )
    with FakeNvml([gpu]):
        source = LiveSource()
        rows = {p.pid: p for p in source.sample().processes}
        gpu.processes[0].sm_util = None  # the driver stops sampling it
        later = {p.pid: p for p in source.sample().processes}
    assert (rows[me].sm_percent, rows[me].memory_access_percent) == (42.0, 7.0)
    assert rows[me].vram_bytes == 3 * GIB
    # No NVML sample (nvitop would say 0): unknown, not idle.
    assert rows[parent].sm_percent is None
    assert rows[parent].memory_access_percent is None
    assert rows[parent].vram_bytes == 2 * GIB
    # A real sample of 0 is a real 0.
    assert (rows[idle].sm_percent, rows[idle].memory_access_percent) == (0.0, 0.0)
    # Last tick's value is not carried over when no new sample came.
    assert later[me].sm_percent is None
    assert later[idle].sm_percent == 0.0


def test_processes_with_unknown_vram_and_no_utilization_support() -> None:
    me = os.getpid()
    gpu = FakeGpu(
        0,
        processes=[FakeProc(me, used_bytes=None, sm_util=80)],
        unsupported={"process_utilization"},
    )
    with FakeNvml([gpu]) as nvml:
        source = LiveSource()
        rows = [source.sample().processes for _ in range(3)][-1]
    assert [(p.pid, p.vram_bytes, p.sm_percent) for p in rows] == [(me, None, None)]
    assert nvml.calls["nvmlDeviceGetProcessUtilization"] == 1


def test_a_process_on_two_gpus_is_two_rows_with_one_host_reading() -> None:
    me = os.getpid()
    gpus = make_gpus(2, [[me], [me]])
    with FakeNvml(gpus):
        source = LiveSource()
        _, snapshot = two_ticks(source, 0.2)
    rows = snapshot.processes
    assert [(p.pid, p.gpu_index) for p in rows] == [(me, 0), (me, 1)]
    assert rows[0].cpu_percent == rows[1].cpu_percent is not None
    assert rows[0].user == getpass.getuser()


@pytest.mark.parametrize("host_path", ["proc-scan", "psutil-only"])
def test_main_process_and_each_worker_get_their_own_cpu(
    tree: Tree, host_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if host_path == "psutil-only":  # what a host without Linux's /proc gets
        monkeypatch.setattr(live, "_scan_proc", lambda: None)
    gpu = FakeGpu(0, processes=[FakeProc(tree.main, sm_util=35)])
    main = psutil.Process(tree.main)
    with FakeNvml([gpu]):
        source = LiveSource()
        before, started = main.cpu_times(), time.monotonic()
        first, second = two_ticks(source)
        after, ended = main.cpu_times(), time.monotonic()
    (row_first,) = first.processes
    (row,) = second.processes
    # First sight of a process: no CPU delta yet, so unknown rather than 0.
    assert row_first.cpu_percent is None
    assert all(w.cpu_percent is None for w in row_first.workers)

    # The spinning main process: what psutil saw over (nearly) the same span,
    # and clearly busy even when other jobs compete for the 2 cores.
    used = (after.user + after.system) - (before.user + before.system)
    expected = used / (ended - started) * 100
    assert row.cpu_percent is not None
    assert row.cpu_percent == pytest.approx(expected, abs=15)
    assert row.cpu_percent > 30
    workers = {w.pid: w for w in row.workers}
    assert set(workers) == {*tree.busy_workers, tree.sleeper}
    for pid in tree.busy_workers:
        cpu = workers[pid].cpu_percent
        assert cpu is not None and 5 < cpu < 80, (pid, cpu)
        rss, name = workers[pid].rss_bytes, workers[pid].name
        assert rss is not None and rss > 0
        assert name is not None and "python" in name
    sleeper = workers[tree.sleeper]
    assert sleeper.cpu_percent is not None and sleeper.cpu_percent < 5
    assert sleeper.state == "S"
    assert row.busy_workers(threshold_percent=5) == 2

    assert row.state in {"R", "S"}
    assert row.user == main.username()
    assert row.create_time == main.create_time()
    assert row.rss_bytes is not None and row.rss_bytes > 1_000_000
    assert row.command.startswith(sys.executable + " -c")
    assert row.name is not None and "python" in row.name


def test_a_child_that_holds_a_gpu_itself_is_a_peer_not_a_worker(tree: Tree) -> None:
    rank = tree.busy_workers[0]
    gpus = make_gpus(2, [[tree.main], [rank]])
    with FakeNvml(gpus):
        snapshot = LiveSource().sample()
    main_row, rank_row = snapshot.processes
    assert main_row.pid == tree.main and rank_row.pid == rank
    assert rank not in {w.pid for w in main_row.workers}
    assert {w.pid for w in main_row.workers} == {tree.busy_workers[1], tree.sleeper}


def test_processes_that_exit_or_never_existed_do_not_break_the_tick(
    sleepers: list[subprocess.Popen[str]],
) -> None:
    doomed, survivor = sleepers
    ghost = _unused_pid()
    gpu = FakeGpu(0, processes=[FakeProc(p.pid) for p in sleepers] + [FakeProc(ghost)])
    with FakeNvml([gpu]):
        source = LiveSource()
        source.sample()
        doomed.kill()
        doomed.wait(timeout=5)
        # NVML lags behind: it still lists the pid for a moment after the exit.
        stale = {p.pid: p for p in source.sample().processes}
        gpu.processes = [p for p in gpu.processes if p.pid != doomed.pid]
        final = {p.pid: p for p in source.sample().processes}
        tracked = source.tracked_pids

    # Listed by NVML but gone from the host: the row stays (it holds VRAM),
    # with every host-side field unknown.
    for pid in (doomed.pid, ghost):
        row = stale[pid]
        assert row.vram_bytes == 1 * GIB
        assert (row.cpu_percent, row.rss_bytes, row.state, row.user, row.name) == (None,) * 5
        assert row.workers == ()
    assert stale[survivor.pid].state == "S"
    assert stale[survivor.pid].cpu_percent is not None
    # Once NVML drops it, so do we, and the CPU cache forgets it too.
    assert set(final) == {survivor.pid, ghost}
    assert tracked == 1


# -- host ------------------------------------------------------------------------------


def test_host_cores_are_unknown_on_the_first_tick_then_measured() -> None:
    with FakeNvml(make_gpus(1)):
        source = LiveSource()
        first = source.sample().host
        time.sleep(0.3)
        second = source.sample().host
    cores = psutil.cpu_count()
    assert len(first.cpu_percent_per_core) == cores
    assert first.cpu_percent_per_core == (None,) * cores  # no delta yet: unknown, not 0
    assert all(v is not None and 0 <= v <= 100 for v in second.cpu_percent_per_core)
    assert second.iowait_percent is not None and 0 <= second.iowait_percent <= 100
    assert second.allowed_cores == tuple(sorted(os.sched_getaffinity(0)))
    assert second.memory_total_bytes == psutil.virtual_memory().total
    assert second.memory_used_bytes is not None
    assert 0 < second.memory_used_bytes < second.memory_total_bytes
    assert second.load_average is not None
    assert second.hostname == first.hostname != ""


def test_a_closed_source_reports_no_gpus() -> None:
    with FakeNvml(make_gpus(1)):
        source = LiveSource()
        assert len(source.sample().gpus) == 1
        source.close()
        snapshot = source.sample()
    assert snapshot.gpus == ()
    assert snapshot.gpu_unavailable_reason == "The live source was closed."


# -- the fake itself --------------------------------------------------------------------


def test_the_fake_puts_nvitop_back_as_it_was() -> None:
    import nvitop.api.libnvml as libnvml

    before = libnvml.nvmlDeviceGetCount
    before_init = pynvml.nvmlInitWithFlags
    with FakeNvml(make_gpus(3)):
        assert libnvml.nvmlDeviceGetCount is not before
        assert len(LiveSource().sample().gpus) == 3
    assert libnvml.nvmlDeviceGetCount is before
    assert pynvml.nvmlInitWithFlags is before_init
    assert vars(libnvml)["__initialized"] is False
