"""A throw-away single-node SLURM cluster for tests: munged, slurmctld, slurmd.

Everything lives in one temporary directory -- munge key and socket,
``slurm.conf``, state and spool directories, logs, pid files -- and the
daemons listen on free ports picked at start, so the cluster neither needs nor
touches ``/etc/slurm``, ``/etc/munge``, systemd or cgroups, and two test runs
on one machine do not collide. It needs Debian's ``slurm-wlm`` and ``munge``
packages and root (``SlurmUser=root``).

Clients find the cluster through ``SLURM_CONF``: use :meth:`SlurmCluster.env`
for every ``sbatch`` / ``srun`` / ``scontrol`` call. By hand::

    python -m tests.support.slurm_cluster    # start, print the env, wait for Ctrl-C, stop
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd")
CLIENTS = ("sinfo", "sbatch", "srun", "scontrol", "scancel", "squeue")


def missing_programs() -> list[str]:
    """SLURM / munge programs not installed here (empty when a cluster can start)."""
    found = []
    for name in (*DAEMONS, *CLIENTS):
        path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
        if path is None:
            found.append(name)
    return found


def unavailable_reason() -> str | None:
    """Why no test cluster can start here, or None when one can."""
    missing = missing_programs()
    if missing:
        return (
            f"SLURM is not installed ({', '.join(missing)} missing): "
            "apt-get install -y slurm-wlm munge"
        )
    if os.geteuid() != 0:
        return "the test SLURM cluster runs its daemons as root (SlurmUser=root)"
    return None


def _sbin(name: str) -> str:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin") or name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _memory_mb() -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return max(256, int(line.split()[1]) // 1024 // 2)
    return 1024


class SlurmError(RuntimeError):
    pass


class SlurmCluster:
    """One node named after this host, ``nproc`` CPUs, partition ``debug``."""

    def __init__(self, base: Path | None = None) -> None:
        self.base = Path(base or tempfile.mkdtemp(prefix="gputop-slurm-"))
        self.node = socket.gethostname().split(".")[0]
        self.cpus = os.cpu_count() or 1
        self.conf = self.base / "slurm.conf"
        self.munge_socket = self.base / "munge" / "munge.socket"
        self._procs: list[subprocess.Popen[bytes]] = []
        self._pid_files: list[Path] = []
        self._owns_base = base is None

    # -- environment for clients -----------------------------------------------------

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """``os.environ`` minus any outer SLURM job, plus this cluster's ``SLURM_CONF``."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))
        }
        env["SLURM_CONF"] = str(self.conf)
        env.update(extra or {})
        return env

    def run(
        self, args: Sequence[str], *, timeout: float = 30, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            list(args),
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise SlurmError(
                f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
            )
        return result

    # -- start / stop ------------------------------------------------------------------

    def start(self, timeout: float = 30) -> None:
        try:
            self._write_files()
            self._start_munge()
            self._spawn([_sbin("slurmctld"), "-D", "-f", str(self.conf)], "slurmctld")
            self._wait_for(["scontrol", "ping"], "UP", timeout, "slurmctld")
            self._spawn([_sbin("slurmd"), "-D", "-f", str(self.conf), "-N", self.node], "slurmd")
            self._wait_for(["sinfo", "-h", "-N", "-o", "%t"], "idle", timeout, "slurmd")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Cancel jobs, stop the daemons we started, remove the directory."""
        if self.conf.exists() and self._procs:
            with contextlib.suppress(Exception):
                self.run(["scancel", "--full", "--user=root"], timeout=5, check=False)
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in reversed(self._procs):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
        self._procs.clear()
        # munged forks itself into the background: stop it by its pid file.
        for pid_file in self._pid_files:
            with contextlib.suppress(OSError, ValueError):
                pid = int(pid_file.read_text().strip())
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    os.kill(pid, 0)
                    time.sleep(0.05)
        self._pid_files.clear()
        if self._owns_base:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> SlurmCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 30) -> str:
        out = []
        for name in ("munged.log", "slurmctld.log", "slurmd.log"):
            path = self.base / "log" / name
            with contextlib.suppress(OSError):
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {name}\n" + "\n".join(text))
        return "\n".join(out)

    # -- pieces ------------------------------------------------------------------------

    def _write_files(self) -> None:
        b = self.base
        for sub in ("munge", "state", "spool", "log", "run"):
            (b / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(b / "munge", 0o700)
        self.conf.write_text(
            f"""\
# Generated by tests/slurm_cluster.py for one test session.
ClusterName=gputoptest
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={b / "state"}
SlurmdSpoolDir={b / "spool"}
SlurmctldPidFile={b / "run" / "slurmctld.pid"}
SlurmdPidFile={b / "run" / "slurmd.pid"}
SlurmctldLogFile={b / "log" / "slurmctld.log"}
SlurmdLogFile={b / "log" / "slurmd.log"}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
PlugStackConfig={b / "plugstack.conf"}
MailProg=/bin/true
InactiveLimit=0
KillWait=2
MinJobAge=60
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={_memory_mb()} State=UNKNOWN
PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
"""
        )
        (b / "plugstack.conf").write_text("")

    def _start_munge(self) -> None:
        m = self.base / "munge"
        key = m / "munge.key"
        subprocess.run(
            [_sbin("mungekey"), "--create", f"--keyfile={key}", "--force"],
            check=True,
            capture_output=True,
            timeout=30,
        )
        os.chmod(key, 0o600)
        pid_file = m / "munged.pid"
        result = subprocess.run(
            [
                _sbin("munged"),
                "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={pid_file}",
                f"--seed-file={m / 'munged.seed'}",
                f"--log-file={self.base / 'log' / 'munged.log'}",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if result.returncode != 0:
            raise SlurmError(f"munged failed to start: {result.stderr.strip()}")
        self._pid_files.append(pid_file)

    def _spawn(self, args: list[str], name: str) -> None:
        log = open(self.base / "log" / f"{name}.stderr", "wb")  # noqa: SIM115
        try:
            proc = subprocess.Popen(
                args,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self._procs.append(proc)

    def _wait_for(self, args: list[str], expect: str, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    raise SlurmError(
                        f"{what}: a daemon exited with {proc.returncode}\n{self.log_tail()}"
                    )
            result = self.run(args, timeout=10, check=False)
            last = result.stdout + result.stderr
            if expect in result.stdout:
                return
            time.sleep(0.2)
        raise SlurmError(f"{what} not ready after {timeout:g} s: {last.strip()}\n{self.log_tail()}")

    # -- jobs --------------------------------------------------------------------------

    def sbatch(self, script: str, *args: str) -> str:
        """Submit ``script`` (text) and return the job id."""
        path = self.base / f"job-{time.monotonic_ns()}.sh"
        path.write_text(script)
        result = self.run(
            ["sbatch", "--parsable", f"--chdir={self.base}", *args, str(path)], timeout=30
        )
        return result.stdout.strip().split(";")[0]

    def wait_running(self, job_id: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            state = self.run(["squeue", "-h", "-j", job_id, "-o", "%T"], check=False).stdout
            if state.strip() == "RUNNING":
                return
            time.sleep(0.2)
        raise SlurmError(f"job {job_id} not running after {timeout:g} s: {state.strip()}")


@contextlib.contextmanager
def cluster() -> Iterator[SlurmCluster]:
    c = SlurmCluster()
    c.start()
    try:
        yield c
    finally:
        c.stop()


if __name__ == "__main__":
    with cluster() as c:
        print(f"export SLURM_CONF={c.conf}")
        print(f"# node {c.node}, {c.cpus} CPUs, logs in {c.base / 'log'}; Ctrl-C to stop")
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
