"""The container, pod or job of a process, read from /proc/PID/cgroup texts in the
shapes the runtimes write (tests/fixtures/cgroup/, provenance in its README), and a
pod's names from the process itself: its environment, its service account's
namespace file. The /proc trees of pods are built in a temporary directory from the
fixtures; the environment of a real child is read from the real /proc."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputop_hints.sources.live.processes import (
    SERVICE_ACCOUNT_NAMESPACE,
    cgroup_container,
    container_of,
    pod_names,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "cgroup"
POD_UID = "5c1e2a7b-90ab-4cde-8f01-23456789abcd"

EXPECTED = {
    "docker-v1-cgroupfs.cgroup": "docker 8a6e3c1f5b2d",
    "docker-v2-systemd.cgroup": "docker 8a6e3c1f5b2d",
    "k8s-v1-cgroupfs-burstable.cgroup": f"pod {POD_UID}",
    "k8s-v2-systemd-containerd.cgroup": f"pod {POD_UID}",
    "k8s-v2-systemd-guaranteed.cgroup": f"pod {POD_UID}",
    "k8s-v2-systemd-crio.cgroup": f"pod {POD_UID}",
    "podman-v2-root.cgroup": "podman 8a6e3c1f5b2d",
    "podman-v2-rootless.cgroup": "podman 8a6e3c1f5b2d",
    "slurm-v1.cgroup": "slurm job 1234",
    "slurm-v2.cgroup": "slurm job 1234",
    "user-session-v2.cgroup": None,
    "service-v2.cgroup": None,
    "cgroup-namespace-v2.cgroup": None,
}


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.cgroup")) == sorted(EXPECTED)


@pytest.mark.parametrize(("name", "container"), sorted(EXPECTED.items()))
def test_the_container_each_runtimes_cgroup_names(name: str, container: str | None) -> None:
    assert container_of((FIXTURES / name).read_text()) == container


def _proc_tree(
    root: Path, cgroup: str, environ: bytes | None, namespace_file: str | None = None
) -> int:
    """A /proc/<pid> with the fixture's cgroup, the given environ and service account."""
    pid = 4242
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "cgroup").write_text((FIXTURES / cgroup).read_text())
    if environ is not None:
        (d / "environ").write_bytes(environ)
    if namespace_file is not None:
        ns = d / "root" / SERVICE_ACCOUNT_NAMESPACE
        ns.parent.mkdir(parents=True)
        ns.write_text(namespace_file)
    return pid


def test_a_pod_is_named_by_its_namespace_and_name_from_the_environment(tmp_path: Path) -> None:
    env = b"PATH=/usr/bin\0HOSTNAME=trainer-7f9c-0\0POD_NAMESPACE=ml-team\0HOME=/root\0"
    pid = _proc_tree(tmp_path, "k8s-v2-systemd-containerd.cgroup", env)
    assert cgroup_container(pid, str(tmp_path)) == "pod ml-team/trainer-7f9c-0"


def test_without_the_downward_api_the_service_accounts_namespace_names_it(
    tmp_path: Path,
) -> None:
    env = b"HOSTNAME=trainer-0\0KUBERNETES_SERVICE_HOST=10.96.0.1\0"
    pid = _proc_tree(tmp_path, "k8s-v1-cgroupfs-burstable.cgroup", env, "research\n")
    assert cgroup_container(pid, str(tmp_path)) == "pod research/trainer-0"


def test_a_pod_whose_process_cannot_be_read_is_named_by_its_uid(tmp_path: Path) -> None:
    pid = _proc_tree(tmp_path, "k8s-v2-systemd-guaranteed.cgroup", None)
    assert cgroup_container(pid, str(tmp_path)) == f"pod {POD_UID}"


def test_a_name_that_is_no_kubernetes_name_is_not_shown(tmp_path: Path) -> None:
    env = b"HOSTNAME=\x1b]0;owned\x07\0POD_NAMESPACE=ml\0"
    pid = _proc_tree(tmp_path, "k8s-v2-systemd-crio.cgroup", env)
    assert cgroup_container(pid, str(tmp_path)) == f"pod {POD_UID}"
    env = b"HOSTNAME=trainer-0\0POD_NAMESPACE=Not_A_Namespace\0"
    other = tmp_path / "other"
    pid = _proc_tree(other, "k8s-v2-systemd-crio.cgroup", env)
    assert cgroup_container(pid, str(other)) == "pod trainer-0"


def test_a_docker_containers_hostname_is_not_taken_for_a_pod(tmp_path: Path) -> None:
    pid = _proc_tree(tmp_path, "docker-v2-systemd.cgroup", b"HOSTNAME=8a6e3c1f5b2d\0")
    assert cgroup_container(pid, str(tmp_path)) == "docker 8a6e3c1f5b2d"


def test_a_variable_past_the_read_bound_is_not_read(tmp_path: Path) -> None:
    env = b"HOSTNAME=trainer-0\0" + b"SERVICE_X=" + b"y" * 20000 + b"\0POD_NAMESPACE=late\0"
    pid = _proc_tree(tmp_path, "k8s-v2-systemd-containerd.cgroup", env)
    assert cgroup_container(pid, str(tmp_path)) == "pod trainer-0"


def test_a_real_processs_environment_gives_the_names() -> None:
    env = {**os.environ, "HOSTNAME": "worker-3", "POD_NAMESPACE": "batch"}
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"],
        env=env,
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"up\n"  # running its own program
        assert pod_names(child.pid) == ("worker-3", "batch")
    finally:
        child.kill()
        child.wait(timeout=5)
        if child.stdout is not None:
            child.stdout.close()
