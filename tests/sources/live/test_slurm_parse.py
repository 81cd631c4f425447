"""The pure SLURM parsers: cpuset lists, per-node counts, GPU ids, cgroup
paths and ``scontrol show job`` output."""

from __future__ import annotations

import pytest

from gputop_hints.sources.live.slurm import (
    format_cpu_list,
    job_from_cgroup,
    parse_cpu_list,
    parse_cpus_per_node,
    parse_gpu_ids,
    parse_scontrol_job,
)
from tests.sources.live.helpers import (
    PLAIN_CGROUP,
    V1_CGROUP,
    V2_CGROUP,
)

# -- parsers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cores"),
    [
        ("0-3,8,10-11", (0, 1, 2, 3, 8, 10, 11)),
        ("5", (5,)),
        ("", ()),
        (" 0-1 \n", (0, 1)),
        ("3,1,2-2", (1, 2, 3)),
        ("0-6:2", (0, 2, 4, 6)),
    ],
)
def test_cpu_lists(text: str, cores: tuple[int, ...]) -> None:
    assert parse_cpu_list(text) == cores
    assert parse_cpu_list(format_cpu_list(cores)) == cores


@pytest.mark.parametrize("bad", ["a", "3-1", "1-", "0-3:0", "-1"])
def test_bad_cpu_lists(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_cpu_list(bad)


@pytest.mark.parametrize(
    ("text", "counts"),
    [("8", (8,)), ("2(x3)", (2, 2, 2)), ("72(x2),36", (72, 72, 36)), ("4,4", (4, 4))],
)
def test_cpus_per_node(text: str, counts: tuple[int, ...]) -> None:
    assert parse_cpus_per_node(text) == counts


def test_bad_cpus_per_node() -> None:
    with pytest.raises(ValueError):
        parse_cpus_per_node("2(x)")


def test_gpu_ids() -> None:
    assert parse_gpu_ids("0,1") == (0, 1)
    assert parse_gpu_ids("2-3") == (2, 3)
    assert parse_gpu_ids("gpu:0") is None


def test_scontrol_job_detail_for_this_node() -> None:
    text = (
        "JobId=12 JobName=train UserId=ada(1000) GroupId=ada(1000) JobState=RUNNING "
        "NodeList=n[01-02] NumCPUs=16   Nodes=n01 CPU_IDs=0-7 Mem=0 GRES=gpu:2(IDX:0-1)"
        "   Nodes=n02 CPU_IDs=8-15 Mem=0 GRES=gpu:2(IDX:2,3) MinCPUsNode=1 Features=(null)"
    )
    n02 = parse_scontrol_job(text, "n02")
    assert (n02["JobName"], n02["UserId"], n02["JobState"]) == ("train", "ada(1000)", "RUNNING")
    assert (n02["CPU_IDs"], n02["GRES_IDX"]) == ("8-15", "2,3")
    assert parse_scontrol_job(text, "n01")["CPU_IDs"] == "0-7"
    assert "CPU_IDs" not in parse_scontrol_job(text, "elsewhere")  # two groups: ambiguous


def test_job_named_by_cgroup_paths() -> None:
    assert job_from_cgroup(V1_CGROUP) == ("4242", "0")
    assert job_from_cgroup(V2_CGROUP) == ("4242", "batch")
    assert job_from_cgroup(PLAIN_CGROUP) == (None, None)
    assert job_from_cgroup("0::/job_42x/step_0\n") == (None, None)
