"""Our own recording as a :class:`~.spec.FormatSpec`, first in detection order.

The reading is :mod:`.recording`'s, which needs :mod:`gputop_hints.recording`;
it is imported only when a file is sniffed or opened, so an installation
without that package still recognises a recording (by its header line) and
says why it cannot read it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from gputop_hints.sources.files._text import Head
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.sources.files.stream import ALL_METRICS, SnapshotStream, UnrecognisedFormat

FORMAT = "recording"
LABEL = "recording"
FORMAT_TAG = "gputop-hints-recording"


def _why_not(head: Head) -> str | None:
    """None when the head is our recording, else why not.

    Asks :func:`gputop_hints.sources.files.recording.looks_like_recording` when
    it can be imported; checks the header line itself otherwise."""
    try:
        from gputop_hints.sources.files.recording import looks_like_recording
    except ImportError:
        pass
    else:
        with open(head.path, "rb") as f:
            first = f.read(4096)
        if looks_like_recording(first):
            return None
        return f'first line is not a {{"format": "{FORMAT_TAG}"}} header'
    lines = head.nonblank
    if not lines:
        return "empty file"
    try:
        first_line = json.loads(lines[0])
    except (ValueError, RecursionError):
        return "first line is not JSON"
    if not isinstance(first_line, dict) or first_line.get("format") != FORMAT_TAG:
        return f'first line is not a {{"format": "{FORMAT_TAG}"}} header'
    return None


def sniff(head: Head, mapping: Mapping[str, str] | None) -> Head | str:
    """The head itself as the plan when it is a recording, else why not."""
    why = _why_not(head)
    return head if why is None else why


def open_recording_file(
    path: Path, plan: Head, interval_s: float | None, mapping: Mapping[str, str] | None
) -> SnapshotStream:
    """The recording's stream; its header says the interval, so ``interval_s`` and
    ``mapping`` are not used."""
    try:
        from gputop_hints.sources.files.recording import open_recording
    except ImportError as exc:
        raise UnrecognisedFormat(
            f"{path}: a gputop-hints recording, but this installation cannot read "
            f"recordings (gputop_hints.recording is missing: {exc})"
        ) from exc
    return open_recording(path)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_recording_file,
    metrics=frozenset(ALL_METRICS),
    docs="gputop-hints recordings",
)
