"""Recordings: the format (:mod:`.format`) and the writer (:mod:`.writer`).

``gputop-hints record`` writes them through :class:`RecordingWriter` (the
record loop is :mod:`gputop_hints.sampling.record`); replay and report read
them through :mod:`gputop_hints.sources.files.recording`. This package sits
below the sources and imports none of them: it depends only on the model.
The format and its compatibility promise are documented in
``docs/recording.md``. No Textual here.
"""

from __future__ import annotations

from gputop_hints.recording.format import FORMAT, SCHEMA_VERSION
from gputop_hints.recording.writer import RecordingWriter

__all__ = ["FORMAT", "SCHEMA_VERSION", "RecordingWriter"]
