"""gputop-hints: a terminal GPU monitor that says what holds each training process back.

``__version__`` is the one place the version is written (``pyproject.toml`` reads
it from here, ``[tool.hatch.version]``): asking ``importlib.metadata`` for it cost
every command ~25-30 ms and a few MB of resident memory (email, zipfile, csv).

Importing the package routes ``dataclasses``' compilations through
:mod:`gputop_hints._classcache` (each class's generated methods compiled once per
machine, not at every start).
"""

from __future__ import annotations

from gputop_hints import _classcache

__version__ = "0.1.0"

_classcache.install()  # before any module of the package defines a dataclass
