"""Where snapshots come from.

A source turns the world (NVML + psutil, a simulator, later a recording) into
:class:`~gputop_hints.model.Snapshot` objects. Sources know nothing of views and
never import Textual.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from gputop_hints.model import Snapshot


@runtime_checkable
class Source(Protocol):
    """What the sampler and the views need from a source of snapshots."""

    kind: str
    """"live" or "demo" (later "replay")."""

    simulated: bool
    """True when time is simulated: one ``sample()`` advances the clock by one
    interval, so non-interactive runs need not sleep between samples."""

    def sample(self) -> Snapshot:
        """Take one tick. Must not raise for per-GPU or per-process failures:
        what is unknown becomes None and the tick still completes."""
        ...

    def close(self) -> None:
        """Release what the source holds (NVML handles, child processes)."""
        ...


class SourceUnavailable(RuntimeError):
    """Raised when a source cannot start at all (e.g. ``--require-gpu`` without NVML)."""
