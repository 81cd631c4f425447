"""gputop-hints: a terminal GPU monitor that says what holds each training process back.

``__version__`` is the one place the version is written (``pyproject.toml`` reads
it from here, ``[tool.hatch.version]``): asking ``importlib.metadata`` for it cost
every command ~25-30 ms and a few MB of resident memory (email, zipfile, csv).
"""

from __future__ import annotations

__version__ = "0.1.0"
