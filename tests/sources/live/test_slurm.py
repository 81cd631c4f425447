"""Job context against a real single-node SLURM cluster (see tests/slurm_cluster.py).

A batch job stands in for a training job's host side: a Python main process
that spawns two busy "DataLoader workers", on one allocated core. Then the
installed console script is run the ways people run it on a SLURM node:
``srun --jobid=J --overlap gputop-hints --once --json`` inside the job, the
same in a pty under tmux, and ``--job J`` from outside. There is no GPU here:
the job's processes are found in CPU-only mode (``Snapshot.job.processes``).

Locally the module skips when SLURM is not installed; with ``CI=true`` that fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gputop_hints.sources.live.slurm import parse_cpu_list
from gputop_hints.sources.live.source import LiveSource
from tests.support.slurm_cluster import SlurmCluster

SCRIPT = Path(sys.executable).parent / "gputop-hints"

BURNER = """\
import os, subprocess, sys, time
spin = "while True: pass"
workers = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(" ".join(str(p) for p in [os.getpid(), *(w.pid for w in workers)]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:  # the main process: busy a third of the time, like a loader's collate
    end = time.perf_counter() + 0.01
    while time.perf_counter() < end:
        pass
    time.sleep(0.02)
"""


@dataclass
class Job:
    job_id: str
    main: int
    workers: tuple[int, int]
    cpus: tuple[int, ...]
    """CPU_IDs scontrol gives for the job on this node."""


@pytest.fixture(scope="module")
def job(slurm_cluster: SlurmCluster) -> Iterator[Job]:
    c = slurm_cluster
    pid_file = c.base / f"burner-{uuid.uuid4().hex[:6]}.pids"
    burner = c.base / "burner.py"
    burner.write_text(BURNER)
    job_id = c.sbatch(
        f"#!/bin/bash\nexec {sys.executable} {burner} {pid_file}\n",
        "--job-name=burner",
        "--cpus-per-task=1",
        f"--output={c.base}/burner-%j.out",
    )
    try:
        c.wait_running(job_id)
        deadline = time.monotonic() + 20
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pid_file.exists(), c.log_tail()
        main, a, b = (int(x) for x in pid_file.read_text().split())
        detail = c.run(["scontrol", "show", "job", "-d", "-o", job_id]).stdout
        cpu_ids = detail.split("CPU_IDs=")[1].split()[0]
        yield Job(job_id, main, (a, b), parse_cpu_list(cpu_ids))
    finally:
        c.run(["scancel", job_id], check=False)


def _check_snapshot_job(data: dict[str, object], job: Job) -> None:
    """What every way of attaching must show: the job, its cores, its processes."""
    info = data["job"]
    assert isinstance(info, dict), data.get("job")
    assert info["job_id"] == job.job_id
    assert tuple(info["cpus"]) == job.cpus
    assert len(job.cpus) == 1  # --cpus-per-task=1: one of the node's cores
    host = data["host"]
    assert isinstance(host, dict)
    assert tuple(host["allowed_cores"]) == job.cpus
    procs = {p["pid"]: p for p in info["processes"]}
    assert {job.main, *job.workers} <= set(procs), procs
    for pid in job.workers:  # spinning, sharing one core three ways
        cpu = procs[pid]["cpu_percent"]
        assert cpu is not None and cpu > 10, (pid, cpu)
    main_cpu = procs[job.main]["cpu_percent"]
    assert main_cpu is not None and main_cpu > 1
    assert info["cpu_percent"] is not None and info["cpu_percent"] > 40
    names = {p["name"] for p in procs.values()}
    assert "slurmstepd" not in names and "gputop-hints" not in names


def test_once_json_inside_the_job(slurm_cluster: SlurmCluster, job: Job) -> None:
    result = slurm_cluster.run(
        [
            "srun",
            f"--jobid={job.job_id}",
            "--overlap",
            str(SCRIPT),
            "--once",
            "--json",
            "--duration",
            "1.5",
            "--interval",
            "0.5",
        ],
        timeout=60,
    )
    data = json.loads(result.stdout)
    _check_snapshot_job(data, job)
    assert "SLURM_JOB_ID" in data["job"]["detected_from"]
    assert data["job"]["step_id"] not in (None, "batch")  # srun made a step of its own


def test_live_source_attaches_from_outside_the_job(slurm_cluster: SlurmCluster, job: Job) -> None:
    from gputop_hints.model import snapshot_to_dict

    source = LiveSource(0.5, job=job.job_id, environ=slurm_cluster.env())
    try:
        source.sample()
        time.sleep(0.6)
        snapshot = source.sample()
    finally:
        source.close()
    assert snapshot.job is not None and snapshot.job.name == "burner"
    assert snapshot.job.detected_from.startswith(f"--job {job.job_id}")
    _check_snapshot_job(snapshot_to_dict(snapshot), job)


def test_once_json_with_job_flag_from_outside(slurm_cluster: SlurmCluster, job: Job) -> None:
    result = subprocess.run(
        [str(SCRIPT), "--job", job.job_id, "--once", "--json", "--duration", "1.5"],
        env=slurm_cluster.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    _check_snapshot_job(json.loads(result.stdout), job)


def test_unknown_job_is_refused(slurm_cluster: SlurmCluster) -> None:
    from gputop_hints.sources import SourceUnavailable

    with pytest.raises(SourceUnavailable, match="not running"):
        LiveSource(job="999999", environ=slurm_cluster.env())


@pytest.mark.tmux
def test_monitor_in_a_pty_inside_the_job_shows_the_job(
    slurm_cluster: SlurmCluster, job: Job
) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    sock = f"gputop-slurm-{uuid.uuid4().hex[:8]}"
    env = slurm_cluster.env({"TERM": "xterm-256color"})
    command = f"srun --jobid={job.job_id} --overlap --pty {SCRIPT} --demo"

    def tmux(*args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", sock, "-f", "/dev/null", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        ).stdout

    tmux("new-session", "-d", "-s", "t", "-x", "160", "-y", "50", command)
    try:
        screen = ""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            screen = tmux("capture-pane", "-p", "-t", "t")
            if f"job {job.job_id}" in screen:
                break
            time.sleep(0.3)
        assert f"job {job.job_id}" in screen, screen
    finally:
        tmux("send-keys", "-t", "t", "q")
        time.sleep(0.3)
        tmux("kill-server")


def test_with_the_controller_unreachable_job_says_what_scontrol_said(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """--job 1234 while slurmctld cannot be reached (a config whose controller port nobody
    listens on): exit 2 quoting scontrol, not "job 1234 is not running"."""
    import re
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again at once: nobody listens there
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        re.sub(r"^SlurmctldPort=\d+$", f"SlurmctldPort={port}", slurm_cluster.conf.read_text(),
               flags=re.M)
    )
    env = slurm_cluster.env({"SLURM_CONF": str(conf)})
    result = subprocess.run(
        [str(SCRIPT), "--once", "--duration", "1", "--job", "1234"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "scontrol said:" in result.stderr and "Traceback" not in result.stderr
    assert "is not running" not in result.stderr
