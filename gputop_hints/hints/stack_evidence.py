"""A process's own stack as evidence for the findings about it (issue 45).

The rules decide from device and host metrics; a stack reading (py-spy,
:mod:`gputop_hints.stacks`) taken while the process is warned on says where its main
thread actually spent the time. For the rules whose cause a stack can show, it is
added to the finding as one more evidence row -- *met* when the stack agrees with the
finding (the cause is then confirmed, not just most likely), shown for context when it
does not -- and, where it names code, as the first advice line (the frame to look at).
The findings' conditions are unchanged: without a reading every rule reads as before.
docs/hints.md, "Stacks as evidence", lists the pairs and why.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope

if TYPE_CHECKING:  # the stack readings' package: imported only where one is read
    from gputop_hints.stacks import StackReading

CONFIRMS = 0.5
"""A category holding at least half the main thread's samples is where it spends its
time: the finding's cause is confirmed. Below, the row is context."""

AGREES: dict[str, tuple[str, ...]] = {
    "input-starved": ("waiting-for-batch", "loading-in-main"),
    "small-batch": ("python-launch", "loading-in-main"),
    "pcie-thrash": ("copying-to-gpu",),
    "straggler": ("collective-wait",),
    "collective-hang": ("collective-wait",),
    "idle-holding-vram": ("collective-wait",),
    "low-utilization": ("waiting-for-batch", "loading-in-main", "host-device-sync"),
    "warm-up": ("compiling", "loading-in-main"),
}
"""Rule -> the categories of the main thread's samples that show its cause: a starved
GPU's host waits for batches (workers) or builds them (num_workers=0); a launch-bound
step issues small kernels from Python; a rank waits in a collective on its peers; a
link busy with pageable copies keeps the host staging them (``.to(device)``)."""


def with_stack_evidence(finding: Finding, reading: StackReading) -> Finding:
    """``finding`` with what ``reading`` says of its cause, if it speaks to it."""
    from gputop_hints.stacks import WORDS  # loaded already: ``reading`` came from it

    wanted = AGREES.get(finding.rule)
    if wanted is None or not reading.samples or not reading.categories:
        return finding
    top = reading.categories[0]
    agreeing = [c for c in reading.categories if c.name in wanted]
    shown = max(agreeing, key=lambda c: c.share) if agreeing else top
    confirmed = shown.name in wanted and shown.share >= CONFIRMS
    frame = shown.top_frames[0].frame.where() if shown.top_frames else ""
    metric = f"main thread {WORDS.get(shown.name, shown.name)} (py-spy, {reading.samples} samples)"
    if frame:
        metric += f" at {frame}"
    if shown.name in wanted:
        threshold = f">= {CONFIRMS * 100:g} confirms"
    else:  # the stack is elsewhere: say what would have confirmed it, not that this does
        threshold = "confirms at >= {:g} in {}".format(
            CONFIRMS * 100, " or ".join(WORDS.get(w, w) for w in wanted)
        )
    row = Evidence(
        metric,
        shown.share * 100,
        threshold,
        "%",
        Scope.PROCESS,
        met=True if confirmed else None,
    )
    advice = finding.advice
    if confirmed and frame:
        advice = (f"Its stack: {shown.share * 100:.0f} % of the time at {frame}.", *advice)
    workers = [w for w in reading.workers if w.top_frames]
    if confirmed and workers and shown.name == "waiting-for-batch":
        w = workers[0]
        advice = (
            *advice[:1],
            f"Its workers spend their busy time in {w.top_frames[0].frame.where()}: the "
            "transform to make cheaper, or to give more workers.",
            *advice[1:],
        )
    return dataclasses.replace(finding, evidence=(*finding.evidence, row), advice=advice)
