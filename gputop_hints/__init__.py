"""gputop-hints: a terminal GPU monitor that says what holds each training process back.

``__version__`` is looked up on first use (``importlib.metadata`` and what it
imports -- email, zipfile, csv -- cost the monitor's start-up ~25 ms and a few
MB of resident memory it never needs otherwise).
"""

from __future__ import annotations

_version: str | None = None


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    global _version
    if _version is None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            _version = version("gputop-hints")
        except PackageNotFoundError:  # running from a source tree that was never installed
            _version = "0.0.0+unknown"
    return _version
