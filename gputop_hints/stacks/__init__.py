"""Where a GPU process's Python spends its time, read from its own stacks (issue 45).

py-spy dumps the stacks of a running Python process from outside it; this package
runs it a few times a second for a few seconds against a training process's main
thread and its DataLoader workers (:mod:`.sampler`), and reads the samples by where
the main thread spends them (:mod:`.classify`): waiting for the next batch, loading
it itself, syncing with the device, waiting on a collective, launching work from
Python, or elsewhere. When py-spy is missing or refused, the reason says plainly
what would allow it (:mod:`.finding`, :mod:`.permissions`). It reads processes and
decides nothing about hints: the rules read its :class:`~.classify.StackReading`.
"""

from __future__ import annotations

from gputop_hints.stacks.classify import (
    CATEGORIES,
    WORDS,
    Category,
    FrameCount,
    StackReading,
    WorkerReading,
    classify,
)
from gputop_hints.stacks.finding import INSTALL_REASON, PySpy, find_py_spy
from gputop_hints.stacks.permissions import PtraceEnv, refusal_reason
from gputop_hints.stacks.sampler import Frame, ProcessSamples, StackSamples, ThreadStack, sample

__all__ = [
    "CATEGORIES",
    "INSTALL_REASON",
    "WORDS",
    "Category",
    "Frame",
    "FrameCount",
    "ProcessSamples",
    "PtraceEnv",
    "PySpy",
    "StackReading",
    "StackSamples",
    "ThreadStack",
    "WorkerReading",
    "classify",
    "find_py_spy",
    "refusal_reason",
    "sample",
]
