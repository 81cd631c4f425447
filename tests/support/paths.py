"""Where the tests find the repository, their fixtures and the shared real-world traces."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository root (holds pyproject.toml, themes/, docs/)."""

FIXTURES = REPO / "tests" / "fixtures"
"""Small hand-made inputs, one folder per kind (``import/`` for log files)."""

TRACES = REPO.parent / "shared" / "traces"
"""Real logs recorded by other people, beside the checkout (see its README)."""
