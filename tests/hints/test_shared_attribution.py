"""Per-process verdicts on a shared GPU rest on each process's own evidence (issue 23).

The README's big node (``--demo --gpus 8 --processes 64``) puts the ``num_workers=0``
job (pid 4200) on a GPU with ten light inference replicas. Their kernels fill the
device trace between its bursts; its own part of the buffered samples (the device's
less the replicas' own per-process share) still shows the sawtooth.
"""

from __future__ import annotations

from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.sources.demo.source import DemoSource

STARVED_PID = 4200


def test_the_num_workers_0_job_is_flagged_inline_on_the_big_node() -> None:
    source = DemoSource("mixed", gpus=8, processes=64)
    diagnoser = Diagnoser()
    flagged = 0
    gpu = None
    for _ in range(90):
        snap = source.sample()
        diagnoser.feed(snap)
        [proc] = [p for p in snap.processes if p.pid == STARVED_PID]
        gpu = proc.gpu_index
        assert sum(p.gpu_index == gpu for p in snap.processes) > 5, "the GPU is shared"
        worst = diagnoser.worst_for_process(STARVED_PID, gpu)
        if worst is not None and (worst.rule, worst.subtype) == ("input-starved", "num-workers-0"):
            flagged += 1
    assert gpu is not None
    assert flagged >= 60, f"flagged inline in only {flagged} of 90 ticks"
    worst = diagnoser.worst_for_process(STARVED_PID, gpu)
    assert worst is not None and worst.label == "starved: num_workers=0?"
