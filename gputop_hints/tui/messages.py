"""Messages the sampler and replay threads post to the app (small, typed, immutable payloads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from gputop_hints.model import Snapshot

if TYPE_CHECKING:  # the replay machinery loads every file reader: only when replaying
    from gputop_hints.sampling.replay_player import ReplayBatch
    from gputop_hints.sampling.stacks import StackResult


@dataclass
class SnapshotReady(Message):
    """A tick was sampled; the handler appends it to history and repaints once."""

    snapshot: Snapshot


@dataclass
class SamplingFailed(Message):
    """``source.sample()`` raised; the monitor keeps running and says so."""

    error: str


@dataclass
class ReplayBatchReady(Message):
    """The replay thread read recorded ticks: take them all, then repaint once."""

    batch: ReplayBatch


@dataclass
class StacksReady(Message):
    """A stack sampling (py-spy) finished on the stack thread: hand it to the engine."""

    result: StackResult
