"""Our own recording as a :class:`~.spec.FormatSpec`, first in detection order.

The recording's format, writer and reader all live in :mod:`gputop_hints.recording`
(below the sources); this module only registers it with the readers of
``report`` and ``replay``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gputop_hints.recording.format import FORMAT as FORMAT_TAG
from gputop_hints.recording.reader import looks_like_recording, open_recording
from gputop_hints.sources.files._text import Head
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import ALL_METRICS, SnapshotStream

FORMAT = "recording"
LABEL = "recording"


def sniff(head: Head, mapping: Mapping[str, str] | None) -> Head | str:
    """The head itself as the plan when it is a recording, else why not."""
    with open(head.path, "rb") as f:
        first = f.read(4096)
    if looks_like_recording(first):
        return head
    if head.gzipped and head.lines and looks_like_recording(head.lines[0].encode()):
        return head  # xz or bzip2, unpacked by the head
    return f'first line is not a {{"format": "{FORMAT_TAG}"}} header'


def open_recording_file(
    path: Path, plan: Head, interval_s: float | None, mapping: Mapping[str, str] | None
) -> SnapshotStream:
    """The recording's stream; its header says the interval, so ``interval_s`` and
    ``mapping`` are not used."""
    return open_recording(path)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_recording_file,
    metrics=frozenset(ALL_METRICS),
    docs="gputop-hints recordings",
)
