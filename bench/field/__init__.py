"""x"""

from __future__ import annotations

X = 1
