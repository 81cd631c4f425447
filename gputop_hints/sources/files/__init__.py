"""Logs people already have, as snapshot streams: :func:`open_stream`.

Formats, in the order content sniffing tries them (the file extension is never
trusted; gzip is recognised by its magic bytes and decompressed on the fly) --
:data:`~gputop_hints.sources.files.registry.ALL_FORMATS` is the list itself:

1. ``recording``         -- our own JSON Lines (``gputop-hints record``);
2. ``wandb``             -- W&B ``wandb-events.jsonl`` system metrics;
3. ``nvidia-smi-dmon``   -- ``nvidia-smi dmon`` (any ``-s``, ``-o DT``);
4. ``nvidia-smi-table``  -- plain ``nvidia-smi`` tables appended to a file;
5. ``nvidia-smi-watch``  -- a ``watch nvidia-smi`` terminal capture;
6. ``nvidia-smi-query``  -- ``nvidia-smi -q`` long-query dumps;
7. ``nvidia-smi-pmon``   -- ``nvidia-smi pmon`` per-process rows;
8. ``nvidia-smi-apps``   -- ``nvidia-smi --query-compute-apps`` per-process CSV;
9. ``dcgmi-dmon``        -- DCGM's field monitor, ``dcgmi dmon -e ...``;
10. ``gpustat``          -- ``gpustat --json`` documents or its text lines;
11. ``nvidia-smi-csv``   -- ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``;
12. ``csv``              -- a hand-made CSV whose header names the metrics.

Each reader module ends with a ``SPEC`` (:class:`~.spec.FormatSpec`: how it is
recognised, how it opens, what it can carry); :mod:`.registry` lists them and
opens a file with the first that recognises it; :mod:`.merge` reads a GPU log
and a per-process log of one run together. Files are read lazily, line by line,
so memory stays flat for multi-GB logs. See docs/import.md for what each format
gives and lacks, and for adding one.
"""

from __future__ import annotations

from gputop_hints.sources.files.mapping import MappingError, parse_mapping
from gputop_hints.sources.files.merge import open_streams
from gputop_hints.sources.files.registry import FORMATS, open_stream
from gputop_hints.streams import UnrecognisedFormat

__all__ = [
    "FORMATS",
    "MappingError",
    "UnrecognisedFormat",
    "open_stream",
    "open_streams",
    "parse_mapping",
]
