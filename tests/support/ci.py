"""Whether the tests run in CI, where a missing tool (tmux, SLURM) is a failure, not a skip."""

from __future__ import annotations

import os

IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")
"""``CI`` set to a true value, in any of the spellings CI services use."""
