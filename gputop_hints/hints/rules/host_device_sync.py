"""host-device-sync: the training loop waits for the GPU on a line of its own code.

``loss.item()``, ``.cpu()``, ``.tolist()``, ``.numpy()`` or ``torch.cuda.synchronize()``
make the host wait until every kernel queued before it has finished (CUDA's stream
semantics: a device-to-host copy into pageable memory is synchronous). Once a step,
that drains the queue: the GPU then idles while the host launches the next step's
first kernels, and the host cannot run ahead to hide its own latency (PyTorch
performance tuning guide, "Avoid unnecessary CPU-GPU synchronization"). Only the
process's own stack shows it (issue 45): the rule reads a py-spy reading of the main
thread (:mod:`gputop_hints.stacks`) and names the line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Scope, Severity, Subject
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import Window
from gputop_hints.model import METRIC_PROCESSES

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "host-device-sync"


@dataclass(frozen=True)
class HostDeviceSync:
    """host-device-sync's thresholds: the ``host_device_sync:`` section of defaults.yaml."""

    share_above: float = field(
        metadata=threshold(0, 1, "", "main-thread samples blocked on a sync, at least this share")
    )
    min_samples: float = field(
        metadata=threshold(1, 1000, "", "... of at least this many main-thread samples")
    )
    busy_sm_above_percent: float = field(
        metadata=threshold(0, 100, "%", "with the GPU above this SM %, info: it does not idle")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """A process whose main thread spends a share of its samples blocked on a sync."""
    c = t.host_device_sync
    out: list[Finding] = []
    for proc in win.processes():
        reading = win.stack_reading(proc)
        if reading is None or reading.samples < c.min_samples:
            continue
        category = reading.category("host-device-sync")
        if category is None or category.share < c.share_above:
            continue
        line = category.top_frames[0].frame if category.top_frames else None
        where = line.where() if line is not None else "its own code"
        sm = win.process_sm_mean(proc)
        if sm is None:
            sm = win.gpu_sm_mean(proc.gpu_index)
        busy = sm is not None and sm >= c.busy_sm_above_percent
        share = category.share * 100
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.INFO if busy else Severity.WARNING,
                label="syncs with the GPU",
                summary=(
                    f"Its main thread waited for the GPU in {share:.0f} % of "
                    f"{reading.samples} stack samples, at {where}: each such call "
                    "(.item(), .cpu(), .tolist(), synchronize) blocks until every queued "
                    "kernel has finished, so the host cannot queue the next step while the "
                    "GPU works"
                    + (
                        " -- the GPU stays busy, so it costs little now."
                        if busy
                        else " and the GPU idles while the next step is launched."
                    )
                ),
                advice=(
                    f"At {where}: keep the value on the GPU and read it every N steps "
                    "(accumulate the loss in a tensor, log every 50 steps), or drop the call.",
                    "Copies to the host that must stay: pin the target and use "
                    ".to('cpu', non_blocking=True), reading it only after an event.",
                ),
                evidence=(
                    Evidence(
                        "main thread blocked on a sync (py-spy)",
                        share,
                        f">= {c.share_above * 100:g}",
                        "%",
                        Scope.PROCESS,
                    ),
                    Evidence("SM % (mean)", sm, f"< {c.busy_sm_above_percent:g} warns", "%"),
                ),
                evidence_scope=Scope.PROCESS,
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=HostDeviceSync,
    title="Host-device sync in the loop",
    sentence=(
        "The process's own stack shows its main thread blocked on .item(), .cpu() or a "
        "synchronize for a share of its time: the line is named; a warning while its GPU "
        "is not kept busy."
    ),
    subject="process",
    needs=(METRIC_PROCESSES,),
)
