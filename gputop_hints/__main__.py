"""``python -m gputop_hints`` -- the same as the ``gputop-hints`` console script."""

from __future__ import annotations

import sys

from gputop_hints.cli import main

sys.exit(main())
