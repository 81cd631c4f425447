"""``--demo ghost-memory`` through the whole pipeline, as ``--once`` prints it and as
``--list-scenarios`` lists it."""

from __future__ import annotations

from tests.cli.test_cli import run


def test_once_shows_the_unaccounted_gpu_and_the_zombie_with_the_way_back() -> None:
    result = run("--demo", "ghost-memory", "--once")
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())  # as read, not as wrapped
    gpu0 = out[out.index("GPU 0 ") : out.index("GPU 1 ")]
    assert "[!] 31G unaccounted" in gpu0
    assert "0 listed processes hold 0.0 GiB: 30.5 GiB is held by nothing listed" in gpu0
    assert "fuser -v /dev/nvidia*" in gpu0
    assert "[!] pid 4000 on GPU 1: defunct, holds 22G" in out
    assert "its parent 3900 (python) has not reaped it" in out
    assert "kill -CHLD 3900" in out
    # the next trial beside the zombie trains, and nothing else is said about GPU 1
    gpu1 = out[out.index("GPU 1 ") : out.index(" CPU ")]
    assert "[!]" not in gpu1


def test_list_scenarios_names_it() -> None:
    result = run("--list-scenarios")
    assert result.returncode == 0, result.stderr
    [line] = [ln for ln in result.stdout.splitlines() if ln.split()[:1] == ["ghost-memory"]]
    assert "no process listed" in line and "zombie" in line
