"""Recordings: the format (:mod:`.format`), the writer (:mod:`.writer`) and the
reader (:mod:`.reader`, with the value checks of :mod:`.values`).

``gputop-hints record`` writes them through :class:`RecordingWriter` (the
record loop is :mod:`gputop_hints.sampling.record`); replay and report read
them through :mod:`.reader`, which the file readers register as the first
format (``sources/files/recording_format.py``). This package sits below the
sources and imports none of them: it depends only on the model and
:mod:`gputop_hints.streams` (the stream shape every reader returns).
The format and its compatibility promise are documented in
``docs/recording.md``. No Textual here.
"""

from __future__ import annotations

from gputop_hints.recording.format import FORMAT, SCHEMA_VERSION
from gputop_hints.recording.writer import RecordingWriter

__all__ = ["FORMAT", "SCHEMA_VERSION", "RecordingWriter"]
