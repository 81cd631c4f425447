"""The Prometheus exporter: what a scrape shows, and what it no longer shows.

The collector is driven in-process tick by tick (a process that leaves, a finding
that clears: their series must go); one test runs the real ``gputop-hints export
--demo`` in a subprocess and scrapes it over HTTP, as Prometheus would.
"""

from __future__ import annotations

import dataclasses
import os
import selectors
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from gputop_hints.hints.findings import Finding, Severity, Subject
from gputop_hints.model import GpuProcess, GpuSample, HostSample, JobInfo, Snapshot
from gputop_hints.outputs.prometheus import SnapshotCollector
from tests.support.paths import REPO


def _samples(text: str) -> list[Sample]:
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def _named(samples: list[Sample], name: str) -> list[Sample]:
    return [s for s in samples if s.name == name]


def _scrape(collector: SnapshotCollector) -> list[Sample]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return _samples(generate_latest(registry).decode())


def _snapshot(
    processes: tuple[GpuProcess, ...] = (), job: JobInfo | None = None, **gpu: float | None
) -> Snapshot:
    return Snapshot(
        timestamp=1000.0,
        interval_s=1.0,
        host=HostSample(
            hostname="node7",
            cpu_percent_per_core=(50.0, None),
            allowed_cores=(0, 1),
            iowait_percent=3.0,
            memory_used_bytes=2**30,
            memory_total_bytes=2**32,
        ),
        gpus=(GpuSample(index=0, uuid="GPU-abc", vram_total_bytes=80 * 2**30, **gpu),),  # type: ignore[arg-type]
        processes=processes,
        job=job,
    )


def _process(pid: int, vram: int, in_job: bool | None = None) -> GpuProcess:
    return GpuProcess(
        pid=pid,
        gpu_index=0,
        vram_bytes=vram,
        sm_percent=40.0,
        cpu_percent=99.0,
        user="alice",
        name="python",
        command="python train.py --token SECRET",
        in_job=in_job,
    )


def _finding(pid: int | None) -> Finding:
    return Finding(
        rule="input-starved",
        subject=Subject(0, pid),
        severity=Severity.WARNING,
        label="starved",
        summary="",
        advice=(),
        evidence=(),
        subtype="num-workers-0",
        started_at=990.0,
    )


def test_a_process_that_leaves_and_a_finding_that_clears_lose_their_series() -> None:
    collector = SnapshotCollector()
    collector.update(_snapshot((_process(4200, 2**30),), sm_percent=30.0), (_finding(4200),))
    before = _scrape(collector)
    [vram] = _named(before, "gputop_hints_process_vram_bytes")
    assert vram.labels["pid"] == "4200"
    assert vram.labels["command"] == "python"  # the short name, never the arguments
    assert vram.value == 2**30
    [finding] = _named(before, "gputop_hints_finding")
    assert finding.value == 1
    assert finding.labels["rule"] == "input-starved"
    assert finding.labels["subtype"] == "num-workers-0"
    assert finding.labels["severity"] == "warning"
    assert finding.labels["pid"] == "4200"
    [start] = _named(before, "gputop_hints_finding_start_time_seconds")
    assert start.value == 990.0

    collector.update(_snapshot(sm_percent=30.0), ())
    after = _scrape(collector)
    assert not [s for s in after if s.name.startswith("gputop_hints_process_") and s.labels]
    assert not _named(after, "gputop_hints_finding")
    assert not _named(after, "gputop_hints_finding_start_time_seconds")
    assert _named(after, "gputop_hints_gpu_utilization_percent")  # the GPU stays


def test_an_unknown_value_is_no_sample_never_zero() -> None:
    collector = SnapshotCollector()
    collector.update(_snapshot(sm_percent=None, sm_active_percent=None), ())
    samples = _scrape(collector)
    assert not _named(samples, "gputop_hints_gpu_utilization_percent")
    assert not _named(samples, "gputop_hints_gpu_sm_active_percent")
    # Core 1 has no reading: only core 0 is there.
    assert [s.labels["core"] for s in _named(samples, "gputop_hints_host_cpu_percent")] == ["0"]

    collector.update(_snapshot(sm_percent=20.0, sm_active_percent=12.0), ())
    samples = _scrape(collector)
    [util] = _named(samples, "gputop_hints_gpu_utilization_percent")
    assert util.labels == {"gpu": "0", "uuid": "GPU-abc", "host": "node7", "slurm_job": ""}
    assert util.value == 20.0
    [smact] = _named(samples, "gputop_hints_gpu_sm_active_percent")
    assert smact.value == 12.0


def test_process_series_are_capped_heaviest_vram_first() -> None:
    collector = SnapshotCollector(max_processes=2)
    processes = (_process(1, 10), _process(2, 30), _process(3, 20))
    collector.update(_snapshot(processes), ())
    samples = _scrape(collector)
    pids = {s.labels["pid"] for s in _named(samples, "gputop_hints_process_vram_bytes")}
    assert pids == {"2", "3"}
    [dropped] = _named(samples, "gputop_hints_process_series_dropped")
    assert dropped.value == 1


def test_job_labels_come_from_the_slurm_job() -> None:
    job = JobInfo(job_id="1234", step_id="0", name="train", gpu_indices=(0,))
    collector = SnapshotCollector()
    collector.update(_snapshot((_process(7, 100, in_job=True),), job=job), (_finding(7),))
    samples = _scrape(collector)
    [vram] = _named(samples, "gputop_hints_process_vram_bytes")
    assert vram.labels["slurm_job"] == "1234"
    [finding] = _named(samples, "gputop_hints_finding")
    assert finding.labels["slurm_job"] == "1234"
    [info] = _named(samples, "gputop_hints_job_info")
    assert (info.labels["slurm_job"], info.labels["step"]) == ("1234", "0")


def test_process_and_finding_series_name_the_container() -> None:
    pod = dataclasses.replace(_process(7, 2**30), container="pod ml-team/trainer-0")
    bare = _process(8, 2**20)
    collector = SnapshotCollector()
    collector.update(_snapshot((pod, bare)), (_finding(7), _finding(8), _finding(None)))
    samples = _scrape(collector)
    vram = {
        s.labels["pid"]: s.labels["container"]
        for s in _named(samples, "gputop_hints_process_vram_bytes")
    }
    assert vram == {"7": "pod ml-team/trainer-0", "8": ""}
    findings = {
        s.labels["pid"]: s.labels["container"] for s in _named(samples, "gputop_hints_finding")
    }
    # A finding about the whole GPU (pid "") names no container.
    assert findings == {"7": "pod ml-team/trainer-0", "8": "", "": ""}


# --- the real command ---------------------------------------------------------------


def test_lost_gpu_seconds_are_counters_that_outlive_the_finding() -> None:
    """The exporter's counters are the diagnoser's meter (hints.costs): one series per
    rule and GPU, growing while the finding lasts and kept after it clears."""
    from gputop_hints.hints.diagnoser import Diagnoser
    from gputop_hints.sources.demo import DemoSource

    diagnoser = Diagnoser()
    source = DemoSource("idle-vram", seed=0)
    collector = SnapshotCollector()
    for _ in range(40):
        snap = source.sample()
        collector.update(snap, diagnoser.feed(snap), diagnoser.costs)
    samples = _named(_scrape(collector), "gputop_hints_lost_gpu_seconds_total")
    assert {(s.labels["rule"], s.labels["gpu"]): s.value for s in samples} == {
        (rule, str(gpu)): seconds for (rule, gpu), seconds in diagnoser.costs.lost_s.items()
    }
    assert any(s.labels["rule"] == "idle-holding-vram" and s.value > 0 for s in samples)
    # the finding is gone (nothing visible), the count it left is still served
    collector.update(snap, (), diagnoser.costs)
    after = _named(_scrape(collector), "gputop_hints_lost_gpu_seconds_total")
    assert [s.value for s in after] == [s.value for s in samples]
    assert not _named(_scrape(collector), "gputop_hints_finding")


def _wait_for_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The first line the exporter writes on stderr ("serving http://...")."""
    assert proc.stderr is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError("the exporter said nothing on stderr")
    return proc.stderr.readline()


@pytest.fixture
def exporter() -> Iterator[tuple[subprocess.Popen[str], str]]:
    env = dict(os.environ)
    env.pop("GPUTOP_HINTS_CONFIG", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputop_hints", "export", "--demo", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = _wait_for_line(proc, 60)
        assert "serving http://127.0.0.1:" in line, line
        url = line.split("serving ", 1)[1].split()[0]
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_export_demo_serves_gpu_metrics_and_the_demos_findings(
    exporter: tuple[subprocess.Popen[str], str],
) -> None:
    proc, url = exporter
    with urllib.request.urlopen(url, timeout=30) as response:
        samples = _samples(response.read().decode())
    util = _named(samples, "gputop_hints_gpu_utilization_percent")
    assert {s.labels["gpu"] for s in util} == {"0", "1", "2", "3"}
    assert all(s.labels["uuid"].startswith("GPU-") and s.labels["host"] for s in util)
    findings = {
        (s.labels["rule"], s.labels["subtype"], s.labels["pid"])
        for s in _named(samples, "gputop_hints_finding")
    }
    # The default scenario's bob runs with num_workers=0 (pid 4200).
    assert ("input-starved", "num-workers-0", "4200") in findings
    assert _named(samples, "gputop_hints_process_vram_bytes")

    # The GPU-time lost under each rule is a counter that grows while the finding lasts.
    def lost() -> dict[tuple[str, str], float]:
        with urllib.request.urlopen(url, timeout=30) as response:
            scraped = _samples(response.read().decode())
        return {
            (s.labels["rule"], s.labels["gpu"]): s.value
            for s in _named(scraped, "gputop_hints_lost_gpu_seconds_total")
        }

    first = lost()
    assert first.get(("input-starved", "1"), 0.0) > 0.0
    later = first
    for _ in range(100):  # the demo ticks every second; wait for the next
        later = lost()
        if later[("input-starved", "1")] > first[("input-starved", "1")]:
            break
        time.sleep(0.1)
    assert later[("input-starved", "1")] > first[("input-starved", "1")]
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    assert "# TYPE gputop_hints_lost_gpu_seconds_total counter" in text
    assert 'gputop_hints_lost_energy_joules_total{gpu="1"' in text

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0  # SIGTERM stops it cleanly
