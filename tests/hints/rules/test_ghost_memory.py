"""ghost-memory: device memory that the listed processes do not account for, a listed
pid with no such process, a zombie holding memory (issue 48)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gputop_hints.hints.findings import Severity, Subject
from gputop_hints.hints.rules import ghost_memory
from gputop_hints.history import History
from gputop_hints.model import GpuProcess
from tests.hints.windows import (
    GIB,
    PID,
    Case,
    Expect,
    G,
    P,
    Run,
    Tick,
    apply,
    case,
    check_case,
    snapshot,
)

RULE = ghost_memory.SPEC
TICKS = 10


def ticks(
    used_gib: float,
    procs: tuple[P, ...] = (P(vram_gib=10.0),),
    *,
    nested: bool | None = False,
    source: str = "live",
    edit: dict[int, dict[str, Any]] | None = None,
) -> History:
    """``TICKS`` one-second ticks of GPU 0 with ``used_gib`` in use and ``procs`` listed;
    ``edit`` replaces fields of the process rows by pid (state, parent, an unseen row),
    ``nested`` whether the monitor runs in a PID namespace of its own."""
    run = Run(1.0)
    for _ in range(TICKS):
        snap = snapshot(Tick((G(vram_gib=used_gib),), procs, source=source), run.t, 1.0)
        rows: list[GpuProcess] = [replace(p, **(edit or {}).get(p.pid, {})) for p in snap.processes]
        run.history.append(replace(snap, processes=tuple(rows), pid_namespace_nested=nested))
        run.t += 1.0
    return run.history


UNSEEN: dict[str, Any] = {
    "name": None,
    "command": "",
    "create_time": None,
    "state": None,
    "user": None,
}
ZOMBIE: dict[str, Any] = {
    "state": "Z",
    "parent_pid": 321,
    "parent_name": "bash",
    "parent_state": "S",
}

CASES: list[Case] = [
    case(
        "ghost-memory/30-gib-used-no-process-listed",
        lambda: ticks(30.4, ()),
        Expect(Subject(0), Severity.WARNING, "unlisted", {"VRAM unaccounted": 30.4 * GIB}),
    ),
    case(
        "ghost-memory/in-a-container",
        lambda: ticks(30.4, (), nested=True),
        Expect(Subject(0), Severity.WARNING, "other-namespace", {"VRAM unaccounted": 30.4 * GIB}),
    ),
    case(
        "ghost-memory/a-listed-process-plus-ghost",
        lambda: ticks(22.0, (P(vram_gib=10.0),)),
        Expect(Subject(0), Severity.WARNING, "unlisted", {"VRAM of listed processes": 10 * GIB}),
    ),
    case(
        "ghost-memory/mps-server",
        lambda: ticks(12.0, (P(vram_gib=2.0),), edit={PID: {"name": "nvidia-cuda-mps-server"}}),
        Expect(Subject(0), Severity.INFO, "mps"),
    ),
    # the driver's reservation only (a few hundred MiB): quiet
    case("ghost-memory/driver-reservation-only", lambda: ticks(0.4, ()), None),
    case("ghost-memory/near-miss-one-gib", lambda: ticks(11.0, (P(vram_gib=10.0),)), None),
    case("ghost-memory/processes-account-for-it", lambda: ticks(30.3, (P(vram_gib=30.0),)), None),
    case(
        "ghost-memory/zombie-holding-memory",
        lambda: ticks(10.2, (P(vram_gib=10.0),), edit={PID: ZOMBIE}),
        Expect(Subject(0, PID), Severity.WARNING, "defunct", {"parent pid": 321}),
    ),
    case(
        "ghost-memory/listed-pid-in-another-namespace",
        lambda: ticks(10.2, (P(vram_gib=10.0),), nested=True, edit={PID: UNSEEN}),
        Expect(Subject(0, PID), Severity.INFO, "other-namespace"),
    ),
    case(
        "ghost-memory/listed-pid-gone",
        lambda: ticks(10.2, (P(vram_gib=10.0),), edit={PID: UNSEEN}),
        Expect(Subject(0, PID), Severity.WARNING, "exited"),
    ),
    # report: a log with per-process rows whose used memory is far above their sum
    case(
        "ghost-memory/log-with-process-rows",
        lambda: ticks(40.0, (P(vram_gib=10.0),), nested=None, source="replay"),
        Expect(Subject(0), Severity.WARNING, "unlisted"),
    ),
    # a log without process rows cannot account for anything: idle-holding-vram's
    case("ghost-memory/log-without-process-rows", lambda: ticks(40.0, (), source="replay"), None),
]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_rule_table(c: Case) -> None:
    check_case(RULE, c)


def test_the_zombie_finding_names_the_parent_and_the_fuser_line() -> None:
    (f,) = apply(RULE, ticks(10.2, (P(vram_gib=10.0),), edit={PID: ZOMBIE}))
    assert "321 (bash)" in f.summary
    assert "kill -CHLD 321" in f.advice[0]
    assert "fuser -v /dev/nvidia*" in f.advice[1]


def test_the_container_finding_says_how_to_see_them() -> None:
    (f,) = apply(RULE, ticks(30.4, (), nested=True))
    assert "--pid=host" in f.summary + " ".join(f.advice)
