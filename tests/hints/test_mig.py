"""MIG (issue 16): on a MIG instance NVML gives no per-process SM % and no device-wide
SM %; the evidence says so, and no SM-based verdict is invented from nothing."""

from __future__ import annotations

import dataclasses

from gputop_hints.hints.findings import Scope
from gputop_hints.hints.rules.shared import sm_evidence
from gputop_hints.history import History
from gputop_hints.model import MigInstance
from tests.hints.windows import (
    GIB,
    PID,
    T0,
    THRESHOLDS,
    G,
    P,
    Tick,
    cycle,
    shown,
    snapshot,
    window,
)

SM_RULES = {"input-starved", "small-batch", "idle-holding-vram", "low-utilization"}


def mig_history(ticks: int = 12) -> History:
    """A process on a 3g.40gb instance of a GPU in MIG mode: no SM % anywhere, as NVML
    reports it, for long enough that any rule would have judged."""
    history = History(window_s=120.0, interval_s=1.0)
    instance = MigInstance(1, 0, "3g.40gb", 12 * GIB, 40 * GIB)
    for i, _ in enumerate(cycle([0.0], ticks)):
        snap = snapshot(Tick((G(sm=None, mem=None),), (P(sm=None, cpu=99.0),)), T0 + i, 1.0)
        gpus = tuple(
            dataclasses.replace(g, mig_mode=True, mig_instances=(instance,)) for g in snap.gpus
        )
        procs = tuple(dataclasses.replace(p, mig_instance=instance.key) for p in snap.processes)
        history.append(dataclasses.replace(snap, gpus=gpus, processes=procs))
    return history


def test_the_sm_note_says_mig_and_no_sm_verdict_is_made() -> None:
    history = mig_history()
    win = window(history)
    [proc] = [p for p in win.processes() if p.pid == PID]
    sm, scope, notes = sm_evidence(win, proc, THRESHOLDS)
    assert sm is None and scope is Scope.DEVICE
    [note] = notes
    assert "MIG instance" in note.metric and "nor the whole GPU's" in note.metric
    assert not {f.rule for f in shown(history)} & SM_RULES
